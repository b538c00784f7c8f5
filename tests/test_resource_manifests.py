"""``simulate`` takes the ``resource.k8s.io/v1`` kinds: they load without warnings in dependency
order, a pod's template claim is made by the resourceclaim controller, ``--dra-driver`` publishes
the GPU nodes' slices, and a bad object stops the load with an error naming the file, the
document, the object and the field."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from kubesched.api.manifests import KINDS, LOAD_ORDER, load_manifests
from kubesched.cli import EXIT_BAD_INPUT, EXIT_OK, main
from kubesched.controllers.dradriver import DraDriverOptions
from kubesched.sim.simulation import Simulation

DRA = """\
apiVersion: v1
kind: Node
metadata: {name: gpu-a, labels: {kubesched.io/gpu-model: V100}}
status: {capacity: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "2"}}
---
apiVersion: v1
kind: Pod
metadata: {name: trainer, namespace: ml}
spec:
  containers: [{name: c, image: x, resources: {claims: [{name: gpu}]}}]
  resourceClaims: [{name: gpu, resourceClaimTemplateName: one-gpu}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: ml}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu.kubesched.io}}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.kubesched.io}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.kubesched.io"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared, namespace: ml}
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - {name: big, deviceClassName: gpu.kubesched.io, count: 2}
      - {name: small, deviceClassName: gpu.kubesched.io}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: static}
spec:
  driver: static.example.com
  pool: {name: static, resourceSliceCount: 1}
  allNodes: true
  devices:
  - name: nic-0
    attributes: {speed: {int: 100}}
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_the_dra_kinds_load_after_nodes_and_before_pods():
    order = list(LOAD_ORDER)
    kinds = ["DeviceClass", "ResourceSlice", "ResourceClaimTemplate", "ResourceClaim"]
    assert order.index("Node") < min(order.index(k) for k in kinds)
    assert max(order.index(k) for k in kinds) < order.index("Pod")
    assert order.index("DeviceClass") < order.index("ResourceClaim")
    assert {k for k in kinds if KINDS[k].namespaced} == {"ResourceClaimTemplate", "ResourceClaim"}


def test_a_dra_manifest_loads_and_the_template_claim_is_made(tmp_path, capsys):
    path = write(tmp_path, "dra.yaml", DRA)
    loaded = load_manifests([path])
    assert loaded.warnings == [] and len(loaded.objects) == 6
    sim = Simulation()
    sim.load(loaded)
    sim.informers.pump()
    claims = {c["metadata"]["name"]: c for c in sim.store.list("ResourceClaim")}
    [made] = [name for name in claims if name != "shared"]
    assert made.startswith("trainer-gpu-")
    pod = sim.store.get("Pod", "ml", "trainer")
    assert pod["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": made}]
    # Without --dra-driver nothing publishes slices but the input's.
    assert [s["metadata"]["name"] for s in sim.store.list("ResourceSlice")] == ["static"]

    code = main(["simulate", path, "-o", "json"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    assert "is not used" not in err and "skipping" not in err
    assert [p["name"] for p in json.loads(out)["pods"]] == ["trainer"]


def test_the_driver_publishes_the_gpu_nodes_slices(tmp_path):
    sim = Simulation(dra_driver=DraDriverOptions())
    sim.load(load_manifests([write(tmp_path, "dra.yaml", DRA)]))
    sim.informers.pump()
    published = sim.store.get("ResourceSlice", None, "gpu-a-gpu.kubesched.io")
    assert published is not None
    devices = published["spec"]["devices"]
    assert [d["name"] for d in devices] == ["gpu-0", "gpu-1"]
    assert devices[0]["attributes"]["model"] == {"string": "V100"}
    assert devices[0]["capacity"] == {"memory": {"value": "32Gi"}}


BAD = {
    "claim-without-request-kind": (
        """\
        apiVersion: resource.k8s.io/v1
        kind: ResourceClaim
        metadata: {name: c}
        spec: {devices: {requests: [{name: gpu}]}}
        """,
        "ResourceClaim c: field spec.devices.requests[0]: Required value: exactly one of "
        "`exactly` or `firstAvailable` is required",
    ),
    "selector-that-does-not-compile": (
        """\
        apiVersion: resource.k8s.io/v1
        kind: DeviceClass
        metadata: {name: gpu}
        spec: {selectors: [{cel: {expression: "device.("}}]}
        """,
        'DeviceClass gpu: field spec.selectors[0].cel.expression: Invalid value: "device.(": ',
    ),
    "slice-without-node": (
        """\
        apiVersion: resource.k8s.io/v1
        kind: ResourceSlice
        metadata: {name: s}
        spec: {driver: d.example.com, pool: {name: p, resourceSliceCount: 1}}
        """,
        "ResourceSlice s: field spec: Required value: exactly one of `nodeName`, `nodeSelector`, "
        "`allNodes`, `perDeviceNodeSelection` is required",
    ),
    "capacity-that-is-no-quantity": (
        """\
        apiVersion: resource.k8s.io/v1
        kind: ResourceSlice
        metadata: {name: s}
        spec:
          driver: d.example.com
          pool: {name: p, resourceSliceCount: 1}
          nodeName: n
          devices: [{name: d, capacity: {memory: {value: lots}}}]
        """,
        "ResourceSlice s: field spec.devices[0].capacity[memory].value: ",
    ),
    "template-of-the-wrong-shape": (
        """\
        apiVersion: resource.k8s.io/v1
        kind: ResourceClaimTemplate
        metadata: {name: t}
        spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu, count: many}}]}}}
        """,
        "ResourceClaimTemplate t: field spec.spec.devices.requests[0].exactly.count: ",
    ),
    "old-version": (
        """\
        apiVersion: resource.k8s.io/v1beta1
        kind: DeviceClass
        metadata: {name: gpu}
        """,
        "DeviceClass gpu: field apiVersion: apiVersion 'resource.k8s.io/v1beta1' is not supported for "
        "DeviceClass; use resource.k8s.io/v1",
    ),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_dra_object_is_one_located_error(tmp_path, capsys, case):
    text, expected = BAD[case]
    path = write(tmp_path, "bad.yaml", text)
    code = main(["simulate", path, "-o", "json"])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT and out == ""
    assert err.startswith(f"error: {path}: document 1: {expected}"), err
    # CEL's compile errors point at the expression on lines of their own, as upstream prints them.
    assert "Traceback" not in err and (err.count("\n") == 1 or "Syntax error" in err)
