"""The reviews a client asks about itself: SelfSubjectAccessReview (``kubectl auth can-i``),
SelfSubjectRulesReview (``can-i --list``) and SelfSubjectReview (``kubectl auth whoami``). The one
token ``serve`` accepts stands for ``kubesched-admin``, allowed everything; a request without it gets
401 before any review."""

from __future__ import annotations

import pytest
from tests.apiserver.kubectls import KUBECTLS, kubectl_runner, ok
from tests.apiserver.test_protobuf import _envelope, _field

SSAR = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
SSRR = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"
SSR = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def _ssar(spec):
    return {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1", "spec": spec}


def test_access_reviews_are_allowed_for_the_token(cluster):
    spec = {"resourceAttributes": {"namespace": "default", "verb": "create", "resource": "pods"}}
    code, answer, _ = cluster.request("POST", SSAR, _ssar(spec))
    assert code == 201
    assert answer == {
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": {"allowed": True},
    }
    code, answer, _ = cluster.request(
        "POST", SSAR, _ssar({"nonResourceAttributes": {"path": "/x", "verb": "get"}})
    )
    assert code == 201 and answer["status"] == {"allowed": True}
    assert cluster.request("POST", SSAR, _ssar(spec), token="wrong")[0] == 401


def test_access_reviews_are_validated_as_upstream(cluster):
    code, status, _ = cluster.request("POST", SSAR, _ssar({}))
    assert code == 422 and status["reason"] == "Invalid"
    assert status["message"] == (
        '.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": '
        "exactly one of nonResourceAttributes or resourceAttributes must be specified"
    )
    assert status["details"]["group"] == "authorization.k8s.io" and "kind" not in status["details"]
    both = {"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"path": "/x", "verb": "get"}}
    code, status, _ = cluster.request("POST", SSAR, _ssar(both))
    assert code == 422
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": 'Invalid value: authorization.NonResourceAttributes{Path:"/x", Verb:"get"}: '
            "cannot be specified in combination with resourceAttributes",
            "field": "spec.nonResourceAttributes",
        }
    ]
    named = {**_ssar({"resourceAttributes": {"verb": "get"}}), "metadata": {"name": "x"}}
    code, status, _ = cluster.request("POST", SSAR, named)
    assert code == 422 and status["details"]["causes"][0]["field"] == "metadata"
    assert status["details"]["causes"][0]["message"].endswith(": must be empty")
    code, status, _ = cluster.request("POST", SSAR, _ssar("all"))
    assert code == 400 and "cannot unmarshal string into Go struct field" in status["message"]
    code, status, _ = cluster.request("POST", SSAR, {**_ssar({}), "kind": "Pod"})
    assert code == 400


def test_reviews_are_only_created(cluster):
    assert cluster.request("GET", SSAR)[0] == 405
    assert cluster.request("DELETE", SSAR)[0] == 405
    assert cluster.request("GET", f"{SSAR}/x")[0] == 404
    assert (
        cluster.request("GET", f"/apis/authorization.k8s.io/v1/namespaces/default/{SSAR.split('/')[-1]}")[0]
        == 404
    )
    code, resources, _ = cluster.request("GET", "/apis/authorization.k8s.io/v1")
    assert code == 200
    assert {r["name"]: r["verbs"] for r in resources["resources"]} == {
        "selfsubjectaccessreviews": ["create"],
        "selfsubjectrulesreviews": ["create"],
        "subjectaccessreviews": ["create"],
    }
    code, resources, _ = cluster.request("GET", "/apis/authentication.k8s.io/v1")
    entries = {r["name"]: r for r in resources["resources"]}
    assert set(entries) == {"selfsubjectreviews", "tokenreviews"}
    assert not any(r["namespaced"] for r in entries.values())
    groups = [g["name"] for g in cluster.request("GET", "/apis")[1]["groups"]]
    assert "authorization.k8s.io" in groups and "authentication.k8s.io" in groups


def test_rules_reviews_answer_everything_in_a_namespace(cluster):
    body = {
        "kind": "SelfSubjectRulesReview",
        "apiVersion": "authorization.k8s.io/v1",
        "spec": {"namespace": "x"},
    }
    code, answer, _ = cluster.request("POST", SSRR, body)
    assert code == 201
    assert answer["status"] == {
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        "incomplete": False,
    }
    code, status, _ = cluster.request("POST", SSRR, {**body, "spec": {}})
    assert code == 400 and status["message"] == "no namespace on request"


