"""Strategies of the ``storage.k8s.io`` group, and the base every storage kind's strategy shares."""
