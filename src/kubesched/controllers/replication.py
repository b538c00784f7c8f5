"""The replication manager (upstream ``pkg/controller/replication``): a ReplicationController is
run by the ReplicaSet controller's logic, as upstream runs it through an adapter."""

from __future__ import annotations

from kubesched.controllers.replicaset import ReplicaSetController


class ReplicationManager(ReplicaSetController):
    kind = "ReplicationController"
