"""``kubesched run``: both schedulers against a real cluster, with kube-scheduler's flags where it
has them."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Any

from kubesched.batch.conf import BATCH_SCHEDULER_NAME
from kubesched.batch.conf_loader import load_batch_conf
from kubesched.cli.options import (
    EXIT_RUN_FAILED,
    bool_flag,
    duration_flag,
    feature_gates_flag,
    gated,
    int_flag,
    plugin_flag,
    plugin_registry_of,
    positive_flag,
    qps_flag,
    seed_flag,
)
from kubesched.framework.config import load_config, parse_feature_gates


def add_parser(sub: Any) -> None:
    run = sub.add_parser(
        "run",
        help="schedule the pods of a real cluster (kubeconfig, or in-cluster when run in a pod)",
        description="Run both schedulers against a Kubernetes cluster. Flags are kube-scheduler's where "
        "it has them. Pods are taken by spec.schedulerName: the profiles of --config (default-scheduler "
        "unless it names others) and volcano for the batch scheduler.",
    )
    run.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig file (default: KUBECONFIG, ~/.kube/config, or the pod's service account)",
    )
    run.add_argument("--context", help="kubeconfig context to use (default: its current-context)")
    run.add_argument(
        "--config", metavar="FILE", help="KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1)"
    )
    run.add_argument("--batch-conf", metavar="FILE", help="Volcano scheduler conf for the batch scheduler")
    run.add_argument(
        "--batch-scheduler-name",
        action="append",
        metavar="NAME",
        help="spec.schedulerName of the pods the batch scheduler takes, as Volcano's --scheduler-name "
        "(repeatable; default volcano)",
    )
    feature_gates_flag(run)
    plugin_flag(run)
    _leader_election_flags(run)
    _client_and_endpoint_flags(run)
    run.add_argument(
        "--seed", type=seed_flag, default=None, help="seed for random tie-breaks (default: random)"
    )
    run.set_defaults(func=cmd_run)


def _leader_election_flags(run: argparse.ArgumentParser) -> None:
    """kube-scheduler's ``--leader-elect*`` flags."""
    run.add_argument(
        "--leader-elect",
        nargs="?",
        const=True,
        default=True,
        type=bool_flag,
        metavar="BOOL",
        help="elect a leader among replicas before scheduling (default true)",
    )
    run.add_argument(
        "--no-leader-elect", dest="leader_elect", action="store_false", help="same as --leader-elect=false"
    )
    run.add_argument(
        "--leader-elect-resource-name", default="kubesched", metavar="NAME", help="the Lease's name"
    )
    run.add_argument(
        "--leader-elect-resource-namespace", default="kube-system", metavar="NS", help="the Lease's namespace"
    )
    for flag, default, what in (
        (
            "--leader-elect-lease-duration",
            "15s",
            "how long a standby waits before taking over a silent lease",
        ),
        ("--leader-elect-renew-deadline", "10s", "how long the leader tries to renew before it gives up"),
        ("--leader-elect-retry-period", "2s", "the wait between tries to acquire or renew"),
    ):
        run.add_argument(
            flag, default=default, type=duration_flag, metavar="DURATION", help=f"{what} (default {default})"
        )


def _client_and_endpoint_flags(run: argparse.ArgumentParser) -> None:
    """API client rate limits, the health and metrics endpoint, and the log level."""
    run.add_argument(
        "--kube-api-qps",
        type=qps_flag,
        default=50.0,
        metavar="QPS",
        help="requests per second to the API server (default 50)",
    )
    run.add_argument(
        "--kube-api-burst",
        type=positive_flag,
        default=100,
        metavar="N",
        help="requests allowed in a burst (default 100)",
    )
    run.add_argument(
        "--bind-address",
        default="0.0.0.0",
        metavar="IP",
        help="address of the health and metrics endpoint (default 0.0.0.0)",
    )
    run.add_argument(
        "--secure-port",
        dest="port",
        type=int_flag(0, 65535),
        default=10259,
        metavar="PORT",
        help="port of the health and metrics endpoint, HTTPS with authentication and authorization; "
        "0 for none (default 10259)",
    )
    _serving_flags(run)
    run.add_argument(
        "-v",
        "--v",
        dest="log_level",
        type=int_flag(0, 10),
        default=None,
        metavar="N",
        help="log level: 0-3 info, 4 and more debug (default 0)",
    )


