"""HTTP extenders against a real server on 127.0.0.1: filter, prioritize, bind and preempt, with
upstream's wire format (``k8s.io/kube-scheduler/extender/v1``), timeouts, ignorable failures and
nodeCacheCapable."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.errors import ConfigError
from kubesched.framework.config import (
    ExtenderConfig,
    ExtenderManagedResource,
    config_from_dict,
)
from kubesched.plugins import default_registry
from kubesched.plugins.testing import pod_dict
from kubesched.scheduler.extenders import HTTPExtender
from kubesched.sim.simulation import Simulation

API = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}

Handler = Callable[[dict[str, Any]], Any]


class ExtenderServer:
    """A scripted extender: ``verbs[verb](args)`` answers a POST to ``/prefix/verb``. An answer is
    JSON-encoded unless it is bytes; ``(code, body)`` sets the status code; ``delay`` stalls first."""

    def __init__(self) -> None:
        self.verbs: dict[str, Handler] = {}
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.delay = 0.0
        server = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                args = json.loads(self.rfile.read(length))
                verb = self.path.rsplit("/", 1)[-1]
                server.calls.append((verb, args))
                if server.delay:
                    time.sleep(server.delay)
                answer = server.verbs[verb](args)
                code = 200
                if isinstance(answer, tuple):
                    code, answer = answer
                body = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _H)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/scheduler"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def verbs_called(self) -> list[str]:
        return [v for v, _ in self.calls]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[ExtenderServer]:
    srv = ExtenderServer()
    yield srv
    srv.close()


def node(name: str, cpu: str = "4") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def pod(name: str, cpu: str = "100m", priority: int = 0, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "priority": priority,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
    }


def uid_of(sim: Simulation, name: str) -> str:
    """The uid the store gave the pod (a create ignores a client-set uid, as the API server does)."""
    return str(sim.store.get("Pod", "default", name)["metadata"]["uid"])


def sim_with(extenders: list[dict[str, Any]], nodes: int = 3, explain: bool = False) -> Simulation:
    registry = default_registry()
    config = config_from_dict({**API, "extenders": extenders}, registry)
    sim = Simulation(config, registry, seed=1, explain=explain)
    for i in range(nodes):
        sim.store.create(node(f"n{i}"))
    return sim


def one_cycle(sim: Simulation, *pods: dict[str, Any]) -> dict[str, Any]:
    """Create the pods and run exactly one scheduling cycle per pod (no retries: a slow extender
    would make a full simulation retry for minutes). Returns outcomes by pod name."""
    for p in pods:
        sim.store.create(p)
    sched = sim.scheduler
    for _ in pods:
        sched.informers.pump()
        sched.schedule_one()
    sched.informers.pump()
    return {o.name: o for o in sched.outcomes.values()}


def names_of(args: dict[str, Any]) -> list[str]:
    if args.get("NodeNames") is not None:
        return list(args["NodeNames"])
    return [n["metadata"]["name"] for n in args["Nodes"]["items"]]


# --------------------------------------------------------------------------------------------------
# IsInterested (upstream TestIsInterested, case names verbatim)


def _ext(*managed: str) -> HTTPExtender:
    return HTTPExtender(
        ExtenderConfig(
            url_prefix="http://127.0.0.1:1",
            managed_resources=tuple(ExtenderManagedResource(m) for m in managed),
        )
    )


def _pod_with(**container: Any) -> Pod:
    return Pod.from_dict(
        {
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"containers": [{"name": "app", **container}]},
        }
    )


IS_INTERESTED = [
    ("Empty managed resources", _ext(), _pod_with(), True),
    ("Managed memory, empty resources", _ext("memory"), _pod_with(), False),
    (
        "Managed memory, container memory with Requests",
        _ext("memory"),
        _pod_with(resources={"requests": {"memory": "0"}}),
        True,
    ),
    (
        "Managed memory, container memory with Limits",
        _ext("memory"),
        _pod_with(resources={"limits": {"memory": "0"}}),
        True,
    ),
    (
        "Managed memory, init container memory",
        _ext("memory"),
        Pod.from_dict(
            {
                "metadata": {"name": "p"},
                "spec": {
                    "containers": [{"name": "app"}],
                    "initContainers": [{"name": "init", "resources": {"requests": {"memory": "0"}}}],
                },
            }
        ),
        True,
    ),
]


@pytest.mark.parametrize(("label", "ext", "pod_", "want"), IS_INTERESTED, ids=[c[0] for c in IS_INTERESTED])
def test_is_interested(label: str, ext: HTTPExtender, pod_: Pod, want: bool) -> None:
    assert ext.is_interested(pod_) is want


# --------------------------------------------------------------------------------------------------
# Filter


def test_filter_keeps_nodes_and_reports_failed_ones(server: ExtenderServer) -> None:
    def filt(args: dict[str, Any]) -> dict[str, Any]:
        assert args["Pod"]["metadata"]["name"] == "web" and args["NodeNames"] is None
        names = names_of(args)
        keep = [n for n in args["Nodes"]["items"] if n["metadata"]["name"] == "n1"]
        failed = {n: "extender says no" for n in names if n != "n1"}
        return {"Nodes": {"items": keep}, "FailedNodes": failed, "Error": ""}

    server.verbs["filter"] = filt
    sim = sim_with([{"urlPrefix": server.url, "filterVerb": "filter"}])
    sim.store.create(pod("web"))
    sim.run()
    out = {o.name: o for o in sim.outcomes()}
    assert out["web"].node == "n1"


def test_filter_failed_nodes_appear_in_the_fit_error_and_explain(server: ExtenderServer) -> None:
    server.verbs["filter"] = lambda args: {
        "Nodes": {"items": []},
        "FailedNodes": {"n0": "no GPU left", "n1": "no GPU left"},
        "FailedAndUnresolvableNodes": {"n2": "wrong rack"},
    }
    sim = sim_with([{"urlPrefix": server.url, "filterVerb": "filter"}], explain=True)
    out = one_cycle(sim, pod("web"))
    web = out["web"]
    assert web.status == "Unschedulable"
    assert web.message.startswith("0/3 nodes are available: 1 wrong rack, 2 no GPU left.")
    explain = sim.scheduler.explain.get(uid_of(sim, "web"))
    assert explain["filter"]["n0"][server.url] == "no GPU left"
    assert explain["filter"]["n2"][server.url] == "wrong rack"
    assert explain["filter"]["n0"]["NodeResourcesFit"] == "passed"


def test_filter_node_cache_capable_sends_and_takes_node_names(server: ExtenderServer) -> None:
    def filt(args: dict[str, Any]) -> dict[str, Any]:
        assert args["Nodes"] is None
        assert sorted(args["NodeNames"]) == ["n0", "n1", "n2"]
        return {"NodeNames": ["n2"], "FailedNodes": {}}

    server.verbs["filter"] = filt
    sim = sim_with([{"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True}])
    assert one_cycle(sim, pod("web"))["web"].node == "n2"


def test_filter_claiming_an_unknown_node_is_an_error(server: ExtenderServer) -> None:
    server.verbs["filter"] = lambda args: {"NodeNames": ["elsewhere"]}
    sim = sim_with([{"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True}])
    web = one_cycle(sim, pod("web"))["web"]
    assert web.status == "Pending"
    assert "claims a filtered node 'elsewhere' which is not found in the input node list" in web.message


def test_filter_is_called_only_for_interested_pods(server: ExtenderServer) -> None:
    server.verbs["filter"] = lambda args: {"NodeNames": [], "FailedNodes": {}}
    sim = sim_with(
        [
            {
                "urlPrefix": server.url,
                "filterVerb": "filter",
                "nodeCacheCapable": True,
                "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
            }
        ]
    )
    gpu = pod("gpu")
    gpu["spec"]["containers"][0]["resources"]["limits"] = {"example.com/gpu": "1"}
    gpu["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    out = one_cycle(sim, pod("plain"), gpu)
    assert out["plain"].status == "Scheduled"
    assert server.calls and all(a["Pod"]["metadata"]["name"] == "gpu" for _, a in server.calls)
    assert out["gpu"].status == "Unschedulable"


def test_filter_error_field_fails_the_cycle(server: ExtenderServer) -> None:
    server.verbs["filter"] = lambda args: {"Error": "backend down"}
    sim = sim_with([{"urlPrefix": server.url, "filterVerb": "filter"}])
    web = one_cycle(sim, pod("web"))["web"]
    assert web.status == "Pending"
    assert web.message == f"extender '{server.url}' filter: backend down"
    stored = sim.store.get("Pod", "default", "web")
    cond = next(c for c in stored["status"]["conditions"] if c["type"] == "PodScheduled")
    assert cond["reason"] == "SchedulerError" and server.url in cond["message"]


# --------------------------------------------------------------------------------------------------
# Failures: timeouts, ignorable, garbage


def test_slow_extender_times_out_and_fails_the_cycle(server: ExtenderServer) -> None:
    server.verbs["filter"] = lambda args: {"NodeNames": names_of(args)}
    server.delay = 1.0
    sim = sim_with([{"urlPrefix": server.url, "filterVerb": "filter", "httpTimeout": "200ms"}])
    started = time.monotonic()
    web = one_cycle(sim, pod("web"))["web"]
    assert time.monotonic() - started < 0.9
    assert web.status == "Pending" and web.node is None
    assert f"extender '{server.url}' filter: no reply from {server.url}/filter within 0.2s" == web.message
    assert sim.store.get("Pod", "default", "web")["spec"].get("nodeName") is None


def test_ignorable_extender_that_times_out_is_skipped(server: ExtenderServer) -> None:
    server.verbs["filter"] = lambda args: {"NodeNames": []}
    server.delay = 1.0
    sim = sim_with(
        [{"urlPrefix": server.url, "filterVerb": "filter", "httpTimeout": "200ms", "ignorable": True}]
    )
    assert one_cycle(sim, pod("web"))["web"].status == "Scheduled"


def test_ignorable_extender_that_is_down_is_skipped() -> None:
    sim = sim_with(
        [
            {
                "urlPrefix": "http://127.0.0.1:9/none",
                "filterVerb": "filter",
                "prioritizeVerb": "prioritize",
                "weight": 1,
                "bindVerb": "bind",
                "ignorable": True,
            }
        ]
    )
    sim.store.create(pod("web"))
    sim.run()
    assert sim.outcomes()[0].status == "Scheduled"


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"{not json", "reply is not valid JSON"),
        ((500, {"Error": "x"}), "code 500"),
        ([1, 2], "reply is not a JSON object, got list"),
        ({"NodeNames": "n0"}, "NodeNames is not a list of strings"),
        ({"NodeNames": ["n0"], "FailedNodes": ["n1"]}, "FailedNodes is not a map of node name to message"),
    ],
    ids=["garbage", "http-500", "not-an-object", "names-not-a-list", "failed-not-a-map"],
)
def test_misbehaving_filter_extender_fails_only_that_cycle(
    server: ExtenderServer, answer: Any, message: str
) -> None:
    server.verbs["filter"] = lambda args: answer
    sim = sim_with(
        [
            {
                "urlPrefix": server.url,
                "filterVerb": "filter",
                "nodeCacheCapable": True,
                "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
            }
        ]
    )
    gpu = pod("gpu")
    gpu["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    out = one_cycle(sim, gpu, pod("plain"))
    assert out["gpu"].status == "Pending" and message in out["gpu"].message
    assert server.url in out["gpu"].message
    assert out["plain"].status == "Scheduled"


# --------------------------------------------------------------------------------------------------
# Prioritize


def test_prioritize_scores_are_scaled_by_weight(server: ExtenderServer) -> None:
    server.verbs["prioritize"] = lambda args: [
        {"Host": n, "Score": 10 if n == "n2" else 0} for n in names_of(args)
    ]
    sim = sim_with([{"urlPrefix": server.url, "prioritizeVerb": "prioritize", "weight": 3}], explain=True)
    web = one_cycle(sim, pod("web"))["web"]
    assert web.node == "n2"
    explain = sim.scheduler.explain.get(uid_of(sim, "web"))
    assert explain["finalScore"]["n2"][server.url] == 10 * 3 * 10
    assert explain["finalScore"]["n0"][server.url] == 0


def test_prioritize_concurrent_extenders_add_up(server: ExtenderServer) -> None:
    other = ExtenderServer()
    try:
        server.verbs["p"] = lambda args: [{"Host": n, "Score": 5 if n == "n0" else 0} for n in names_of(args)]
        other.verbs["p"] = lambda args: [{"Host": n, "Score": 4 if n == "n1" else 0} for n in names_of(args)]
        server.delay = other.delay = 0.2
        sim = sim_with(
            [
                {"urlPrefix": server.url, "prioritizeVerb": "p", "weight": 2},
                {"urlPrefix": other.url, "prioritizeVerb": "p", "weight": 2, "nodeCacheCapable": True},
            ],
            explain=True,
        )
        started = time.monotonic()
        web = one_cycle(sim, pod("web"))["web"]
        assert time.monotonic() - started < 0.39  # both called at once
        assert web.node == "n0"
        explain = sim.scheduler.explain.get(uid_of(sim, "web"))
        assert explain["finalScore"]["n1"][other.url] == 80
        assert explain["finalScore"]["n0"][server.url] == 100
    finally:
        other.close()


def test_prioritize_score_out_of_range_is_taken_as_given(server: ExtenderServer) -> None:
    # Upstream adds whatever int64 the extender answers; it does not check [0, 10].
    server.verbs["prioritize"] = lambda args: [
        {"Host": n, "Score": 11 if n == "n1" else 0} for n in names_of(args)
    ]
    sim = sim_with([{"urlPrefix": server.url, "prioritizeVerb": "prioritize", "weight": 1}], explain=True)
    web = one_cycle(sim, pod("web"))["web"]
    assert web.status == "Scheduled" and web.node == "n1"
    assert sim.scheduler.explain.get(uid_of(sim, "web"))["finalScore"]["n1"][server.url] == 110


def test_prioritize_host_listed_twice_counts_twice(server: ExtenderServer) -> None:
    server.verbs["prioritize"] = lambda args: [{"Host": "n0", "Score": 3}, {"Host": "n0", "Score": 4}]
    sim = sim_with([{"urlPrefix": server.url, "prioritizeVerb": "prioritize", "weight": 1}], explain=True)
    web = one_cycle(sim, pod("web"))["web"]
    assert web.node == "n0"
    assert sim.scheduler.explain.get(uid_of(sim, "web"))["finalScore"]["n0"][server.url] == 70


def _slow(args: dict[str, Any]) -> Any:
    time.sleep(0.5)
    return []


@pytest.mark.parametrize(
    "answer",
    [
        lambda args: b"{not json",
        lambda args: (500, {"Error": "x"}),
        lambda args: {"Error": "backend down"},
        lambda args: [{"Host": "n0"}],
        lambda args: [{"Host": "n0", "Score": 2**63}],
        _slow,
    ],
    ids=["garbage", "http-500", "not-a-list", "malformed-entry", "int64-overflow", "timeout"],
)
@pytest.mark.parametrize("ignorable", [False, True], ids=["not-ignorable", "ignorable"])
def test_failing_prioritize_is_ignored_for_scoring(
    server: ExtenderServer, answer: Handler, ignorable: bool
) -> None:
    """Upstream prioritizeNodes: prioritization errors from an extender are ignored, ignorable or not;
    the other extenders (and the plugins) rank the nodes."""
    other = ExtenderServer()
    try:
        server.verbs["prioritize"] = answer
        other.verbs["prioritize"] = lambda args: [
            {"Host": n, "Score": 10 if n == "n2" else 0} for n in names_of(args)
        ]
        sim = sim_with(
            [
                {
                    "urlPrefix": server.url,
                    "prioritizeVerb": "prioritize",
                    "weight": 5,
                    "httpTimeout": "200ms",
                    "ignorable": ignorable,
                },
                {"urlPrefix": other.url, "prioritizeVerb": "prioritize", "weight": 1},
            ],
            explain=True,
        )
        web = one_cycle(sim, pod("web"))["web"]
        assert web.status == "Scheduled" and web.node == "n2" and web.message == ""
        final = sim.scheduler.explain.get(uid_of(sim, "web"))["finalScore"]
        assert server.url not in final["n2"] and final["n2"][other.url] == 100
        assert "prioritize" in server.verbs_called()
    finally:
        other.close()


def test_prioritize_of_an_extender_that_is_down_is_ignored() -> None:
    sim = sim_with([{"urlPrefix": "http://127.0.0.1:9/none", "prioritizeVerb": "prioritize", "weight": 1}])
    sim.store.create(pod("web"))
    sim.run()
    assert sim.outcomes()[0].status == "Scheduled"


# Upstream TestSchedulerWithExtenders, the cases about prioritizers (case names verbatim), with
# FakeExtender's prioritizers served over HTTP: Node1PrioritizerExtender scores node1 10 and every
# other node 1, ErrorPrioritizerExtender fails.


def _node_prioritizer(favourite: str) -> Handler:
    return lambda args: [{"Host": n, "Score": 10 if n == favourite else 1} for n in names_of(args)]


def _error_prioritizer(args: dict[str, Any]) -> Any:
    return 500, {"Error": "some error"}


@pytest.mark.parametrize(
    ("prioritizers", "nodes", "expected"),
    [
        pytest.param([(_error_prioritizer, 1)], ["node1"], "node1", id="test 5"),
        pytest.param(
            [(_node_prioritizer("node1"), 1), (_node_prioritizer("node2"), 5)],
            ["node1", "node2"],
            "node2",
            id="test 6",
        ),
    ],
)
def test_scheduler_with_extenders(
    prioritizers: list[tuple[Handler, int]], nodes: list[str], expected: str
) -> None:
    servers = [ExtenderServer() for _ in prioritizers]
    try:
        for srv, (handler, _) in zip(servers, prioritizers, strict=True):
            srv.verbs["prioritize"] = handler
        registry = default_registry()
        config = config_from_dict(
            {
                **API,
                "extenders": [
                    {"urlPrefix": srv.url, "prioritizeVerb": "prioritize", "weight": weight}
                    for srv, (_, weight) in zip(servers, prioritizers, strict=True)
                ],
            },
            registry,
        )
        sim = Simulation(config, registry, seed=1)
        for name in nodes:
            sim.store.create(node(name))
        assert one_cycle(sim, pod("web"))["web"].node == expected
    finally:
        for srv in servers:
            srv.close()


# --------------------------------------------------------------------------------------------------
# Bind


def test_binding_extender_binds_instead_of_default_binder(server: ExtenderServer) -> None:
    server.verbs["bind"] = lambda args: {"Error": ""}
    sim = sim_with([{"urlPrefix": server.url, "bindVerb": "bind"}])
    sim.store.create(pod("web"))
    sim.run()
    (verb, args), *_ = server.calls
    assert verb == "bind"
    stored = sim.store.get("Pod", "default", "web")
    assert args == {
        "PodName": "web",
        "PodNamespace": "default",
        "PodUID": stored["metadata"]["uid"],
        "Node": stored["spec"]["nodeName"],
    }
    assert sim.outcomes()[0].status == "Scheduled"


def test_binding_extender_error_fails_the_binding(server: ExtenderServer) -> None:
    server.verbs["bind"] = lambda args: {"Error": "quota exceeded"}
    sim = sim_with([{"urlPrefix": server.url, "bindVerb": "bind"}])
    web = one_cycle(sim, pod("web"))["web"]
    assert web.status == "Pending"
    assert web.message == f"binding rejected: extender '{server.url}' bind: quota exceeded"
    assert not sim.store.get("Pod", "default", "web")["spec"].get("nodeName")
    assert not sim.scheduler.cache.pod_state(uid_of(sim, "web"))  # the assumed pod was forgotten


# --------------------------------------------------------------------------------------------------
# Preempt


def _full_cluster(server: ExtenderServer, **ext: Any) -> Simulation:
    sim = sim_with([{"urlPrefix": server.url, "preemptVerb": "preempt", **ext}], nodes=2)
    for i in range(2):
        sim.store.create(pod(f"low{i}", cpu="4", nodeName=f"n{i}"))
    sim.scheduler.informers.pump()
    return sim


def test_preempt_extender_narrows_candidates(server: ExtenderServer) -> None:
    def preempt(args: dict[str, Any]) -> dict[str, Any]:
        assert args["Pod"]["metadata"]["name"] == "high"
        victims = args["NodeNameToVictims"]
        assert set(victims) == {"n0", "n1"} and args["NodeNameToMetaVictims"] is None
        assert victims["n1"]["Pods"][0]["metadata"]["name"] == "low1"
        uid = victims["n1"]["Pods"][0]["metadata"]["uid"]
        return {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": uid}], "NumPDBViolations": 0}}}

    server.verbs["preempt"] = preempt
    sim = _full_cluster(server)
    high = one_cycle(sim, pod("high", cpu="2", priority=100))["high"]
    assert high.status == "Unschedulable"
    assert sim.store.get("Pod", "default", "low1") is None  # evicted
    assert sim.store.get("Pod", "default", "low0") is not None
    assert sim.store.get("Pod", "default", "high")["status"]["nominatedNodeName"] == "n1"


@pytest.mark.parametrize("ignorable", [False, True], ids=["not-ignorable", "ignorable"])
def test_failing_preempt_fails_the_pod_unless_ignorable(server: ExtenderServer, ignorable: bool) -> None:
    """Upstream callExtenders: a preempting extender's error fails the preemption, unless the
    extender is ignorable, which is then skipped and the dry run's candidates stand."""
    server.verbs["preempt"] = lambda args: (500, {"Error": "down"})
    sim = _full_cluster(server, ignorable=ignorable)
    high = one_cycle(sim, pod("high", cpu="2", priority=100))["high"]
    survivors = [n for n in ("low0", "low1") if sim.store.get("Pod", "default", n) is not None]
    if ignorable:
        assert len(survivors) == 1  # one victim evicted for the nominated node
        assert sim.store.get("Pod", "default", "high")["status"].get("nominatedNodeName")
    else:
        assert survivors == ["low0", "low1"]
        assert server.url in high.message and "code 500" in high.message


