"""The official Python client lists, creates and watches on a served cluster."""

from __future__ import annotations

import threading

import pytest

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config, watch  # noqa: E402
from tests.apiserver.conftest import WARDLE_API_SERVICE  # noqa: E402


def test_python_client_lists_and_watches(make_cluster):
    cluster = make_cluster(nodes=2)
    api_client = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    core = client.CoreV1Api(api_client)
    assert {n.metadata.name for n in core.list_node().items} == {"node-0", "node-1"}
    start = core.list_namespaced_pod("default").metadata.resource_version
    seen: list[tuple[str, str, str | None]] = []
    done = threading.Event()

    def follow() -> None:
        w = watch.Watch()
        for event in w.stream(
            core.list_namespaced_pod, "default", resource_version=start, timeout_seconds=10
        ):
            pod = event["object"]
            seen.append((event["type"], pod.metadata.name, pod.spec.node_name))
            if event["type"] == "MODIFIED" and pod.status.phase == "Running":
                w.stop()
                break
        done.set()

    follower = threading.Thread(target=follow)
    follower.start()
    body = client.V1Pod(
        metadata=client.V1ObjectMeta(name="hello", labels={"app": "hello"}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]),
    )
    created = core.create_namespaced_pod("default", body)
    assert created.metadata.uid
    assert done.wait(15)
    follower.join(5)
    assert seen[0][:2] == ("ADDED", "hello")
    assert any(node in ("node-0", "node-1") for _, _, node in seen)
    listed = core.list_namespaced_pod("default", label_selector="app=hello")
    assert [p.metadata.name for p in listed.items] == ["hello"]
    with pytest.raises(client.ApiException) as info:
        core.read_namespaced_pod("missing", "default")
    assert info.value.status == 404
    api_client.close()


def test_python_client_reads_services_endpoints_daemonsets_and_cronjobs(make_cluster):
    from tests.apiserver.kubectls import until

    cluster = make_cluster(nodes=2)
    api_client = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    core, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
    batch, discovery = client.BatchV1Api(api_client), client.DiscoveryV1Api(api_client)
    labels = {"app": "agent"}
    template = client.V1PodTemplateSpec(
        metadata=client.V1ObjectMeta(labels=labels),
        spec=client.V1PodSpec(
            containers=[
                client.V1Container(name="c", image="x", ports=[client.V1ContainerPort(container_port=9000)])
            ]
        ),
    )
    apps.create_namespaced_daemon_set(
        "default",
        client.V1DaemonSet(
            metadata=client.V1ObjectMeta(name="agent"),
            spec=client.V1DaemonSetSpec(
                selector=client.V1LabelSelector(match_labels=labels), template=template
            ),
        ),
    )
    svc = core.create_namespaced_service(
        "default",
        client.V1Service(
            metadata=client.V1ObjectMeta(name="agent"),
            spec=client.V1ServiceSpec(
                selector=labels, ports=[client.V1ServicePort(port=80, target_port=9000)]
            ),
        ),
    )
    assert svc.spec.cluster_ip.startswith("10.0.0.") and svc.spec.type == "ClusterIP"
    assert until(lambda: apps.read_namespaced_daemon_set("agent", "default").status.number_ready == 2)
    assert until(
        lambda: (
            len(
                (core.read_namespaced_endpoints("agent", "default").subsets or [client.V1EndpointSubset()])[
                    0
                ].addresses
                or []
            )
            == 2
        )
    )
    (slice_,) = discovery.list_namespaced_endpoint_slice(
        "default", label_selector="kubernetes.io/service-name=agent"
    ).items
    assert slice_.address_type == "IPv4" and all(e.conditions.ready for e in slice_.endpoints)
    assert [p.port for p in slice_.ports] == [9000]
    job_template = client.V1JobTemplateSpec(
        spec=client.V1JobSpec(
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(
                    restart_policy="Never", containers=[client.V1Container(name="c", image="x")]
                )
            )
        )
    )
    batch.create_namespaced_cron_job(
        "default",
        client.V1CronJob(
            metadata=client.V1ObjectMeta(name="nightly"),
            spec=client.V1CronJobSpec(schedule="0 3 * * *", job_template=job_template),
        ),
    )
    cj = batch.read_namespaced_cron_job("nightly", "default")
    assert cj.spec.concurrency_policy == "Allow" and cj.spec.successful_jobs_history_limit == 3
    lease = client.CoordinationV1Api(api_client).read_namespaced_lease("node-0", "kube-node-lease")
    assert lease.spec.holder_identity == "node-0" and lease.spec.renew_time is not None


