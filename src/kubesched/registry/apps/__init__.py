"""Strategies of the ``apps`` group."""
