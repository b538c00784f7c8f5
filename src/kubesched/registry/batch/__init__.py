"""Strategies of the ``batch`` group."""
