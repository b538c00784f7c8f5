"""Strategies of the ``policy`` group."""
