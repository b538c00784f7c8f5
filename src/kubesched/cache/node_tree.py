"""Zone-interleaved node order, as upstream's ``nodeTree``.

Nodes are grouped by zone key (region + zone); zones keep the order in which they first appeared and
nodes keep their insertion order inside a zone. Listing takes one node from each zone in turn, so
that the first nodes a filter pass looks at are spread over zones.
"""

from __future__ import annotations


class NodeTree:
    def __init__(self) -> None:
        self._zones: list[str] = []
        self._tree: dict[str, list[str]] = {}
        self._zone_of: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self._zone_of)

    def add(self, name: str, zone: str) -> None:
        if name in self._zone_of:
            if self._zone_of[name] == zone:
                return
            self.remove(name)
        if zone not in self._tree:
            self._zones.append(zone)
            self._tree[zone] = []
        self._tree[zone].append(name)
        self._zone_of[name] = zone

    def remove(self, name: str) -> None:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        members = self._tree[zone]
        members.remove(name)
        if not members:
            del self._tree[zone]
            self._zones.remove(zone)

    def update(self, name: str, zone: str) -> None:
        self.add(name, zone)

    def list(self) -> list[str]:
        """Round-robin over zones: the i-th node of every zone before any zone's (i+1)-th."""
        out: list[str] = []
        lists = [self._tree[z] for z in self._zones]
        depth = max((len(m) for m in lists), default=0)
        for i in range(depth):
            for members in lists:
                if i < len(members):
                    out.append(members[i])
        return out
