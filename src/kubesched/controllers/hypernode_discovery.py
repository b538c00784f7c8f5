"""HyperNode discovery from node labels (Volcano's hypernode controller, ``discovery/label``).

The configuration is Volcano's: the ConfigMap ``volcano-system/volcano-controller-configmap``, key
``volcano-controller.conf``, whose ``networkTopologyDiscovery`` list may hold an enabled entry with
``source: label``::

    networkTopologyDiscovery:
    - source: label
      enabled: true
      config:
        networkTopologyTypes:
          fabric:                      # at most 20 characters
          - nodeLabel: example.com/spine
          - nodeLabel: example.com/leaf
          - nodeLabel: kubernetes.io/hostname

Labels run from the top tier down to the node's own (the last one, which names no HyperNode). For
each type, a node with ``example.com/leaf=l1`` joins the tier-1 HyperNode of that value, which joins
the tier-2 HyperNode of its ``example.com/spine`` value; a node lacking a label stops there. A
generated HyperNode carries ``volcano.sh/network-topology-source: label`` and the label it stands
for, is named ``hypernode-<type>-tier<n>-<suffix>`` and keeps its name while it exists. HyperNodes
of this source that no longer stand for any label value are deleted. A type with a repeated label
or a name over 20 characters is ignored, as Volcano does.

Difference: Volcano's suffix is random; here it is derived from the label, so that a simulation
gives the same names each time.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Mapping
from typing import Any

import yaml

from kubesched.api.topology import HyperNode
from kubesched.errors import InputError
from kubesched.store.base import AlreadyExists, Conflict, EventType, NotFound
from kubesched.store.informers import Change, InformerFactory
from kubesched.store.sqlite import SqliteStore

log = logging.getLogger(__name__)

CONFIG_NAMESPACE = "volcano-system"
CONFIG_NAME = "volcano-controller-configmap"
CONFIG_KEY = "volcano-controller.conf"
SOURCE_LABEL = "volcano.sh/network-topology-source"
SOURCE = "label"
MAX_TYPE_LENGTH = 20


def topology_types(conf_text: str) -> dict[str, list[str]]:
    """Type name → node label keys from the lowest tier up (the node's own label left out)."""
    try:
        conf = yaml.safe_load(conf_text) or {}
    except yaml.YAMLError:
        return {}
    out: dict[str, list[str]] = {}
    entries = conf.get("networkTopologyDiscovery") if isinstance(conf, Mapping) else None
    for entry in entries if isinstance(entries, list) else []:
        if (
            not isinstance(entry, Mapping)
            or entry.get("source") != SOURCE
            or entry.get("enabled") is not True
        ):
            continue
        config = entry.get("config") or {}
        types = config.get("networkTopologyTypes") if isinstance(config, Mapping) else None
        for name, labels in (types or {}).items() if isinstance(types, Mapping) else []:
            if len(str(name)) > MAX_TYPE_LENGTH or not isinstance(labels, list):
                continue
            keys = [str(item.get("nodeLabel")) for item in labels if isinstance(item, Mapping)]
            if len(set(keys)) != len(keys):
                continue  # repeated labels
            out[str(name)] = list(reversed(keys[:-1]))
    return out


def _clean(name: str) -> str:
    return "".join(c.lower() if c.isalpha() else c if c.isdigit() or c in ".-" else "-" for c in name)


def _suffix(key: str, value: str) -> str:
    return hashlib.sha256(f"{key}={value}".encode()).hexdigest()[:5]


def desired_hyper_nodes(
    types: Mapping[str, list[str]],
    nodes: Mapping[str, Mapping[str, str]],
    existing: list[Mapping[str, Any]],
) -> dict[str, dict[str, Any]]:
    """The HyperNodes the labels of ``nodes`` (name → labels) call for, by name; an ``existing``
    HyperNode of this source standing for the same label keeps its name."""
    by_label: dict[tuple[str, str, str], str] = {}
    for hn in sorted(existing, key=lambda o: str((o.get("metadata") or {}).get("name"))):
        meta = hn.get("metadata") or {}
        labels = meta.get("labels") or {}
        if labels.get(SOURCE_LABEL) != SOURCE:
            continue
        for key, value in labels.items():
            if key != SOURCE_LABEL:
                name = str(meta.get("name"))
                by_label.setdefault((name.rsplit("-tier", 1)[0], key, value), name)
    out: dict[str, dict[str, Any]] = {}
    for type_name in sorted(types):
        keys = types[type_name]
        prefix = f"hypernode-{_clean(type_name)}"
        for node_name in sorted(nodes):
            node_labels = nodes[node_name]
            member = node_name
            for i, key in enumerate(keys):
                value = node_labels.get(key)
                if value is None:
                    break
                tier = i + 1
                name = by_label.get((prefix, key, value)) or f"{prefix}-tier{tier}-{_suffix(key, value)}"
                by_label[(prefix, key, value)] = name
                made = out.get(name)
                if made is None:
                    made = out[name] = {
                        "apiVersion": "topology.volcano.sh/v1alpha1",
                        "kind": "HyperNode",
                        "metadata": {"name": name, "labels": {SOURCE_LABEL: SOURCE, key: value}},
                        "spec": {"tier": tier, "tierName": key, "members": []},
                    }
                kind = "Node" if tier == 1 else "HyperNode"
                members = made["spec"]["members"]
                if not any(m["selector"]["exactMatch"]["name"] == member for m in members):
                    members.append({"type": kind, "selector": {"exactMatch": {"name": member}}})
                member = name
    for made in out.values():
        made["spec"]["members"].sort(key=lambda m: m["selector"]["exactMatch"]["name"])
    return out


class HyperNodeDiscovery:
    """Keeps the label-sourced HyperNodes in step with the nodes' labels and the configuration."""

    def __init__(self, store: SqliteStore, informers: InformerFactory) -> None:
        self.store = store
        self._nodes = informers.informer("Node")
        self._hyper_nodes = informers.informer("HyperNode")
        self._config_maps = informers.informer("ConfigMap")
        self._dirty = True
        for inf in (self._nodes, self._hyper_nodes, self._config_maps):
            inf.add_handler(self._on_change)

    def _on_change(self, change: Change[Any]) -> None:
        if change.kind == "HyperNode" and change.type != EventType.DELETED:
            return  # only a deleted one is made again
        self._dirty = True

    def sync(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        cm = self._config_maps.get_raw(CONFIG_NAMESPACE, CONFIG_NAME)
        text = ((cm or {}).get("data") or {}).get(CONFIG_KEY) or ""
        types = topology_types(text)
        existing = list(self._hyper_nodes.list_raw())
        ours = {
            str(hn["metadata"]["name"]): hn
            for hn in existing
            if ((hn.get("metadata") or {}).get("labels") or {}).get(SOURCE_LABEL) == SOURCE
        }
        if not types and not ours:
            return
        nodes = {
            str(n["metadata"]["name"]): dict((n.get("metadata") or {}).get("labels") or {})
            for n in self._nodes.list_raw()
        }
        want = desired_hyper_nodes(types, nodes, existing)
        for name, hn in want.items():
            have = ours.get(name)
            try:
                if have is None:
                    self.store.create(hn)
                elif (
                    have.get("spec") != hn["spec"]
                    or have["metadata"].get("labels") != hn["metadata"]["labels"]
                ):
                    meta = {**have["metadata"], "labels": hn["metadata"]["labels"]}
                    self.store.update({**have, "spec": hn["spec"], "metadata": meta})
            except (AlreadyExists, Conflict, NotFound) as exc:
                log.info("hypernode discovery: %s: %s; tried again on the next change", name, exc)
                self._dirty = True
        for name in ours.keys() - want.keys():
            with contextlib.suppress(NotFound):
                self.store.delete("HyperNode", None, name)


class HyperNodeStatusController:
    """``status.nodeCount`` of every HyperNode, as Volcano's hypernode controller writes it: the
    names its members' selectors pick among the nodes (an exact name counts as it is, so a HyperNode
    member counts one)."""

    def __init__(self, store: SqliteStore, informers: InformerFactory) -> None:
        self.store = store
        self._nodes = informers.informer("Node")
        self._hyper_nodes = informers.informer("HyperNode")
        self._dirty = True
        for inf in (self._nodes, self._hyper_nodes):
            inf.add_handler(self._on_change)

    def _on_change(self, change: Change[Any]) -> None:
        if (
            change.kind == "HyperNode"
            and change.old is not None
            and change.type != EventType.DELETED
            and change.obj.get("spec") == change.old.get("spec")
        ):
            return  # a status write of ours
        self._dirty = True

    def sync(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        hyper_nodes: list[HyperNode] = []
        for raw in self._hyper_nodes.list_raw():
            with contextlib.suppress(InputError):
                hyper_nodes.append(HyperNode.from_dict(raw))
        if not hyper_nodes:
            return
        nodes = [
            (str(n["metadata"]["name"]), dict((n.get("metadata") or {}).get("labels") or {}))
            for n in self._nodes.list_raw()
        ]
        for hn in hyper_nodes:
            picked: set[str] = set()
            for member in hn.members:
                picked |= member.selector.matching(nodes)
            raw = hn.raw
            status = raw.get("status") or {}
            if status.get("nodeCount") == len(picked):
                continue
            try:
                self.store.update({**raw, "status": {**status, "nodeCount": len(picked)}})
            except (Conflict, NotFound):
                self._dirty = True