@pytest.mark.parametrize("ignorable", [False, True], ids=["not-ignorable", "ignorable"])
def test_failing_bind_fails_the_pod_unless_ignorable(server: ExtenderServer, ignorable: bool) -> None:
    server.verbs["bind"] = lambda args: {"Error": "quota exceeded"}
    sim = sim_with([{"urlPrefix": server.url, "bindVerb": "bind", "ignorable": ignorable}])
    web = one_cycle(sim, pod("web"))["web"]
    bound = sim.store.get("Pod", "default", "web")["spec"].get("nodeName")
    if ignorable:
        assert web.status == "Scheduled" and bound  # the default binder bound it
    else:
        assert web.status == "Pending" and not bound


def test_preempt_node_cache_capable_gets_meta_victims(server: ExtenderServer) -> None:
    def preempt(args: dict[str, Any]) -> dict[str, Any]:
        assert args["NodeNameToVictims"] is None
        meta = args["NodeNameToMetaVictims"]
        assert meta["n0"] == {"Pods": [{"UID": uid_of(sim, "low0")}], "NumPDBViolations": 0}
        return {"NodeNameToMetaVictims": {"n0": meta["n0"]}}

    server.verbs["preempt"] = preempt
    sim = _full_cluster(server, nodeCacheCapable=True)
    one_cycle(sim, pod("high", cpu="2", priority=100))
    assert sim.store.get("Pod", "default", "high")["status"]["nominatedNodeName"] == "n0"


