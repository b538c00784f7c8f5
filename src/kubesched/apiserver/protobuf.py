"""Request bodies in Kubernetes' protobuf encoding, for the kinds kubectl's typed clients send that way
(``kubectl create
deployment|job|namespace|configmap|secret|priorityclass|serviceaccount|service|cronjob``,
``kubectl drain``'s evictions, ``kubectl auth can-i|whoami``'s reviews). Responses are always
JSON, which those clients accept too.

A body is the ``k8s\\0`` magic and a ``runtime.Unknown`` envelope (type meta, raw message). The raw
message is decoded by field number into the same JSON a client would have sent: Go's protobuf
encoder writes every non-pointer field, so empty strings, false and zero are dropped (JSON's
omitempty), except the integer fields that are pointers upstream (``replicas: 0`` means 0).
Fields not listed here are skipped.
"""

from __future__ import annotations

import base64
from typing import Any

MAGIC = b"k8s\x00"

# Field kinds: "s" string, "i" integer, "b" bool, "b0" bool kept when false (a pointer upstream),
# "i0" integer kept when zero, "t" Time, "q" Quantity, "m:<Message>" message, "map" map<string,string>,
# "mapq" map<string,Quantity>, "mapb" map<string,bytes> (base64 in JSON), "ios" IntOrString; a
# trailing "*" marks a repeated field.
Schema = dict[int, tuple[str, str]]

_META: Schema = {
    1: ("name", "s"),
    2: ("generateName", "s"),
    3: ("namespace", "s"),
    5: ("uid", "s"),
    6: ("resourceVersion", "s"),
    7: ("generation", "i"),
    11: ("labels", "map"),
    12: ("annotations", "map"),
    13: ("ownerReferences", "m:OwnerReference*"),
    14: ("finalizers", "s*"),
}

