"""The manifests in deploy/: every document parses, has the kind and API version expected, refers
to objects that exist, and grants kubesched exactly what ``kubesched run`` calls; the configuration
they carry loads with kubesched's own parsers. Against kube-apiserver v1.20.2 (``../shared/refcp``,
skipped when not built) they pass server-side validation and ``kubectl auth can-i`` agrees."""

from __future__ import annotations

import http.client
import json
import os
import shlex
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml

from kubesched.batch.conf_loader import batch_conf_from_dict
from kubesched.framework.config import load_config
from kubesched.plugins import default_registry

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
REFCP = ROOT.parent / "shared" / "refcp"
REF_DIR = Path(os.environ.get("REF_DIR", Path.home() / ".cache" / "kubesched-refcp"))
NAMESPACE = "kube-system"
SUBJECT = f"system:serviceaccount:{NAMESPACE}:kubesched"

EXPECTED = {
    ("v1", "ServiceAccount", "kubesched"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole", "kubesched"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "kubesched"),
    ("rbac.authorization.k8s.io/v1", "Role", "kubesched-leader-election"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding", "kubesched-leader-election"),
    ("v1", "ConfigMap", "kubesched-config"),
    ("apps/v1", "Deployment", "kubesched"),
}
CLUSTER_SCOPED = {"ClusterRole", "ClusterRoleBinding"}

#: (API group, resource, verb) of every call ``kubesched run`` makes: the reflectors (list, watch
#: per followed kind) and the remote ports (binding, status patches, evictions, annotations,
#: volume bindings, events, PodGroups and their status).
NEEDED: list[tuple[str, str, str]] = [
    *[
        (group, resource, verb)
        for group, resource in [
            ("", "pods"),
            ("", "nodes"),
            ("", "namespaces"),
            ("", "services"),
            ("", "replicationcontrollers"),
            ("apps", "replicasets"),
            ("apps", "statefulsets"),
            ("policy", "poddisruptionbudgets"),
            ("scheduling.k8s.io", "priorityclasses"),
            ("scheduling.k8s.io", "workloads"),
            ("scheduling.k8s.io", "podgroups"),
            ("", "persistentvolumes"),
            ("", "persistentvolumeclaims"),
            ("storage.k8s.io", "storageclasses"),
            ("storage.k8s.io", "csidrivers"),
            ("storage.k8s.io", "csinodes"),
            ("storage.k8s.io", "csistoragecapacities"),
            ("storage.k8s.io", "volumeattachments"),
            ("resource.k8s.io", "deviceclasses"),
            ("resource.k8s.io", "resourceclaims"),
            ("resource.k8s.io", "resourceclaimtemplates"),
            ("resource.k8s.io", "resourceslices"),
            ("scheduling.volcano.sh", "podgroups"),
            ("scheduling.volcano.sh", "queues"),
        ]
        for verb in ("get", "list", "watch")
    ],
    ("", "pods/binding", "create"),
    ("", "pods/eviction", "create"),
    ("", "pods/status", "patch"),
    ("", "pods", "patch"),
    ("", "persistentvolumes", "update"),
    ("", "persistentvolumeclaims", "update"),
    ("events.k8s.io", "events", "create"),
    ("events.k8s.io", "events", "patch"),
    ("", "events", "create"),
    ("", "events", "patch"),
    ("scheduling.k8s.io", "podgroups/status", "patch"),
    ("scheduling.volcano.sh", "podgroups", "create"),
    ("scheduling.volcano.sh", "podgroups", "patch"),
    ("scheduling.volcano.sh", "podgroups/status", "patch"),
    ("scheduling.volcano.sh", "podgroups/status", "update"),
    ("scheduling.volcano.sh", "queues/status", "patch"),
    ("scheduling.volcano.sh", "queues/status", "update"),
]
#: Leader election, in kubesched's namespace: (verb, Lease name or None for any).
LEASE_NEEDED = [("create", None), ("get", "kubesched"), ("update", "kubesched")]
#: What it must not be able to do.
FORBIDDEN: list[tuple[str, str, str]] = [
    ("", "pods", "delete"),
    ("", "pods", "create"),
    ("", "pods", "update"),
    ("", "nodes", "update"),
    ("", "nodes", "patch"),
    ("", "secrets", "get"),
    ("", "configmaps", "list"),
    ("apps", "deployments", "create"),
    ("scheduling.volcano.sh", "podgroups", "delete"),
    ("scheduling.volcano.sh", "queues", "update"),
    ("rbac.authorization.k8s.io", "clusterroles", "create"),
]


def documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(DEPLOY.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            assert isinstance(doc, dict), f"{path.name}: a document that is not an object"
            docs.append(doc)
    return docs


def find(kind: str, name: str | None = None) -> dict[str, Any]:
    matches = [
        d for d in documents() if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)
    ]
    assert len(matches) == 1, f"{kind} {name}: {len(matches)} documents"
    return matches[0]


def config_map() -> dict[str, str]:
    data: dict[str, str] = find("ConfigMap")["data"]
    return data


def grants(
    rules: list[dict[str, Any]], group: str, resource: str, verb: str, name: str | None = None
) -> bool:
    for rule in rules:
        names = rule.get("resourceNames")
        if (
            group in rule.get("apiGroups", [])
            and resource in rule.get("resources", [])
            and verb in rule.get("verbs", [])
            and (not names or (name is not None and name in names))
        ):
            return True
    return False


# --- the documents ------------------------------------------------------------------------------


def test_every_document_has_the_expected_kind_and_version() -> None:
    found = {(d["apiVersion"], d["kind"], d["metadata"]["name"]) for d in documents()}
    assert found == EXPECTED
    for d in documents():
        if d["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in d["metadata"]
        else:
            assert d["metadata"]["namespace"] == NAMESPACE, d["kind"]


def test_bindings_refer_to_the_roles_and_the_service_account() -> None:
    account = find("ServiceAccount")["metadata"]
    for binding_kind, role_kind in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        binding = find(binding_kind)
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": role_kind,
            "name": find(role_kind)["metadata"]["name"],
        }
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
        ]
    assert find("Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == account["name"]


def test_the_cluster_role_grants_every_call_kubesched_makes_and_no_more() -> None:
    rules = find("ClusterRole")["rules"]
    missing = [need for need in NEEDED if not grants(rules, *need)]
    assert missing == []
    extra = [
        (group, resource, verb)
        for rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
        if (group, resource, verb) not in NEEDED
    ]
    assert extra == []
    assert not any("*" in rule[key] for rule in rules for key in ("apiGroups", "resources", "verbs"))


def test_leases_are_granted_only_in_the_namespace_and_by_name() -> None:
    role = find("Role")
    rules = role["rules"]
    assert role["metadata"]["namespace"] == NAMESPACE
    for verb, name in LEASE_NEEDED:
        assert grants(rules, "coordination.k8s.io", "leases", verb, name)
    assert not grants(rules, "coordination.k8s.io", "leases", "update", "kube-scheduler")
    assert not grants(rules, "coordination.k8s.io", "leases", "delete", "kubesched")
    assert not grants(find("ClusterRole")["rules"], "coordination.k8s.io", "leases", "get", "kubesched")


def test_the_lease_name_granted_is_the_one_the_deployment_elects_on() -> None:
    args = container()["args"]
    assert "--leader-elect" in args
    assert "--leader-elect-resource-name=kubesched" in args
    names = {n for rule in find("Role")["rules"] for n in rule.get("resourceNames", [])}
    assert names == {"kubesched"}
    # The Lease lives where the pod runs: the namespace comes from the downward API.
    assert "--leader-elect-resource-namespace=$(POD_NAMESPACE)" in args
    env = {e["name"]: e for e in container()["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"


def container() -> dict[str, Any]:
    containers: list[dict[str, Any]] = find("Deployment")["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def test_the_deployment_runs_two_replicas_with_probes_and_requests() -> None:
    deployment = find("Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == 2
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    c = container()
    assert c["args"][0] == "run"
    assert c["livenessProbe"]["httpGet"] == {"path": "/livez", "port": 10259, "scheme": "HTTP"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 10259, "scheme": "HTTP"}
    assert "--secure-port=10259" in c["args"]
    assert {"cpu", "memory"} <= set(c["resources"]["requests"])
    assert c["securityContext"]["allowPrivilegeEscalation"] is False
    assert deployment["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True


def test_the_configuration_files_are_the_config_maps_and_load() -> None:
    c = container()
    mount = next(m for m in c["volumeMounts"] if m["name"] == "config")["mountPath"]
    volume = next(
        v for v in find("Deployment")["spec"]["template"]["spec"]["volumes"] if v["name"] == "config"
    )
    assert volume["configMap"]["name"] == find("ConfigMap")["metadata"]["name"]
    files = {
        a.split("=", 1)[0]: a.split("=", 1)[1]
        for a in c["args"]
        if a.startswith(("--config=", "--batch-conf="))
    }
    data = config_map()
    for flag in ("--config", "--batch-conf"):
        path = Path(files[flag])
        assert str(path.parent) == mount
        assert path.name in data


def test_the_scheduler_configuration_has_one_profile_named_kubesched(tmp_path: Path) -> None:
    path = tmp_path / "scheduler-config.yaml"
    path.write_text(config_map()["scheduler-config.yaml"])
    config = load_config(path, default_registry())
    assert [p.scheduler_name for p in config.profiles] == ["kubesched"]


def test_the_volcano_conf_loads_without_warnings() -> None:
    conf = batch_conf_from_dict(
        yaml.safe_load(config_map()["volcano-scheduler.conf"]), "volcano-scheduler.conf"
    )
    assert conf.actions == ["enqueue", "allocate", "backfill"]
    assert conf.warnings == []
    assert conf.unsupported_plugins == []


def test_the_image_runs_kubesched_as_a_user() -> None:
    lines = [line.strip() for line in (DEPLOY / "Dockerfile").read_text().splitlines()]
    assert "FROM python:3.12-slim" in lines
    assert 'ENTRYPOINT ["kubesched"]' in lines
    user = next(line for line in lines if line.startswith("USER "))
    assert user.split()[1].split(":")[0] not in ("0", "root")
    assert any(line.startswith("RUN pip install .") for line in lines)


# --- against kube-apiserver ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def refcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A private control plane (its own REF_DIR over the built binaries, free ports); the env for
    kubectl."""
    if not (REF_DIR / "bin" / "kube-apiserver").exists() or not (REFCP / "start.sh").exists():
        pytest.skip("refcp (a real kube-apiserver) is not built here")
    ref_dir = tmp_path_factory.mktemp("refcp")
    (ref_dir / "bin").symlink_to(REF_DIR / "bin")
    env = {**os.environ, "REF_DIR": str(ref_dir), "REF_PORTS": "auto"}
    subprocess.run(["bash", str(REFCP / "start.sh")], check=True, env=env, capture_output=True, timeout=180)
    try:
        yield {**env, "KUBECONFIG": str(ref_dir / "kubeconfig")}
    finally:
        subprocess.run(["bash", str(REFCP / "stop.sh"), "--wipe"], env=env, capture_output=True, timeout=60)


def kubectls(ref_env: dict[str, str]) -> list[str]:
    """kubectl 1.20 from refcp, and the system's if there is one."""
    found = [str(Path(ref_env["REF_DIR"]) / "bin" / "kubectl")]
    system = shutil.which("kubectl")
    if system:
        found.append(system)
    return found


def kubectl(binary: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([binary, *args], env=env, capture_output=True, text=True, timeout=60)


def test_kube_apiserver_accepts_the_manifests(refcp: dict[str, str]) -> None:
    for binary in kubectls(refcp):
        for mode in ("client", "server"):
            done = kubectl(binary, refcp, "apply", f"--dry-run={mode}", "-f", str(DEPLOY))
            assert done.returncode == 0, f"{binary} --dry-run={mode}: {done.stderr}"
            assert "deployment.apps/kubesched" in done.stdout


def can_i(
    env: dict[str, str], verb: str, group: str, resource: str, name: str | None, namespace: str
) -> bool:
    """A SubjectAccessReview for kubesched's service account (by group and resource, so that kinds
    the server does not serve, Volcano's, are asked about too)."""
    main, _, sub = resource.partition("/")
    attributes = {"group": group, "resource": main, "verb": verb, "namespace": namespace}
    if sub:
        attributes["subresource"] = sub
    if name:
        attributes["name"] = name
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": SUBJECT,
            "groups": [
                "system:serviceaccounts",
                f"system:serviceaccounts:{NAMESPACE}",
                "system:authenticated",
            ],
            "resourceAttributes": attributes,
        },
    }
    values: dict[str, str] = {}
    for line in (Path(env["REF_DIR"]) / "env.sh").read_text().splitlines():
        if line.startswith("export "):
            key, _, value = line[len("export ") :].partition("=")
            values[key] = shlex.split(value)[0] if value else ""
    url = urlparse(values["REF_API_URL"])
    conn = http.client.HTTPSConnection(
        "127.0.0.1", url.port or 443, context=ssl.create_default_context(cafile=values["REF_CA"]), timeout=30
    )
    conn.request(
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        body=json.dumps(review),
        headers={"Authorization": f"Bearer {values['REF_TOKEN']}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    answer = json.loads(response.read())
    conn.close()
    assert response.status == 201, answer
    return bool(answer["status"].get("allowed"))


def test_kube_apiserver_authorizes_what_kubesched_calls_and_nothing_else(refcp: dict[str, str]) -> None:
    binary = str(Path(refcp["REF_DIR"]) / "bin" / "kubectl")
    done = kubectl(binary, refcp, "apply", "-f", str(DEPLOY))
    assert done.returncode == 0, done.stderr
    denied = [n for n in NEEDED if not can_i(refcp, n[2], n[0], n[1], None, "default")]
    assert denied == []
    for verb, name in LEASE_NEEDED:
        assert can_i(refcp, verb, "coordination.k8s.io", "leases", name, NAMESPACE), (verb, name)
    assert not can_i(refcp, "update", "coordination.k8s.io", "leases", "kube-scheduler", NAMESPACE)
    assert not can_i(refcp, "create", "coordination.k8s.io", "leases", None, "default")
    allowed = [f for f in FORBIDDEN if can_i(refcp, f[2], f[0], f[1], None, "default")]
    assert allowed == []
