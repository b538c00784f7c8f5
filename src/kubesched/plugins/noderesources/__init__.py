"""NodeResources plugins."""
