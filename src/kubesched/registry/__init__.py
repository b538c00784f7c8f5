"""The API server's registry, as upstream's ``pkg/registry``: one strategy per served kind (its
defaults, update rules, validation, table columns and discovery entry), the table listing them, and
the admission chain every created object passes, in ``serve`` and in the simulator alike."""