MESSAGES: dict[str, Schema] = {
    "ObjectMeta": _META,
    "OwnerReference": {
        1: ("kind", "s"),
        3: ("name", "s"),
        4: ("uid", "s"),
        5: ("apiVersion", "s"),
        6: ("controller", "b"),
        7: ("blockOwnerDeletion", "b"),
    },
    "LabelSelector": {1: ("matchLabels", "map"), 2: ("matchExpressions", "m:Requirement*")},
    "Requirement": {1: ("key", "s"), 2: ("operator", "s"), 3: ("values", "s*")},
    "PodTemplateSpec": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:PodSpec")},
    "PodSpec": {
        2: ("containers", "m:Container*"),
        3: ("restartPolicy", "s"),
        4: ("terminationGracePeriodSeconds", "i0"),
        5: ("activeDeadlineSeconds", "i"),
        6: ("dnsPolicy", "s"),
        7: ("nodeSelector", "map"),
        8: ("serviceAccountName", "s"),
        10: ("nodeName", "s"),
        11: ("hostNetwork", "b"),
        16: ("hostname", "s"),
        17: ("subdomain", "s"),
        19: ("schedulerName", "s"),
        20: ("initContainers", "m:Container*"),
        22: ("tolerations", "m:Toleration*"),
        24: ("priorityClassName", "s"),
        25: ("priority", "i0"),
    },
    "Container": {
        1: ("name", "s"),
        2: ("image", "s"),
        3: ("command", "s*"),
        4: ("args", "s*"),
        5: ("workingDir", "s"),
        6: ("ports", "m:ContainerPort*"),
        7: ("env", "m:EnvVar*"),
        8: ("resources", "m:Resources"),
        14: ("imagePullPolicy", "s"),
    },
    "ContainerPort": {
        1: ("name", "s"),
        2: ("hostPort", "i"),
        3: ("containerPort", "i"),
        4: ("protocol", "s"),
        5: ("hostIP", "s"),
    },
    "EnvVar": {1: ("name", "s"), 2: ("value", "s")},
    "Resources": {1: ("limits", "mapq"), 2: ("requests", "mapq")},
    "Toleration": {
        1: ("key", "s"),
        2: ("operator", "s"),
        3: ("value", "s"),
        4: ("effect", "s"),
        5: ("tolerationSeconds", "i0"),
    },
    "Deployment": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:DeploymentSpec")},
    "DeploymentSpec": {
        1: ("replicas", "i0"),
        2: ("selector", "m:LabelSelector"),
        3: ("template", "m:PodTemplateSpec"),
        5: ("minReadySeconds", "i"),
        6: ("revisionHistoryLimit", "i0"),
        7: ("paused", "b"),
        9: ("progressDeadlineSeconds", "i0"),
    },
    "ReplicaSet": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:ReplicaSetSpec")},
    "ReplicaSetSpec": {
        1: ("replicas", "i0"),
        2: ("selector", "m:LabelSelector"),
        3: ("template", "m:PodTemplateSpec"),
        4: ("minReadySeconds", "i"),
    },
    "Job": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:JobSpec")},
    "JobSpec": {
        1: ("parallelism", "i0"),
        2: ("completions", "i0"),
        3: ("activeDeadlineSeconds", "i0"),
        4: ("selector", "m:LabelSelector"),
        5: ("manualSelector", "b"),
        6: ("template", "m:PodTemplateSpec"),
        7: ("backoffLimit", "i0"),
    },
    "Pod": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:PodSpec")},
    "Namespace": {1: ("metadata", "m:ObjectMeta")},
    "ConfigMap": {
        1: ("metadata", "m:ObjectMeta"),
        2: ("data", "map"),
        3: ("binaryData", "mapb"),
        4: ("immutable", "b"),
    },
    "Secret": {
        1: ("metadata", "m:ObjectMeta"),
        2: ("data", "mapb"),
        3: ("type", "s"),
        4: ("stringData", "map"),
        5: ("immutable", "b0"),
    },
    "SelfSubjectAccessReview": {
        1: ("metadata", "m:ObjectMeta"),
        2: ("spec", "m:SelfSubjectAccessReviewSpec"),
    },
    "SelfSubjectAccessReviewSpec": {
        1: ("resourceAttributes", "m:ResourceAttributes"),
        2: ("nonResourceAttributes", "m:NonResourceAttributes"),
    },
    "ResourceAttributes": {
        1: ("namespace", "s"),
        2: ("verb", "s"),
        3: ("group", "s"),
        4: ("version", "s"),
        5: ("resource", "s"),
        6: ("subresource", "s"),
        7: ("name", "s"),
        8: ("fieldSelector", "m:SelectorAttributes"),
        9: ("labelSelector", "m:SelectorAttributes"),
    },
    "SelectorAttributes": {1: ("rawSelector", "s"), 2: ("requirements", "m:Requirement*")},
    "NonResourceAttributes": {1: ("path", "s"), 2: ("verb", "s")},
    "SelfSubjectRulesReview": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:SelfSubjectRulesReviewSpec")},
    "SelfSubjectRulesReviewSpec": {1: ("namespace", "s")},
    "SelfSubjectReview": {1: ("metadata", "m:ObjectMeta")},
    "ServiceAccount": {
        1: ("metadata", "m:ObjectMeta"),
        2: ("secrets", "m:ObjectReference*"),
        3: ("imagePullSecrets", "m:LocalObjectReference*"),
        4: ("automountServiceAccountToken", "b0"),
    },
    "ObjectReference": {
        1: ("kind", "s"),
        2: ("namespace", "s"),
        3: ("name", "s"),
        4: ("uid", "s"),
        5: ("apiVersion", "s"),
        6: ("resourceVersion", "s"),
        7: ("fieldPath", "s"),
    },
    "LocalObjectReference": {1: ("name", "s")},
    "PriorityClass": {
        1: ("metadata", "m:ObjectMeta"),
        2: ("value", "i0"),
        3: ("globalDefault", "b"),
        4: ("description", "s"),
        5: ("preemptionPolicy", "s"),
    },
    "Eviction": {1: ("metadata", "m:ObjectMeta")},
    "Service": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:ServiceSpec")},
    "CronJob": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:CronJobSpec")},
    "CronJobSpec": {
        1: ("schedule", "s"),
        2: ("startingDeadlineSeconds", "i0"),
        3: ("concurrencyPolicy", "s"),
        4: ("suspend", "b0"),
        5: ("jobTemplate", "m:JobTemplateSpec"),
        6: ("successfulJobsHistoryLimit", "i0"),
        7: ("failedJobsHistoryLimit", "i0"),
        8: ("timeZone", "s"),
    },
    "JobTemplateSpec": {1: ("metadata", "m:ObjectMeta"), 2: ("spec", "m:JobSpec")},
    "ServiceSpec": {
        1: ("ports", "m:ServicePort*"),
        2: ("selector", "map"),
        3: ("clusterIP", "s"),
        4: ("type", "s"),
        5: ("externalIPs", "s*"),
        7: ("sessionAffinity", "s"),
        10: ("externalName", "s"),
    },
    "ServicePort": {
        1: ("name", "s"),
        2: ("protocol", "s"),
        3: ("port", "i"),
        4: ("targetPort", "ios"),
        5: ("nodePort", "i"),
        6: ("appProtocol", "s"),
    },
}


