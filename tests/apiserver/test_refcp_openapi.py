"""Side by side with kube-apiserver v1.20.2 (``../shared/refcp``) through kubectl 1.20: ``explain``
lists the same fields with the same types, ``diff`` shows the same change, and ``dryRun`` answers
(and refuses) as upstream. Skipped unless refcp is built."""

from __future__ import annotations

import json
import re

from tests.apiserver.kubectls import KUBECTLS, kubectl_runner
from tests.remote.refcp import needs_refcp, refcp  # noqa: F401 (the fixture)

pytestmark = needs_refcp

OLD_KUBECTL = KUBECTLS[1].values[0]
#: Paths whose fields have not changed since v1.20 (the served schemas are v1.35's).
STABLE = (
    "pods.spec.containers.ports",
    "pods.spec.tolerations",
    "deployments.spec.strategy",
    "services.spec.ports",
    "configmaps",
    "nodes.spec.taints",
)
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def _outline(text: str) -> list[str]:
    """explain's header and its field lines (name and type), without the descriptions."""
    return [
        line for line in text.splitlines() if re.match(r"^(KIND|VERSION|RESOURCE|FIELD)|^   [a-zA-Z]", line)
    ]


def test_kubectl_explain_lists_the_fields_kube_apiserver_lists(refcp, make_cluster) -> None:  # noqa: F811
    ours = make_cluster(nodes=0)
    theirs_run = kubectl_runner(OLD_KUBECTL, refcp.kubeconfig)
    ours_run = kubectl_runner(OLD_KUBECTL, ours.kubeconfig)
    for path in STABLE:
        theirs = theirs_run("explain", path)
        mine = ours_run("explain", path)
        assert theirs.returncode == mine.returncode == 0, (theirs.stderr, mine.stderr)
        assert _outline(mine.stdout) == _outline(theirs.stdout), path


def test_dry_run_answers_and_refusals_are_upstreams(refcp, make_cluster) -> None:  # noqa: F811
    ours = make_cluster(nodes=0)
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}, "data": {"a": "1"}}
    for method, path in (("POST", CONFIGMAPS), ("DELETE", CONFIGMAPS + "/dry")):
        body = config if method == "POST" else None
        theirs = refcp.request(method, path + "?dryRun=Some", body)
        mine = ours.request(method, path + "?dryRun=Some", body)
        assert (mine[0], mine[1]["message"], mine[1]["details"]) == (
            theirs[0],
            theirs[1]["message"],
            theirs[1]["details"],
        )
    theirs = refcp.request("POST", CONFIGMAPS + "?dryRun=All", config)
    mine = ours.request("POST", CONFIGMAPS + "?dryRun=All", config)
    assert mine[0] == theirs[0] == 201
    assert set(mine[1]["metadata"]) - {"managedFields"} == set(theirs[1]["metadata"]) - {"managedFields"}
    assert refcp.request("GET", CONFIGMAPS + "/dry")[0] == ours.request("GET", CONFIGMAPS + "/dry")[0] == 404


def test_kubectl_diff_shows_the_same_change(refcp, make_cluster, tmp_path) -> None:  # noqa: F811
    ours = make_cluster(nodes=0)
    manifest = tmp_path / "cm.json"
    changes = {}
    for name, kubeconfig in (("theirs", refcp.kubeconfig), ("ours", ours.kubeconfig)):
        run = kubectl_runner(OLD_KUBECTL, kubeconfig)
        manifest.write_text(
            json.dumps(
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}, "data": {"a": "1"}}
            )
        )
        assert run("apply", "-f", str(manifest)).returncode == 0
        manifest.write_text(
            json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "d"},
                    "data": {"a": "2", "b": "3"},
                }
            )
        )
        diff = run("diff", "-f", str(manifest))
        assert diff.returncode == 1, diff.stderr
        # The data's lines (kubesched records managedFields for applies and updates only).
        changes[name] = [line for line in diff.stdout.splitlines() if re.match(r"^[+-]  [a-z]: ", line)]
    assert changes["ours"] == changes["theirs"] == ['-  a: "1"', '+  a: "2"', '+  b: "3"']
