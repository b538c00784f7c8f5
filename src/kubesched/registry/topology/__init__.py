"""Strategies of Volcano's ``topology.volcano.sh`` group."""
