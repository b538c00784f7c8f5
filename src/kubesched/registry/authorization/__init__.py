"""Strategies of the ``authorization.k8s.io`` group."""
