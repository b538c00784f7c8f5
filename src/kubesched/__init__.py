"""kubesched: a Kubernetes scheduler in Python."""

__version__ = "0.1.0"
