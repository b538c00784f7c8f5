"""Strategies of the core (``v1``) group."""
