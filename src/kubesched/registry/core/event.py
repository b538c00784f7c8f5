"""Events, served both as core/v1 and as events.k8s.io/v1."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.strategy import Column, Resource, Row, Strategy, age, meta_of


class EventStrategy(Strategy):
    top_fields = frozenset(
        {
            "involvedObject",
            "reason",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "type",
            "eventTime",
            "series",
            "action",
            "related",
            "reportingComponent",
            "reportingInstance",
            "regarding",
            "note",
            "reportingController",
            "deprecatedSource",
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
            "deprecatedCount",
        }
    )
    columns: tuple[Column, ...] = (
        ("Last Seen", "string", 0),
        ("Type", "string", 0),
        ("Reason", "string", 0),
        ("Object", "string", 0),
        ("Message", "string", 0),
    )
    field_paths = frozenset(
        {
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
            "regarding.kind",
            "regarding.name",
            "regarding.namespace",
            "regarding.uid",
            "reportingController",
            "note",
        }
    )

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        involved = obj.get("involvedObject") or obj.get("regarding") or {}
        raw = obj.get("series")
        series: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
        last = (
            series.get("lastObservedTime")
            or obj.get("lastTimestamp")
            or obj.get("eventTime")
            or meta_of(obj).get("creationTimestamp")
        )
        return [
            age(last, now),
            obj.get("type", ""),
            obj.get("reason", ""),
            f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}",
            obj.get("message", obj.get("note", "")),
        ]


#: An event's body may say either version; both are stored as one kind.
API_VERSIONS = ("v1", "events.k8s.io/v1")

STRATEGY = EventStrategy(Resource("", "v1", "events", "event", "Event", True, ("ev",)))
EVENTS_V1 = EventStrategy(Resource("events.k8s.io", "v1", "events", "event", "Event", True, ("ev",)))