def test_self_subject_review_names_the_tokens_user_or_the_impersonated_one(cluster):
    body = {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1"}
    code, answer, _ = cluster.request("POST", SSR, body)
    assert code == 201 and answer["kind"] == "SelfSubjectReview" and answer["metadata"]["creationTimestamp"]
    assert answer["status"] == {
        "userInfo": {"username": "kubesched-admin", "groups": ["system:masters", "system:authenticated"]}
    }
    code, answer, _ = cluster.request("POST", SSR, body, headers={"Impersonate-User": "bob"})
    assert answer["status"]["userInfo"] == {"username": "bob", "groups": ["system:authenticated"]}
    sa = {"Impersonate-User": "system:serviceaccount:ci:builder"}
    code, answer, _ = cluster.request("POST", SSR, body, headers=sa)
    assert answer["status"]["userInfo"]["groups"] == [
        "system:serviceaccounts",
        "system:serviceaccounts:ci",
        "system:authenticated",
    ]
    extra = {"Impersonate-User": "ann", "Impersonate-Group": "devs", "Impersonate-Extra-Scopes": "view"}
    code, answer, _ = cluster.request("POST", SSR, body, headers=extra)
    assert answer["status"]["userInfo"] == {
        "username": "ann",
        "groups": ["devs", "system:authenticated"],
        "extra": {"scopes": ["view"]},
    }
    code, status, _ = cluster.request("POST", SSR, body, headers={"Impersonate-Group": "devs"})
    assert code == 500 and "without impersonating a user" in status["message"]


def test_reviews_in_protobuf_as_kubectl_sends_them(cluster):
    attributes = _field(1, b"default") + _field(2, b"list") + _field(5, b"pods")
    raw = _field(1, b"") + _field(2, _field(1, attributes))
    code, answer, _ = cluster.request(
        "POST",
        SSAR,
        _envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview", raw),
        content_type=PROTOBUF,
    )
    assert code == 201, answer
    assert answer["spec"] == {
        "resourceAttributes": {"namespace": "default", "verb": "list", "resource": "pods"}
    }
    raw = _field(2, _field(1, b"default"))
    code, answer, _ = cluster.request(
        "POST",
        SSRR,
        _envelope("authorization.k8s.io/v1", "SelfSubjectRulesReview", raw),
        content_type=PROTOBUF,
    )
    assert code == 201 and answer["spec"] == {"namespace": "default"}
    code, answer, _ = cluster.request(
        "POST", SSR, _envelope("authentication.k8s.io/v1", "SelfSubjectReview", b""), content_type=PROTOBUF
    )
    assert code == 201 and answer["status"]["userInfo"]["username"] == "kubesched-admin"


@pytest.mark.parametrize("binary", KUBECTLS)
def test_kubectl_auth_can_i_and_whoami(cluster, binary):
    kubectl = kubectl_runner(binary, cluster.kubeconfig)
    assert ok(kubectl("auth", "can-i", "create", "pods")) == "yes\n"
    assert ok(kubectl("auth", "can-i", "delete", "nodes", "--as=bob")) == "yes\n"
    assert ok(kubectl("auth", "can-i", "get", "/healthz")) == "yes\n"
    listed = ok(kubectl("auth", "can-i", "--list", "-n", "kube-system"))
    assert listed.splitlines()[1].split() == ["*.*", "[]", "[]", "[*]"], listed
    if binary.endswith("refcp/bin/kubectl"):
        return  # kubectl 1.20 has no whoami
    out = ok(kubectl("auth", "whoami"))
    assert out.split("\n")[1:3] == [
        "Username    kubesched-admin",
        "Groups      [system:masters system:authenticated]",
    ], out
    out = ok(kubectl("auth", "whoami", "--as=bob", "-o", "jsonpath={.status.userInfo.username}"))
    assert out == "bob"


TR = "/apis/authentication.k8s.io/v1/tokenreviews"
SAR = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def test_token_reviews_know_the_servers_token_only(cluster):
    """What a server that delegates authentication (``kubesched run``'s endpoint) asks."""

    def review(token):
        body = {"kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1", "spec": {"token": token}}
        code, answer, _ = cluster.request("POST", TR, body)
        assert code == 201 and answer["kind"] == "TokenReview"
        return answer["status"]

    assert review(cluster.token) == {
        "authenticated": True,
        "user": {"username": "kubesched-admin", "groups": ["system:masters", "system:authenticated"]},
    }
    assert review(cluster.token + "x") == {"user": {}, "error": "invalid bearer token"}
    code, status, _ = cluster.request(
        "POST", TR, {"kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1"}
    )
    assert (code, status["message"]) == (400, "token is required for TokenReview in authentication")
    # Asking needs the token, as every request to serve.
    assert cluster.request("POST", TR, {"spec": {"token": "x"}}, token=None)[0] == 401


def test_subject_access_reviews_allow_every_authenticated_user(cluster):
    """What a server that delegates authorization asks: serve allows every authenticated user
    everything (AlwaysAllow) and takes no anonymous request, so the anonymous user is refused."""

    def review(spec):
        body = {"kind": "SubjectAccessReview", "apiVersion": "authorization.k8s.io/v1", "spec": spec}
        code, answer, _ = cluster.request("POST", SAR, body)
        assert code == 201, answer
        return answer["status"]

    metrics = {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}
    assert review({**metrics, "user": "system:serviceaccount:monitoring:prometheus"}) == {"allowed": True}
    assert review({**metrics, "groups": ["system:authenticated"]}) == {"allowed": True}
    assert review({**metrics, "user": "system:anonymous", "groups": ["system:unauthenticated"]}) == {
        "allowed": False
    }
    assert review({**metrics, "user": "someone", "groups": ["system:unauthenticated"]}) == {"allowed": False}
    code, status, _ = cluster.request(
        "POST", SAR, {"kind": "SubjectAccessReview", "apiVersion": "authorization.k8s.io/v1", "spec": {}}
    )
    assert code == 422
    assert [c["field"] for c in status["details"]["causes"]] == ["spec.resourceAttributes", "spec.user"]
