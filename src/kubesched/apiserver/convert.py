"""Events in both API versions: core/v1 (what kubectl describe reads) and events.k8s.io/v1 (what
the schedulers write). One stored object, converted to the version a request asks for."""

from __future__ import annotations

from typing import Any


def event_to_core(obj: dict[str, Any]) -> dict[str, Any]:
    if obj.get("apiVersion") != "events.k8s.io/v1":
        return {**obj, "apiVersion": "v1"}
    out = {
        k: v
        for k, v in obj.items()
        if k
        not in (
            "regarding",
            "note",
            "deprecatedSource",
            "deprecatedFirstTimestamp",
            "deprecatedLastTimestamp",
            "deprecatedCount",
            "reportingController",
            "reportingInstance",
        )
    }
    out["apiVersion"] = "v1"
    out["involvedObject"] = obj.get("regarding") or {}
    out["message"] = obj.get("note", "")
    out["reportingComponent"] = obj.get("reportingController", "")
    out["reportingInstance"] = obj.get("reportingInstance", "")
    out["source"] = obj.get("deprecatedSource") or {"component": obj.get("reportingController", "")}
    when = obj.get("eventTime") or (obj.get("metadata") or {}).get("creationTimestamp")
    out["firstTimestamp"] = obj.get("deprecatedFirstTimestamp") or when
    out["lastTimestamp"] = obj.get("deprecatedLastTimestamp") or when
    out["count"] = obj.get("deprecatedCount") or 1
    series = obj.get("series")
    if isinstance(series, dict) and series.get("count"):
        # A series read as the older recorder's aggregation: its count and when it was last seen.
        out["count"] = series["count"]
        if series.get("lastObservedTime"):
            out["lastTimestamp"] = str(series["lastObservedTime"])[:19] + "Z"
    if out.get("eventTime") and "." not in str(out["eventTime"]):
        # MicroTime: kubectl's decoder wants the fractional seconds.
        out["eventTime"] = str(out["eventTime"]).replace("Z", ".000000Z")
    return out


def event_to_events_v1(obj: dict[str, Any]) -> dict[str, Any]:
    if obj.get("apiVersion") == "events.k8s.io/v1":
        out = dict(obj)
        if out.get("eventTime") and "." not in str(out["eventTime"]):
            out["eventTime"] = str(out["eventTime"]).replace("Z", ".000000Z")
        return out
    out = {
        k: v
        for k, v in obj.items()
        if k
        not in (
            "involvedObject",
            "message",
            "source",
            "firstTimestamp",
            "lastTimestamp",
            "count",
            "reportingComponent",
        )
    }
    out["apiVersion"] = "events.k8s.io/v1"
    out["regarding"] = obj.get("involvedObject") or {}
    out["note"] = obj.get("message", "")
    out["reportingController"] = obj.get("reportingComponent") or (obj.get("source") or {}).get(
        "component", ""
    )
    out["deprecatedSource"] = obj.get("source") or {}
    out["deprecatedFirstTimestamp"] = obj.get("firstTimestamp")
    out["deprecatedLastTimestamp"] = obj.get("lastTimestamp")
    out["deprecatedCount"] = obj.get("count") or 0
    out["eventTime"] = (
        obj.get("eventTime")
        or obj.get("firstTimestamp")
        or (obj.get("metadata") or {}).get("creationTimestamp")
    )
    if out.get("eventTime") and "." not in str(out["eventTime"]):
        out["eventTime"] = str(out["eventTime"]).replace("Z", ".000000Z")
    return {k: v for k, v in out.items() if v is not None}


def served(obj: dict[str, Any], group: str, version: str) -> dict[str, Any]:
    """The stored object as the requested group version serves it."""
    if obj.get("kind") == "Event":
        return event_to_events_v1(obj) if group == "events.k8s.io" else event_to_core(obj)
    return obj
