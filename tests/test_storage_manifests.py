"""``simulate`` takes the storage kinds: a stateful manifest loads without warnings, in dependency
order, with the API server's admission (the default class), and bad storage objects stop the load
with an error naming the file, the document, the object and the field."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from kubesched.api.manifests import KINDS, LOAD_ORDER, load_manifests
from kubesched.cli import EXIT_BAD_INPUT, EXIT_OK, main
from kubesched.errors import InputError
from kubesched.sim.simulation import Simulation

STATEFUL = """\
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/hostname: n1, topology.kubernetes.io/zone: a}}
status: {capacity: {cpu: "4", memory: 8Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: data}
spec:
  containers: [{name: db, image: postgres, resources: {requests: {cpu: 500m}}}]
  volumes: [{name: pgdata, persistentVolumeClaim: {claimName: pgdata-db-0}}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: pgdata-db-0, namespace: data}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 5Gi}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: local-n1}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local
  local: {path: /mnt/disks/ssd1}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [n1]}]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: pd.csi.storage.gke.io}
spec: {attachRequired: true, storageCapacity: true}
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {name: n1}
spec:
  drivers:
  - name: pd.csi.storage.gke.io
    nodeID: n1
    topologyKeys: [topology.kubernetes.io/zone]
    allocatable: {count: 15}
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: zone-a, namespace: kube-system}
storageClassName: local
capacity: 100Gi
nodeTopology: {matchLabels: {topology.kubernetes.io/zone: a}}
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: csi-1234}
spec: {attacher: pd.csi.storage.gke.io, nodeName: n1, source: {persistentVolumeName: local-n1}}
"""


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_the_storage_kinds_load_after_nodes_and_before_pods():
    order = list(LOAD_ORDER)
    storage = [
        "StorageClass",
        "CSIDriver",
        "CSINode",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "CSIStorageCapacity",
        "VolumeAttachment",
    ]
    assert [order.index(k) for k in storage] == sorted(order.index(k) for k in storage)
    assert order.index("Node") < order.index("StorageClass") and order.index(
        "VolumeAttachment"
    ) < order.index("Pod")
    assert {k for k in storage if KINDS[k].namespaced} == {"PersistentVolumeClaim", "CSIStorageCapacity"}


def test_a_stateful_manifest_loads_and_is_simulated_without_warnings(tmp_path, capsys):
    path = write(tmp_path, "stateful.yaml", STATEFUL)
    loaded = load_manifests([path])
    assert loaded.warnings == []
    assert [o.kind for o in loaded.objects].count("PersistentVolume") == 1 and len(loaded.objects) == 9

    sim = Simulation()
    sim.load(loaded)
    # Created as kubectl apply would: the claim without a class got the default one.
    claim = sim.store.get("PersistentVolumeClaim", "data", "pgdata-db-0")
    assert claim is not None and claim["spec"]["storageClassName"] == "local"
    assert sim.store.get("PersistentVolume", None, "local-n1") is not None
    assert sim.store.get("CSIStorageCapacity", "kube-system", "zone-a") is not None
    sim.informers.pump()
    assert sim.informers.informer("PersistentVolumeClaim").get("data", "pgdata-db-0") is not None

    code = main(["simulate", path, "-o", "json"])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    assert "is not used" not in err and "skipping" not in err
    assert [p["name"] for p in json.loads(out)["pods"]] == ["db-0"]


BAD = {
    "claim without access modes": (
        """\
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: data, namespace: db}
        spec: {resources: {requests: {storage: 1Gi}}}
        """,
        "PersistentVolumeClaim db/data: field spec.accessModes: "
        "Required value: at least 1 access mode is required",
    ),
    "claim asking for nothing": (
        """\
        apiVersion: v1
        kind: PersistentVolumeClaim
        metadata: {name: data}
        spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: "0"}}}
        """,
        'PersistentVolumeClaim data: field spec.resources[storage]: Invalid value: "0": '
        "must be greater than zero",
    ),
    "volume with a capacity that is no quantity": (
        """\
        apiVersion: v1
        kind: PersistentVolume
        metadata: {name: pv1}
        spec: {capacity: {storage: lots}, accessModes: [ReadWriteOnce], hostPath: {path: /x}}
        """,
        "PersistentVolume pv1: field spec.capacity.storage: invalid quantity 'lots'",
    ),
    "volume with two sources": (
        """\
        apiVersion: v1
        kind: PersistentVolume
        metadata: {name: pv1}
        spec:
          capacity: {storage: 1Gi}
          accessModes: [ReadWriteOnce]
          hostPath: {path: /x}
          nfs: {server: s, path: /export}
        """,
        "PersistentVolume pv1: field spec.nfs: Forbidden: may not specify more than 1 volume type",
    ),
    "volume with an impossible node affinity": (
        """\
        apiVersion: v1
        kind: PersistentVolume
        metadata: {name: pv1}
        spec:
          capacity: {storage: 1Gi}
          accessModes: [ReadWriteOnce]
          local: {path: /mnt/a}
          nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: k, operator: Near}]}]}}
        """,
        "PersistentVolume pv1: field "
        "spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].operator",
    ),
    "class without a provisioner": (
        """\
        apiVersion: storage.k8s.io/v1
        kind: StorageClass
        metadata: {name: fast}
        volumeBindingMode: Sometimes
        """,
        "StorageClass fast: field provisioner: Required value",
    ),
    "class in a version not served": (
        """\
        apiVersion: storage.k8s.io/v1beta1
        kind: StorageClass
        metadata: {name: fast}
        provisioner: x
        """,
        "StorageClass fast: field apiVersion: apiVersion 'storage.k8s.io/v1beta1' is not supported",
    ),
    "csi node with a negative count": (
        """\
        apiVersion: storage.k8s.io/v1
        kind: CSINode
        metadata: {name: n1}
        spec: {drivers: [{name: d.example.com, nodeID: n1, allocatable: {count: -1}}]}
        """,
        "CSINode n1: field spec.drivers[0].allocatable.count: Invalid value: -1",
    ),
    "attachment without a source": (
        """\
        apiVersion: storage.k8s.io/v1
        kind: VolumeAttachment
        metadata: {name: va}
        spec: {attacher: d.example.com, nodeName: n1}
        """,
        "VolumeAttachment va: field spec.source: Required value",
    ),
    "capacity with a selector that does not parse": (
        """\
        apiVersion: storage.k8s.io/v1
        kind: CSIStorageCapacity
        metadata: {name: cap, namespace: kube-system}
        storageClassName: fast
        nodeTopology: {matchExpressions: [{key: zone, operator: Sometimes}]}
        """,
        "CSIStorageCapacity kube-system/cap: field nodeTopology.matchExpressions[0].operator",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_storage_object_is_one_located_error(tmp_path, capsys, case):
    text, expected = BAD[case]
    path = write(tmp_path, "bad.yaml", text)
    code = main(["simulate", path, "-o", "json"])
    out, err = capsys.readouterr()
    assert code == EXIT_BAD_INPUT and out == ""
    assert err.startswith(f"error: {path}: document 1: {expected}"), err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_bad_object_in_a_list_is_located_by_its_item(tmp_path):
    path = write(
        tmp_path,
        "list.yaml",
        """\
        apiVersion: v1
        kind: List
        items:
        - apiVersion: v1
          kind: PersistentVolumeClaim
          metadata: {name: ok}
          spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
        - apiVersion: v1
          kind: PersistentVolumeClaim
          metadata: {name: bad}
          spec: {accessModes: [Sometimes], resources: {requests: {storage: 1Gi}}}
        """,
    )
    with pytest.raises(InputError) as refused:
        load_manifests([path])
    assert str(refused.value).startswith(
        f"{path}: document 1: PersistentVolumeClaim bad: field items[1].spec.accessModes: "
        'Unsupported value: "Sometimes"'
    )
