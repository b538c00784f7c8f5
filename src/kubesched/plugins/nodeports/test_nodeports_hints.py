"""NodePorts queueing hint: upstream ``Test_isSchedulableAfterPodDeleted`` (case names verbatim; the
wrong-object case has no counterpart here: hints get parsed objects)."""

from __future__ import annotations

import pytest

from kubesched.api.objects import Pod
from kubesched.framework.types import QueueingHint
from kubesched.plugins.nodeports import NodePorts
from kubesched.plugins.testing import pod_dict

Q, SKIP = QueueingHint.QUEUE, QueueingHint.QUEUE_SKIP


def pod(name: str, host_port: int | None = None, node_name: str = "") -> Pod:
    raw = pod_dict(name, node_name=node_name)
    if host_port is not None:
        raw["spec"]["containers"][0]["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    return Pod.from_dict(raw)


POD_WITH_HOST_PORT = pod("target", 8080)
CASES: list[tuple[str, Pod, QueueingHint]] = [
    ("skip-queue-on-unscheduled", pod("deleted"), SKIP),
    ("skip-queue-on-non-hostport", pod("deleted", node_name="fake-node"), SKIP),
    ("skip-queue-on-unrelated-hostport", pod("deleted", 8081, "fake-node"), SKIP),
    ("queue-on-released-hostport", pod("deleted", 8080, "fake-node"), Q),
]


@pytest.mark.parametrize(("name", "old", "want"), CASES, ids=[c[0] for c in CASES])
def test_is_schedulable_after_pod_deleted(name: str, old: Pod, want: QueueingHint) -> None:
    assert NodePorts().is_schedulable_after_pod_deleted(POD_WITH_HOST_PORT, old, None) == want
