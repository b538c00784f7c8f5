"""A pod's parsed view follows its ``status.resourceClaimStatuses``: the view reused across a status
write (only the phase and node can differ) is not reused when the generated claims changed."""

from __future__ import annotations

from kubesched.api.objects import Pod
from kubesched.store.parsers import parse_pod


def test_a_status_write_recording_claims_is_parsed_again() -> None:
    spec = {
        "containers": [{"name": "c", "image": "x"}],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
    }
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": spec}
    before = parse_pod(obj, None)
    assert isinstance(before, Pod) and dict(before.claim_statuses) == {}
    recorded = {**obj, "status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-x"}]}}
    after = parse_pod(recorded, before)
    assert dict(after.claim_statuses) == {"gpu": "p-gpu-x"}
    # A write that leaves the claims as they were still reuses the view's parse.
    bound = {**recorded, "spec": {**spec, "nodeName": "n"}}
    again = parse_pod(bound, after)
    assert again.node_name == "n" and again.claim_statuses is after.claim_statuses