def _serving_flags(run: argparse.ArgumentParser) -> None:
    """The endpoint's TLS, authentication and authorization: kube-scheduler's flags and defaults."""
    run.add_argument(
        "--tls-cert-file",
        metavar="FILE",
        help="the endpoint's x509 certificate (its CA's after it, if any); default: self-signed",
    )
    run.add_argument("--tls-private-key-file", metavar="FILE", help="the key of --tls-cert-file")
    run.add_argument(
        "--cert-dir",
        metavar="DIR",
        help="where the self-signed pair is kept when --tls-cert-file is not given (default: made in "
        "memory at each start)",
    )
    run.add_argument(
        "--client-ca-file",
        metavar="FILE",
        help="authenticate client certificates signed by these CAs (user: Common Name, groups: "
        "Organizations)",
    )
    run.add_argument(
        "--authentication-kubeconfig",
        metavar="FILE",
        help="kubeconfig of the API server that reviews tokens (tokenreviews.authentication.k8s.io); "
        "default: the pod's service account in a cluster, else tokens are not reviewed",
    )
    run.add_argument(
        "--authentication-token-webhook-cache-ttl",
        type=duration_flag,
        default=10.0,
        metavar="D",
        help="how long a token review's answer is kept (default 10s)",
    )
    run.add_argument(
        "--authorization-kubeconfig",
        metavar="FILE",
        help="kubeconfig of the API server that reviews access (subjectaccessreviews.authorization.k8s.io); "
        "default: the pod's service account in a cluster, else only the always-allowed paths are served",
    )
    run.add_argument(
        "--authorization-always-allow-paths",
        type=_paths_flag,
        default=None,
        metavar="PATHS",
        help="comma-separated paths served without authorization (default /healthz,/readyz,/livez)",
    )
    run.add_argument(
        "--authorization-webhook-cache-authorized-ttl",
        type=duration_flag,
        default=10.0,
        metavar="D",
        help="how long an allowing access review is kept (default 10s)",
    )
    run.add_argument(
        "--authorization-webhook-cache-unauthorized-ttl",
        type=duration_flag,
        default=10.0,
        metavar="D",
        help="how long a refusing access review is kept (default 10s)",
    )


def _paths_flag(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def cmd_run(args: argparse.Namespace) -> int:
    import signal
    import threading

    from kubesched.remote.delegated_auth import DEFAULT_ALWAYS_ALLOW_PATHS, AuthOptions
    from kubesched.remote.run import RunError, Runner, RunOptions
    from kubesched.remote.serving import ServingOptions

    level = logging.DEBUG if (args.log_level or 0) >= 4 or args.verbose >= 2 else logging.INFO
    logging.getLogger().setLevel(level)
    registry = plugin_registry_of(args)
    gates = parse_feature_gates(args.feature_gates) if args.feature_gates else {}
    config = load_config(args.config, registry) if args.config else None
    options = RunOptions(
        kubeconfig=args.kubeconfig,
        context=args.context,
        config=gated(config, gates, registry),
        batch_conf=load_batch_conf(args.batch_conf) if args.batch_conf else None,
        batch_scheduler_names=tuple(args.batch_scheduler_name or (BATCH_SCHEDULER_NAME,)),
        registry=registry,
        qps=args.kube_api_qps,
        burst=args.kube_api_burst,
        leader_elect=args.leader_elect,
        lease_name=args.leader_elect_resource_name,
        lease_namespace=args.leader_elect_resource_namespace,
        lease_duration=args.leader_elect_lease_duration,
        renew_deadline=args.leader_elect_renew_deadline,
        retry_period=args.leader_elect_retry_period,
        bind_address=args.bind_address,
        port=args.port,
        serving=ServingOptions(
            cert_file=args.tls_cert_file,
            key_file=args.tls_private_key_file,
            cert_dir=args.cert_dir,
            client_ca_file=args.client_ca_file,
        ),
        auth=AuthOptions(
            authentication_kubeconfig=args.authentication_kubeconfig,
            token_cache_ttl=args.authentication_token_webhook_cache_ttl,
            authorization_kubeconfig=args.authorization_kubeconfig,
            always_allow_paths=(
                DEFAULT_ALWAYS_ALLOW_PATHS
                if args.authorization_always_allow_paths is None
                else args.authorization_always_allow_paths
            ),
            authorized_ttl=args.authorization_webhook_cache_authorized_ttl,
            unauthorized_ttl=args.authorization_webhook_cache_unauthorized_ttl,
        ),
        seed=args.seed,
    )
    options.validate()
    stop = threading.Event()

    def on_signal(signum: int, _frame: Any) -> None:
        logging.getLogger(__name__).info("received %s: stopping", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        return Runner(options).run(stop)
    except RunError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_RUN_FAILED
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