def test_preempt_extender_vetoing_every_candidate_leaves_victims_alone(server: ExtenderServer) -> None:
    server.verbs["preempt"] = lambda args: {"NodeNameToMetaVictims": {}}
    sim = _full_cluster(server)
    high = one_cycle(sim, pod("high", cpu="2", priority=100))["high"]
    assert high.message.endswith("preemption: no candidate node for preemption")
    assert sim.store.get("Pod", "default", "low0") and sim.store.get("Pod", "default", "low1")


def test_preempt_extender_naming_an_unknown_victim_is_an_error(server: ExtenderServer) -> None:
    server.verbs["preempt"] = lambda args: {"NodeNameToMetaVictims": {"n0": {"Pods": [{"UID": "ghost"}]}}}
    sim = _full_cluster(server)
    high = one_cycle(sim, pod("high", cpu="2", priority=100))["high"]
    assert (
        "claims to preempt pod (UID: ghost) on node: n0, but the pod is not found on that node"
        in high.message
    )
    assert sim.store.get("Pod", "default", "low0") and sim.store.get("Pod", "default", "low1")


# --------------------------------------------------------------------------------------------------
# Pooling and thread safety


def test_calls_reuse_pooled_connections_and_are_thread_safe(server: ExtenderServer) -> None:
    seen: set[int] = set()

    def filt(args: dict[str, Any]) -> dict[str, Any]:
        seen.add(threading.get_ident())
        return {"NodeNames": names_of(args)}

    server.verbs["filter"] = filt
    ext = HTTPExtender(ExtenderConfig(url_prefix=server.url, filter_verb="filter", node_cache_capable=True))
    web = Pod.from_dict(pod_dict("web"))
    nodes = [node("n0"), node("n1")]
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(20):
                assert ext.filter(web, nodes).nodes == ["n0", "n1"]
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(server.calls) == 160
    # Keep-alive: far fewer server connections (one handler thread each) than calls.
    assert len(seen) <= 16
    ext.close()


