"""Strategies of Volcano's ``scheduling.volcano.sh`` group."""
