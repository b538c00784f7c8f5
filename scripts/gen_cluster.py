"""Write a cluster as one YAML file: N nodes and P one-container pods, for measuring ``simulate``.

python scripts/gen_cluster.py 5000 50000 c5000-50000.yaml
"""

from __future__ import annotations

import sys

import yaml


def main() -> None:
    n, p, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": f"node-{i}",
                "labels": {"kubernetes.io/hostname": f"node-{i}", "topology.kubernetes.io/zone": f"z{i % 3}"},
            },
            "status": {
                "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            },
        }
        for i in range(n)
    ]
    docs += [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"pod-{i}", "namespace": "default", "labels": {"app": f"a{i % 50}"}},
            "spec": {
                "containers": [
                    {
                        "name": "c",
                        "image": "nginx",
                        "resources": {"requests": {"cpu": "100m", "memory": "200Mi"}},
                    }
                ]
            },
        }
        for i in range(p)
    ]
    with open(out, "w") as f:
        yaml.dump_all(docs, f, Dumper=yaml.CSafeDumper)


if __name__ == "__main__":
    main()