# --------------------------------------------------------------------------------------------------
# Configuration (upstream validateExtenders)


@pytest.mark.parametrize(
    ("extenders", "field", "message"),
    [
        (
            [{"urlPrefix": "http://x", "prioritizeVerb": "p", "weight": -2}],
            "extenders[0].weight",
            "must have a positive weight applied to it",
        ),
        (
            [{"urlPrefix": "http://x", "bindVerb": "b"}, {"urlPrefix": "http://y", "bindVerb": "b"}],
            "extenders",
            "only one extender can implement bind",
        ),
        (
            [
                {"urlPrefix": "http://x", "managedResources": [{"name": "example.com/a"}]},
                {"urlPrefix": "http://y", "managedResources": [{"name": "example.com/a"}]},
            ],
            "extenders[1].managedResources[0].name",
            "duplicate extender managed resource name",
        ),
        (
            [{"urlPrefix": "http://x", "managedResources": [{"name": "memory"}]}],
            "extenders[0].managedResources[0].name",
            "invalid extended resource name",
        ),
        (
            [{"urlPrefix": "http://x", "enableHttps": True}],
            "extenders[0].enableHttps",
            'did you mean "enableHTTPS"',
        ),
        ([{"urlPrefix": "http://x", "httpTimeout": "soon"}], "extenders[0].httpTimeout", "invalid duration"),
        (
            [{"urlPrefix": "localhost:8888", "filterVerb": "f"}],
            "extenders[0].urlPrefix",
            "http:// or https://",
        ),
        (
            [{"urlPrefix": "http://x", "tlsConfig": {"caData": "!!"}}],
            "extenders[0].tlsConfig.caData",
            "base64",
        ),
    ],
    # The first three are upstream's validation test cases of the same names.
    ids=[
        "extender-negative-weight",
        "extender-duplicate-bind",
        "extender-duplicate-managed-resources",
        "invalid-extended-resource-name",
        "misspelt-field",
        "bad-timeout",
        "url-without-scheme",
        "bad-ca-data",
    ],
)
def test_extender_config_errors(extenders: list[dict[str, Any]], field: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        config_from_dict({**API, "extenders": extenders}, default_registry(), source="s.yaml")
    assert info.value.field == field and message in info.value.message


def test_extender_config_defaults_and_order() -> None:
    config = config_from_dict(
        {
            **API,
            "extenders": [
                {"urlPrefix": "http://a", "ignorable": True},
                {
                    "urlPrefix": "http://b",
                    "enableHTTPS": True,
                    "httpTimeout": "1m",
                    "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
                },
            ],
        },
        default_registry(),
    )
    a, b = config.extender_configs[1], config.extender_configs[0]  # ignorable ones go last
    assert (a.url_prefix, a.http_timeout, a.ignorable) == ("http://a", 5.0, True)
    assert (b.url_prefix, b.http_timeout, b.enable_https) == ("http://b", 60.0, True)
    fit = config.profiles[0].plugin_args["NodeResourcesFit"]
    assert fit.ignored_resources == ["example.com/gpu"]  # type: ignore[union-attr]


def test_ignored_by_scheduler_resource_is_not_checked_by_node_resources_fit(server: ExtenderServer) -> None:
    server.verbs["filter"] = lambda args: {"NodeNames": ["n1"]}
    sim = sim_with(
        [
            {
                "urlPrefix": server.url,
                "filterVerb": "filter",
                "nodeCacheCapable": True,
                "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
            }
        ]
    )
    gpu = pod("gpu")
    gpu["spec"]["containers"][0]["resources"]["requests"]["example.com/gpu"] = "1"
    # No node advertises example.com/gpu: only the extender decides.
    assert one_cycle(sim, gpu)["gpu"].node == "n1"


# --------------------------------------------------------------------------------------------------
# HTTPS (upstream makeTransport: enableHTTPS without a CA does not verify the server)


@pytest.fixture
def tls_server(tmp_path: Any) -> Iterator[tuple[ExtenderServer, bytes]]:
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    srv = ExtenderServer()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert), str(key))
    srv.httpd.socket = ctx.wrap_socket(srv.httpd.socket, server_side=True)
    srv.url = srv.url.replace("http://", "https://")
    yield srv, cert.read_bytes()
    srv.close()


