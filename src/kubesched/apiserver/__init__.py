"""``kubesched serve``: a one-process cluster that kubectl and client libraries talk to as they would
to kube-apiserver — the HTTP API over a durable store, both schedulers, simulated nodes and
workload controllers."""
