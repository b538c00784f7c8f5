"""The web UI in a real browser: headless Chromium (Debian's ``chromium`` and ``chromium-driver``)
driven by Selenium against a served cluster. Skipped when no browser is installed.

With ``KUBESCHED_UI_SCREENSHOTS=DIR`` set, each view is saved as a PNG in DIR (the pictures in
docs/ui.md)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.apiserver.conftest import pod

from kubesched.sim.replay import replay_timeline

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.common.exceptions import StaleElementReferenceException  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="no chromium and chromedriver (apt-get install chromium chromium-driver)",
)

SHOTS = os.environ.get("KUBESCHED_UI_SCREENSHOTS")

MANIFESTS = """\
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
spec:
  containers:
  - name: c
    image: nginx
    resources: {requests: {cpu: "2", memory: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: giant, namespace: shop}
spec:
  containers:
  - name: c
    image: nginx
    resources: {requests: {cpu: "500"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec: {weight: 2, capability: {cpu: "8"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: train, namespace: shop}
spec: {minMember: 2, queue: research}
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: leaf-a}
spec:
  tier: 1
  tierName: leaf
  members:
  - type: Node
    selector: {regexMatch: {pattern: "^node-[01]$"}}
"""


@pytest.fixture
def browser() -> Iterator[Any]:
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        # The served cluster's certificate is signed by its own CA.
        "--ignore-certificate-errors",
        "--window-size=1500,1000",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def wait(driver: Any, check: Any, timeout: float = 20.0) -> Any:
    return WebDriverWait(driver, timeout, poll_frequency=0.1).until(lambda d: check(d))


def find(driver: Any, css: str) -> Any:
    found = driver.find_elements(By.CSS_SELECTOR, css)
    return found[0] if found else None


def text(driver: Any, css: str) -> str:
    """The text of the first element ``css`` selects now ("" when none): the page redraws its
    views as the watches deliver changes, so an element found earlier may be gone."""
    for _ in range(50):
        try:
            found = find(driver, css)
            return str(found.text) if found is not None else ""
        except StaleElementReferenceException:
            continue
    return ""


def click(driver: Any, css: str) -> None:
    def clicked(d: Any) -> bool:
        try:
            found = find(d, css)
            if found is None:
                return False
            found.click()
            return True
        except StaleElementReferenceException:
            return False

    wait(driver, clicked)


def shot(driver: Any, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(Path(SHOTS) / f"{name}.png"))


def test_apply_a_manifest_and_see_why_from_the_page(make_cluster: Any, browser: Any) -> None:
    cluster = make_cluster(nodes=3, scheduling_results=True)
    base = f"https://127.0.0.1:{cluster.port}/ui/"
    # The one-time link signs in and is gone from the address bar.
    browser.get(base + "#code=" + cluster.served.api.login_codes.issue())
    wait(browser, lambda d: find(d, '[data-node="node-2"]'))
    assert "#code" not in browser.current_url
    card = text(browser, '[data-node="node-0"]')
    assert "cpu" in card and "0 / 32" in card
    shot(browser, "cluster")

    browser.find_element(By.CSS_SELECTOR, '[data-view="edit"]').click()
    browser.execute_script("document.getElementById('editor').value = arguments[0]", MANIFESTS)
    browser.find_element(By.ID, "apply").click()
    wait(browser, lambda d: text(d, "#apply-result").count("applied") == 5)
    shot(browser, "edit")

    browser.find_element(By.CSS_SELECTOR, '[data-view="pods"]').click()
    # The unschedulable pod comes first, with its reason.
    wait(browser, lambda d: "Unschedulable" in text(d, '#pod-table tr[data-pod="shop/giant"]'))
    first = text(browser, "#pod-table tr[data-pod]")
    assert first.startswith("shop/giant")
    assert "0/3 nodes are available: 3 Insufficient cpu." in first
    click(browser, '#pod-table tr[data-pod="shop/giant"]')
    wait(browser, lambda d: text(d, "#filter-summary"))
    assert "NodeResourcesFit rejected 3" in text(browser, "#filter-summary")
    assert "Insufficient cpu" in text(browser, "#filter-table")
    shot(browser, "pods-unschedulable")

    # The scheduled pod: its node, and every Score plugin's raw / normalized / weighted score.
    wait(
        browser,
        lambda d: "Running" in d.find_element(By.CSS_SELECTOR, '#pod-table tr[data-pod="shop/web"]').text,
    )
    browser.find_element(By.CSS_SELECTOR, '#pod-table tr[data-pod="shop/web"]').click()
    chosen = wait(browser, lambda d: find(d, "#selected-node"))
    node = cluster.request("GET", "/api/v1/namespaces/shop/pods/web")[1]["spec"]["nodeName"]
    assert chosen.text == f"chosen node: {node}"
    scores = wait(browser, lambda d: find(d, "#score-table"))
    assert "TaintToleration" in scores.text and "NodeResourcesBalancedAllocation" in scores.text
    assert find(browser, "#score-table tr.chosen").text.startswith(node)
    shot(browser, "pods-scheduled")

    click(browser, '[data-view="queues"]')
    wait(browser, lambda d: text(d, '[data-queue="research"]'))
    assert "cpu=8" in text(browser, '[data-queue="research"]')
    assert text(browser, '[data-podgroup="shop/train"]').startswith("shop/train research 2")
    shot(browser, "queues")

    # Live: the cluster view shows the pod's requests on its node without a reload.
    browser.find_element(By.CSS_SELECTOR, '[data-view="cluster"]').click()
    wait(browser, lambda d: "2 / 32" in text(d, f'[data-node="{node}"]'))
    # Cordon from the card.
    click(browser, '[data-node="node-1"] button')
    wait(browser, lambda d: cluster.request("GET", "/api/v1/nodes/node-1")[1]["spec"].get("unschedulable"))
    wait(browser, lambda d: "cordoned" in text(d, '[data-node="node-1"]'))
    # Grouped by HyperNode: the leaf's regular expression picks two of the three nodes.
    Select(browser.find_element(By.ID, "node-group")).select_by_value("hypernode")
    wait(browser, lambda d: "HyperNode leaf-a (tier 1 leaf): 2 node(s)" in text(d, "#zones"))
    assert "(no HyperNode): 1 node(s)" in text(browser, "#zones")


def test_sign_in_with_the_token_and_see_refusals_located(make_cluster: Any, browser: Any) -> None:
    cluster = make_cluster(nodes=1)
    browser.get(f"https://127.0.0.1:{cluster.port}/ui/")
    wait(browser, lambda d: d.find_element(By.ID, "login").is_displayed())
    browser.find_element(By.ID, "token").send_keys("wrong")
    browser.find_element(By.CSS_SELECTOR, "#login-form button").click()
    wait(browser, lambda d: "refused" in d.find_element(By.ID, "login-error").text)
    browser.find_element(By.ID, "token").send_keys(cluster.token)
    browser.find_element(By.CSS_SELECTOR, "#login-form button").click()
    wait(browser, lambda d: find(d, '[data-node="node-0"]'))

    browser.find_element(By.CSS_SELECTOR, '[data-view="edit"]').click()
    bad = "apiVersion: v1\nkind: Pod\nmetadata: {name: Not_A_Name}\nspec: {containers: [{name: c, image: x}]}"
    browser.execute_script("document.getElementById('editor').value = arguments[0]", "a: 1\n---\n" + bad)
    browser.find_element(By.ID, "apply").click()
    wait(browser, lambda d: text(d, "#apply-result").count("line") >= 2)
    result = text(browser, "#apply-result")
    assert "line 1: Object 'Kind' is missing" in result
    assert 'line 3: Pod Not_A_Name: Pod "Not_A_Name" is invalid' in result
    assert "metadata.name: Invalid value" in result

    # A configuration given as JSON is shown as its text.
    conf = '{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}'
    put = cluster.request("PUT", "/kubesched/v1/config/scheduler", conf, content_type="application/json")
    assert put[0] == 200
    browser.find_element(By.CSS_SELECTOR, '[data-view="config"]').click()
    wait(browser, lambda d: d.find_element(By.ID, "config-scheduler").get_attribute("value") == conf)
    wait(browser, lambda d: d.find_element(By.ID, "config-batch").get_attribute("value"))
    browser.execute_script("document.getElementById('config-batch').value = 'actions: \"enqueue, nosuch\"'")
    browser.find_element(By.CSS_SELECTOR, '.replace-config[data-config="batch"]').click()
    wait(browser, lambda d: "kept" in text(d, "#config-batch-result"))
    assert "nosuch" in text(browser, "#config-batch-result")
    shot(browser, "config")


def test_gpus_on_the_node_cards(make_cluster: Any, browser: Any) -> None:
    cluster = make_cluster(nodes=1, node_gpus=4, node_gpu_model="A100")
    gpu = pod("trainer")
    # A limit alone is the request, as kube-apiserver defaults it.
    gpu["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpu": "3"}
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", gpu)[0] == 201
    browser.get(f"https://127.0.0.1:{cluster.port}/ui/#code=" + cluster.served.api.login_codes.issue())
    wait(browser, lambda d: "nvidia.com/gpu\n3 / 4" in text(d, '[data-node="node-0"]'))
    assert "A100" in text(browser, '[data-node="node-0"] h3')


def test_the_cluster_view_reads_a_summary_not_every_pod(make_cluster: Any, browser: Any) -> None:
    cluster = make_cluster(nodes=2)
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", pod("web", cpu="1500m"))[0] == 201
    browser.get(f"https://127.0.0.1:{cluster.port}/ui/#code=" + cluster.served.api.login_codes.issue())
    wait(browser, lambda d: "cpu\n1.5 / " in text(d, "#zones"))
    assert "1 pod(s): default/web" in text(browser, "#zones")
    fetched = "return performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname)"
    paths = browser.execute_script(fetched)
    assert "/kubesched/v1/cluster" in paths
    assert "/api/v1/pods" not in paths
    # Live: a pod placed after the first drawing shows up on its node's card.
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", pod("api", cpu="250m"))[0] == 201
    wait(browser, lambda d: "default/api" in text(d, "#zones"))
    # The Pods view reads a page of rows the server makes, not every pod either.
    click(browser, '[data-view="pods"]')
    wait(browser, lambda d: "default/api" in text(d, "#pod-table"))
    paths = browser.execute_script(fetched)
    assert "/kubesched/v1/pods" in paths
    assert "/api/v1/pods" not in paths


def test_the_cluster_view_redraws_only_what_changed(make_cluster: Any, browser: Any) -> None:
    cluster = make_cluster(nodes=2)
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", pod("web", cpu="1500m"))[0] == 201
    browser.get(f"https://127.0.0.1:{cluster.port}/ui/#code=" + cluster.served.api.login_codes.issue())
    wait(browser, lambda d: "cpu\n1.5 / " in text(d, "#zones"))
    browser.execute_script(
        "for (const c of document.querySelectorAll('[data-node]')) c.dataset.mark = 'kept';"
        "window.drawings = 0; const draw = render; render = () => { window.drawings++; draw(); };"
    )
    polls = (
        "return performance.getEntriesByType('resource')"
        ".filter((e) => e.name.includes('/kubesched/v1/cluster')).length"
    )
    # A change that alters no sum: the page polls on and is answered 304, and draws nothing again.
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}, "data": {"a": "b"}}
    assert cluster.request("POST", "/api/v1/namespaces/default/configmaps", cm)[0] == 201
    before = browser.execute_script(polls)
    wait(browser, lambda d: d.execute_script(polls) >= before + 2)
    assert browser.execute_script("return window.drawings") == 0
    # A pod placed: its node's card is filled in again where it is, not drawn anew.
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", pod("api", cpu="250m"))[0] == 201
    wait(browser, lambda d: "default/api" in text(d, "#zones"))
    marks = "return [...document.querySelectorAll('[data-node]')].map((c) => c.dataset.mark ?? null)"
    assert browser.execute_script(marks) == ["kept", "kept"]
    assert "cpu\n1.75 / " in text(browser, "#zones") or "cpu\n0.25 / " in text(browser, "#zones")
    # A node changed: its card is drawn anew, the other kept.
    patch = {"spec": {"unschedulable": True}}
    answer = cluster.request(
        "PATCH", "/api/v1/nodes/node-1", patch, content_type="application/strategic-merge-patch+json"
    )
    assert answer[0] == 200
    wait(browser, lambda d: "cordoned" in text(d, '[data-node="node-1"]'))
    assert browser.execute_script(marks) == ["kept", None]


def test_the_pods_view_pages_waiting_pods_first_and_stays_live(make_cluster: Any, browser: Any) -> None:
    cluster = make_cluster(nodes=1)
    made = [pod(f"huge-{i}", cpu="900") for i in range(3)] + [pod(f"small-{i:03d}") for i in range(102)]
    for one in made:
        assert cluster.request("POST", "/api/v1/namespaces/default/pods", one)[0] == 201
    browser.get(f"https://127.0.0.1:{cluster.port}/ui/#code=" + cluster.served.api.login_codes.issue())
    wait(browser, lambda d: find(d, '[data-node="node-0"]'))
    click(browser, '[data-view="pods"]')
    wait(browser, lambda d: "Unschedulable" in text(d, '#pod-table tr[data-pod="default/huge-2"]'))
    wait(browser, lambda d: text(d, "#pod-summary") == "105 pod(s), 3 not placed")
    # The pods waiting for a node first, with the scheduler's reason; only one page is drawn.
    rows = browser.find_elements(By.CSS_SELECTOR, "#pod-table tr[data-pod]")
    assert [r.get_attribute("data-pod") for r in rows[:4]] == [
        "default/huge-0",
        "default/huge-1",
        "default/huge-2",
        "default/small-000",
    ]
    assert "0/1 nodes are available: 1 Insufficient cpu." in rows[0].text
    assert len(rows) == 100
    assert "page 1 of 2 (105)" in text(browser, "#pod-pager")
    click(browser, "#pod-pager button:last-child")
    wait(browser, lambda d: "page 2 of 2" in text(d, "#pod-pager"))
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#pod-table tr[data-pod]")) == 5)
    assert text(browser, "#pod-table tr[data-pod]").startswith("default/small-097")
    # Filtered and sorted on the server; the filter starts again at the first page.
    browser.find_element(By.ID, "pod-filter").send_keys("huge")
    wait(browser, lambda d: text(d, "#pod-summary") == "3 pod(s) of 105, 3 not placed")
    assert "page 1 of 1 (3)" in text(browser, "#pod-pager")
    # Live: a waiting pod deleted through the API leaves the page without a reload, and the
    # selected pod's details follow it.
    click(browser, '#pod-table tr[data-pod="default/huge-1"]')
    wait(browser, lambda d: "not on a node" in text(d, "#pod-detail"))
    assert cluster.request("DELETE", "/api/v1/namespaces/default/pods/huge-0")[0] == 200
    wait(browser, lambda d: text(d, "#pod-summary") == "2 pod(s) of 104, 2 not placed")
    assert not find(browser, '#pod-table tr[data-pod="default/huge-0"]')
    assert cluster.request("DELETE", "/api/v1/namespaces/default/pods/huge-1")[0] == 200
    wait(browser, lambda d: not text(d, "#pod-detail"))


def test_names_and_annotations_are_shown_as_text(make_cluster: Any, browser: Any) -> None:
    cluster = make_cluster(nodes=1, scheduling_results=True)
    hostile = "<img src=x onerror=window.pwned=1>"
    gated = pod("gated", schedulingGates=[{"name": "example.com/wait"}])
    result = {hostile: {"X": "<script>window.pwned=1</script>"}}
    gated["metadata"]["annotations"] = {
        "kube-scheduler-simulator.sigs.k8s.io/filter-result": json.dumps(result),
        "scheduling.k8s.io/group-name": hostile,
    }
    assert cluster.request("POST", "/api/v1/namespaces/default/pods", gated)[0] == 201
    browser.get(f"https://127.0.0.1:{cluster.port}/ui/#code=" + cluster.served.api.login_codes.issue())
    wait(browser, lambda d: find(d, '[data-node="node-0"]'))
    browser.find_element(By.CSS_SELECTOR, '[data-view="pods"]').click()
    click(browser, '#pod-table tr[data-pod="default/gated"]')
    wait(browser, lambda d: text(d, "#filter-table"))
    assert hostile in text(browser, "#filter-table")
    assert "<script>" in text(browser, "#filter-table")
    assert browser.execute_script("return window.pwned") is None
    assert not browser.find_elements(By.CSS_SELECTOR, "#pod-detail img, #pod-detail script")


REPLAY = """\
apiVersion: v1
kind: Node
metadata: {name: small}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
"""
for i in range(3):
    REPLAY += f"""---
apiVersion: v1
kind: Pod
metadata:
  name: job-{i}
  annotations: {{kubesched.io/duration: 10m}}
spec: {{containers: [{{name: c, image: x, resources: {{requests: {{cpu: "2"}}}}}}]}}
"""


def test_replay_steps_through_virtual_time(make_cluster: Any, browser: Any) -> None:
    cluster = make_cluster(nodes=1, replayer=replay_timeline)
    browser.get(f"https://127.0.0.1:{cluster.port}/ui/#code=" + cluster.served.api.login_codes.issue())
    wait(browser, lambda d: find(d, '[data-node="node-0"]'))
    click(browser, '[data-view="replay"]')
    browser.execute_script("document.getElementById('replay-editor').value = arguments[0]", REPLAY)
    click(browser, "#run-replay")
    wait(browser, lambda d: "3 pod(s) on 1 node(s), 20m of virtual time" in text(d, "#replay-result"))

    def at(seconds: float) -> None:
        browser.execute_script(
            "const s = document.getElementById('replay-time'); s.value = arguments[0];"
            "s.dispatchEvent(new Event('input'))",
            seconds,
        )

    # At the start two pods fill the node and the third waits; after the first ten minutes it runs.
    at(0)
    assert "1 pod(s) waiting at t" in text(browser, "#replay-waiting")
    assert "4 / 4" in text(browser, '#replay-nodes [data-node="small"]')
    at(900)
    assert "0 pod(s) waiting at t" in text(browser, "#replay-waiting")
    assert "2 / 4" in text(browser, '#replay-nodes [data-node="small"]')
    assert len(browser.find_elements(By.CSS_SELECTOR, "#replay-charts svg polyline")) >= 4
    shot(browser, "replay")
    # The served cluster was not touched.
    assert cluster.request("GET", "/api/v1/nodes/small")[0] == 404