#: Messages kept when empty: upstream's pointer fields, whose presence means something.
_KEPT_EMPTY = frozenset({"Resources", "ResourceAttributes", "NonResourceAttributes"})


class ProtobufError(ValueError):
    pass


def _varint(data: bytes, i: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if i >= len(data) or shift > 63:
            raise ProtobufError("truncated varint")
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, i


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    out: list[tuple[int, int | bytes]] = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
            out.append((number, value))
        elif wire == 2:
            size, i = _varint(data, i)
            if i + size > len(data):
                raise ProtobufError("truncated field")
            out.append((number, data[i : i + size]))
            i += size
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a string")
    return value.decode("utf-8")


def _map_entry(value: int | bytes, kind: str) -> tuple[str, str]:
    if not isinstance(value, bytes):
        raise ProtobufError("expected a map entry")
    key, val = "", ""
    for number, item in _fields(value):
        if number == 1:
            key = _text(item)
        elif number == 2:
            if kind == "mapq":
                if not isinstance(item, bytes):
                    raise ProtobufError("expected a quantity")
                val = next((_text(v) for n, v in _fields(item) if n == 1), "")
            elif kind == "mapb":
                if not isinstance(item, bytes):
                    raise ProtobufError("expected bytes")
                val = base64.b64encode(item).decode()
            else:
                val = _text(item)
    return key, val


def _int_or_string(value: int | bytes) -> int | str:
    """An ``IntOrString``: its string when its type says so (1), else its integer."""
    if not isinstance(value, bytes):
        raise ProtobufError("expected an IntOrString")
    kind, number, text = 0, 0, ""
    for n, item in _fields(value):
        if n == 1 and isinstance(item, int):
            kind = item
        elif n == 2 and isinstance(item, int):
            number = _signed(item)
        elif n == 3:
            text = _text(item)
    return text if kind == 1 else number


def decode_message(name: str, data: bytes) -> dict[str, Any]:
    schema = MESSAGES[name]
    out: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in schema:
            continue
        field, kind = schema[number]
        repeated = kind.endswith("*")
        kind = kind.rstrip("*")
        item: Any
        if kind == "s":
            item = _text(value)
            if not item and not repeated:
                continue
        elif kind in ("i", "i0"):
            if not isinstance(value, int):
                raise ProtobufError(f"{field}: expected an integer")
            item = _signed(value)
            if item == 0 and kind == "i":
                continue
        elif kind in ("b", "b0"):
            if not value and kind == "b":
                continue
            item = bool(value)
        elif kind == "ios":
            item = _int_or_string(value)
        elif kind in ("map", "mapq", "mapb"):
            key, val = _map_entry(value, kind)
            out.setdefault(field, {})[key] = val
            continue
        elif kind.startswith("m:"):
            if not isinstance(value, bytes):
                raise ProtobufError(f"{field}: expected a message")
            item = decode_message(kind[2:], value)
            if not item and not repeated and kind[2:] not in _KEPT_EMPTY:
                continue
        else:  # pragma: no cover - the table above has no other kinds
            raise ProtobufError(f"unknown field kind {kind}")
        if repeated:
            out.setdefault(field, []).append(item)
        else:
            out[field] = item
    return out


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf request body as the JSON object it stands for."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf magic number")
    api_version = kind = ""
    raw = b""
    for number, value in _fields(body[len(MAGIC) :]):
        if number == 1 and isinstance(value, bytes):
            for n, v in _fields(value):
                if n == 1:
                    api_version = _text(v)
                elif n == 2:
                    kind = _text(v)
        elif number == 2 and isinstance(value, bytes):
            raw = value
    if kind not in MESSAGES:
        raise ProtobufError(f"kind {kind!r} is not accepted in protobuf; send JSON")
    obj = decode_message(kind, raw)
    return {"apiVersion": api_version, "kind": kind, **obj}