def test_python_client_runs_replication_controllers(make_cluster):
    from tests.apiserver.kubectls import until

    cluster = make_cluster(nodes=2)
    api_client = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    core = client.CoreV1Api(api_client)
    manifest = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": "frontend"},
        "spec": {
            "replicas": 2,
            "template": {
                "metadata": {"labels": {"name": "frontend"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]},
            },
        },
    }
    created = core.create_namespaced_replication_controller("default", manifest)
    # The selector and the labels default to the template's labels.
    assert created.spec.selector == {"name": "frontend"} and created.metadata.labels == {"name": "frontend"}
    assert until(
        lambda: core.read_namespaced_replication_controller("frontend", "default").status.replicas == 2
    )
    pods = core.list_namespaced_pod("default", label_selector="name=frontend").items
    assert len(pods) == 2 and all(
        p.metadata.owner_references[0].kind == "ReplicationController" for p in pods
    )
    scale = core.read_namespaced_replication_controller_scale("frontend", "default")
    assert scale.spec.replicas == 2 and scale.status.selector == "name=frontend"
    core.delete_namespaced_replication_controller("frontend", "default", propagation_policy="Background")
    assert until(lambda: core.list_namespaced_pod("default", label_selector="name=frontend").items == [])
    api_client.close()


def test_python_client_stores_rbac_objects_and_api_services(make_cluster):
    from tests.apiserver.kubectls import until

    cluster = make_cluster(nodes=0, schedulers=False)
    api_client = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    rbac = client.RbacAuthorizationV1Api(api_client)
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "pod-reader"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "watch", "list"]}],
    }
    rbac.create_namespaced_role("default", role)
    assert rbac.read_namespaced_role("pod-reader", "default").rules[0].resources == ["pods"]
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "read-pods"},
        "subjects": [{"kind": "User", "name": "jane"}],
        "roleRef": {"kind": "Role", "name": "pod-reader"},
    }
    made = rbac.create_namespaced_role_binding("default", binding)
    assert made.role_ref.api_group == "rbac.authorization.k8s.io"
    assert made.subjects[0].api_group == "rbac.authorization.k8s.io"
    with pytest.raises(client.ApiException) as refused:
        rbac.create_namespaced_role(
            "default",
            {
                **role,
                "metadata": {"name": "bad"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": []}],
            },
        )
    assert refused.value.status == 422 and "verbs must contain at least one value" in refused.value.body

    registration = client.ApiregistrationV1Api(api_client)
    service = WARDLE_API_SERVICE
    registration.create_api_service(service)
    with pytest.raises(client.ApiException) as again:
        registration.create_api_service(service)
    # The Status text as kube-apiserver writes it: metav1.Status's field order, a final newline.
    assert again.value.body == (
        '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",'
        '"message":"apiservices.apiregistration.k8s.io \\"v1alpha1.wardle.k8s.io\\" already exists",'
        '"reason":"AlreadyExists","details":{"name":"v1alpha1.wardle.k8s.io",'
        '"group":"apiregistration.k8s.io","kind":"apiservices"},"code":409}\n'
    )

    def available() -> tuple[str, str] | None:
        got = registration.read_api_service("v1alpha1.wardle.k8s.io")
        conditions = got.status.conditions if got.status else None
        return (conditions[0].status, conditions[0].reason) if conditions else None

    assert until(lambda: available() == ("False", "ServiceNotFound"))
    api_client.close()