def test_https_extender_without_a_ca_is_not_verified(tls_server: tuple[ExtenderServer, bytes]) -> None:
    server, _ = tls_server
    server.verbs["filter"] = lambda args: {"NodeNames": ["n1"]}
    sim = sim_with(
        [{"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True, "enableHTTPS": True}]
    )
    assert one_cycle(sim, pod("web"))["web"].node == "n1"


def test_https_extender_verified_with_ca_data(tls_server: tuple[ExtenderServer, bytes]) -> None:
    import base64

    server, cert = tls_server
    server.verbs["filter"] = lambda args: {"NodeNames": ["n2"]}
    tls = {"caData": base64.b64encode(cert).decode()}
    sim = sim_with(
        [{"urlPrefix": server.url, "filterVerb": "filter", "nodeCacheCapable": True, "tlsConfig": tls}]
    )
    assert one_cycle(sim, pod("web"))["web"].node == "n2"
    # A CA that did not sign the server's certificate: verification fails, the cycle errors.
    other = sim_with(
        [
            {
                "urlPrefix": server.url,
                "filterVerb": "filter",
                "nodeCacheCapable": True,
                "tlsConfig": {"caFile": "/etc/ssl/certs/ca-certificates.crt"},
            }
        ]
    )
    web = one_cycle(other, pod("web"))["web"]
    assert web.status == "Pending" and "CERTIFICATE_VERIFY_FAILED" in web.message
