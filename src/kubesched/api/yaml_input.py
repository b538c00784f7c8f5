"""YAML reading with a bound on alias expansion.

PyYAML builds an alias as a shared reference, so a few hundred bytes of nested anchors (a "billion
laughs") load quickly but stand for billions of nodes: whatever walks the result later (validation,
JSON encoding, copying) runs for minutes and takes gigabytes. Like the Go YAML decoder the API server
uses, which refuses "excessive aliasing", every loader here counts the nodes a document stands for
once its aliases are expanded and refuses a document that aliases expand beyond
:data:`MAX_EXPANDED_NODES`. Recursive aliases (an anchor used inside itself) are refused too, and so
is nesting deeper than the parser's recursion can follow, with an error rather than a traceback.
"""

from __future__ import annotations

import sys
from typing import Any, Final

import yaml

__all__ = [
    "MAX_EXPANDED_NODES",
    "MAX_NESTING",
    "BoundedSafeLoader",
    "ExcessiveAliasing",
    "ManifestLoader",
    "safe_load",
    "safe_load_all",
    "yaml_nesting_problem",
]

#: Nodes a document may stand for once aliases are expanded, beyond the nodes it spells out.
MAX_EXPANDED_NODES: Final = 1_000_000


class ExcessiveAliasing(yaml.YAMLError):
    """A document whose aliases expand beyond the bound or refer to themselves, or that nests deeper
    than the parser can follow."""

    def __init__(self, problem: str, mark: yaml.Mark | None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


def _expanded_size(root: yaml.Node) -> tuple[int, int]:
    """``(expanded, written)``: nodes the document stands for with aliases expanded, and distinct
    nodes it spells out. Stops counting once ``expanded`` passes the bound."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    # Iterative post-order walk: documents may nest deeper than Python's recursion limit.
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            total = 1
            for child in _children(node):
                total += sizes[id(child)]
            sizes[key] = min(total, MAX_EXPANDED_NODES + 1)
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise ExcessiveAliasing("an alias refers to the node that contains it", node.start_mark)
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            child_key = id(child)
            if child_key in on_path:
                raise ExcessiveAliasing("an alias refers to the node that contains it", child.start_mark)
            if child_key not in sizes:
                stack.append((child, False))
    return sizes[id(root)], len(sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


class BoundedSafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses documents whose aliases expand beyond the bound."""

    def get_node(self) -> Any:
        try:
            return self._checked(super().get_node())
        except RecursionError:
            raise ExcessiveAliasing("nested too deeply", None) from None

    def get_single_node(self) -> Any:
        try:
            return self._checked(super().get_single_node())
        except RecursionError:
            raise ExcessiveAliasing("nested too deeply", None) from None

    def construct_document(self, node: Any) -> Any:
        try:
            return super().construct_document(node)
        except RecursionError:
            raise ExcessiveAliasing("nested too deeply", None) from None

    @staticmethod
    def _checked(node: yaml.Node | None) -> yaml.Node | None:
        if node is None:
            return None
        expanded, written = _expanded_size(node)
        if expanded > written and expanded > MAX_EXPANDED_NODES:
            raise ExcessiveAliasing(
                f"excessive aliasing: aliases expand the document beyond {MAX_EXPANDED_NODES} nodes",
                node.start_mark,
            )
        return node


def _interned_str(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    # Manifests repeat the same keys and many of the same values (apiVersion, kind, quantities,
    # images, namespaces) in every object: one shared string each keeps a large cluster small.
    return sys.intern(loader.construct_scalar(node))


#: libyaml's parser where PyYAML was built with it (several times faster on large manifests).
_FastSafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ManifestLoader(_FastSafeLoader):  # type: ignore[misc,valid-type]
    """The loader of manifest files: libyaml's parser when present, the same alias bound, and keys
    and values shared between objects."""

    def get_node(self) -> Any:
        try:
            return BoundedSafeLoader._checked(_FastSafeLoader.get_node(self))
        except RecursionError:
            raise ExcessiveAliasing("nested too deeply", None) from None

    def get_single_node(self) -> Any:
        try:
            return BoundedSafeLoader._checked(_FastSafeLoader.get_single_node(self))
        except RecursionError:
            raise ExcessiveAliasing("nested too deeply", None) from None

    def construct_document(self, node: Any) -> Any:
        try:
            return super().construct_document(node)
        except RecursionError:
            raise ExcessiveAliasing("nested too deeply", None) from None


ManifestLoader.add_constructor("tag:yaml.org,2002:str", _interned_str)


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` with the alias bound."""
    return yaml.load(text, Loader=BoundedSafeLoader)


def safe_load_all(text: str) -> list[Any]:
    """Every document of ``yaml.safe_load_all``, with the alias bound (manifests: see
    :class:`ManifestLoader`)."""
    return list(yaml.load_all(text, Loader=ManifestLoader))


#: How deep a configuration document may nest (upstream's decoder stops at a similar depth); a
#: deeper one is rejected where it gets too deep instead of exhausting the parser's stack.
MAX_NESTING: Final = 100


def yaml_nesting_problem(text: str, limit: int = MAX_NESTING) -> str | None:
    """Why *text* nests too deeply to be loaded (with the line and column where it does), or None.

    PyYAML builds documents recursively, so a deep enough document would end in a RecursionError;
    its event parser is not recursive, so the depth is measured on the events first.
    """
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > limit:
                mark = event.start_mark
                at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
                return f"nested more than {limit} levels deep{at}; a configuration is never that deep"
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return None
