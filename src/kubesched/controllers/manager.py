"""The controller manager (upstream ``kube-controller-manager``): builds the simulated kubelet, the
controllers, a simulated external volume provisioner and a simulated DRA driver over one store and
runs each one's due work on the server's event loop.

The controllers follow the store through one :class:`InformerFactory`, as every other client of
the store does. Before each controller runs it is handed the changes made so far, so that what one
writes reaches the next in the same tick (a Deployment's new ReplicaSet gets its pods at once);
what reaches an earlier one is its work at the next tick."""

from __future__ import annotations

from kubesched.controllers.apiservice_availability import APIServiceAvailabilityController
from kubesched.controllers.controller_utils import OwnerController
from kubesched.controllers.cronjob import CronJobController
from kubesched.controllers.daemonset import DaemonSetController
from kubesched.controllers.deployment import DeploymentController
from kubesched.controllers.disruption import DisruptionController
from kubesched.controllers.dradriver import DraDriverOptions, SimulatedDraDriver
from kubesched.controllers.endpoints import EndpointsController
from kubesched.controllers.endpointslice import EndpointSliceController
from kubesched.controllers.eventttl import EventTTLController
from kubesched.controllers.hypernode_discovery import HyperNodeDiscovery, HyperNodeStatusController
from kubesched.controllers.job import JobController
from kubesched.controllers.kubelet import Kubelet
from kubesched.controllers.nodeipam import NodeIpamController
from kubesched.controllers.nodelease import NodeLeaseController
from kubesched.controllers.persistentvolume import PersistentVolumeController
from kubesched.controllers.provisioner import Provisioner
from kubesched.controllers.replicaset import ReplicaSetController
from kubesched.controllers.replication import ReplicationManager
from kubesched.controllers.resourceclaim import ResourceClaimController
from kubesched.controllers.serviceaccount import ServiceAccountsController
from kubesched.controllers.statefulset import StatefulSetController
from kubesched.controllers.ttl_after_finished import TTLAfterFinishedController
from kubesched.store.informers import InformerFactory
from kubesched.store.sqlite import SqliteStore


class ControllerManager:
    """``tick`` does whatever became due since the last one."""

    def __init__(
        self, store: SqliteStore, event_ttl: float = 3600.0, dra_driver: DraDriverOptions | None = None
    ) -> None:
        self.store = store
        self.informers = InformerFactory(store)
        self.node_ipam = NodeIpamController(store, self.informers)
        self.kubelet = Kubelet(store, self.informers)
        self.node_leases = NodeLeaseController(store, self.informers)
        #: In the order they run: each one's writes reach the next in the same tick.
        self.workloads: list[OwnerController] = [
            DeploymentController(store, self.informers),
            ReplicaSetController(store, self.informers),
            ReplicationManager(store, self.informers),
            StatefulSetController(store, self.informers),
            DaemonSetController(store, self.informers),
            CronJobController(store, self.informers),
            JobController(store, self.informers),
        ]
        self.volumes = PersistentVolumeController(store, self.informers)
        self.provisioner = Provisioner(store, self.informers)
        self.claims = ResourceClaimController(store, self.informers)
        self.dra_driver = (
            SimulatedDraDriver(store, self.informers, dra_driver) if dra_driver is not None else None
        )
        self.disruption = DisruptionController(store, self.informers)
        self.event_ttl = EventTTLController(store, self.informers, event_ttl)
        self.ttl_after_finished = TTLAfterFinishedController(store, self.informers)
        self.service_accounts = ServiceAccountsController(store, self.informers)
        self.endpoints = EndpointsController(store, self.informers)
        self.endpoint_slices = EndpointSliceController(store, self.informers)
        self.api_services = APIServiceAvailabilityController(store, self.informers)
        self.hyper_nodes = HyperNodeDiscovery(store, self.informers)
        self.hyper_node_status = HyperNodeStatusController(store, self.informers)
        self._seen_rv = -1

    def tick(self) -> None:
        self.informers.pump()
        self.node_ipam.sync()
        self.informers.pump()
        self.kubelet.sync()
        self.node_leases.sync()
        rv = self.store.resource_version
        if rv != self._seen_rv:
            # What failed part way is tried again once something changed.
            self._seen_rv = rv
            for controller in self.workloads:
                controller.requeue_failed()
        for controller in self.workloads:
            self.informers.pump()
            controller.sync()
        # A StatefulSet's new claims are bound (or handed to the provisioner, whose volumes are then
        # bound) in the tick that made them.
        self.informers.pump()
        self.volumes.sync()
        self.informers.pump()
        self.provisioner.sync()
        self.informers.pump()
        self.volumes.sync()
        # A new pod's claims are made from its templates in the tick that made the pod; a GPU
        # node's slices are published in the tick it registered.
        self.informers.pump()
        self.claims.sync()
        if self.dra_driver is not None:
            self.informers.pump()
            self.dra_driver.sync()
        self.informers.pump()
        self.disruption.sync()
        self.event_ttl.sync()
        self.informers.pump()
        self.ttl_after_finished.sync()
        self.service_accounts.sync()
        self.informers.pump()
        self.endpoints.sync()
        self.endpoint_slices.sync()
        self.informers.pump()
        self.api_services.sync()
        self.informers.pump()
        self.hyper_nodes.sync()
        self.informers.pump()
        self.hyper_node_status.sync()

    @property
    def next_due(self) -> float | None:
        """When the next pod finishes (node leases are renewed on every tick that finds them due)."""
        return self.kubelet.next_due
