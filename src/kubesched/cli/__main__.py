"""``python -m kubesched.cli``: the ``kubesched`` command."""

from kubesched.cli import entry

entry()
