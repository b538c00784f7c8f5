"""The PersistentVolume and PersistentVolumeClaim assume caches of the volume binder (upstream
``volumebinding/assume_cache.go``): typed accessors over :class:`AssumeCache`, and PVs indexed by
storage class (the beta class annotation first, as ``GetPersistentVolumeClass``), which is how the
binder lists the volumes a WaitForFirstConsumer claim may take."""

from __future__ import annotations

from typing import Any

from kubesched.api.storage import PersistentVolume, PersistentVolumeClaim
from kubesched.plugins.helper.assume_cache import AssumeCache, WrongTypeError
from kubesched.store.informers import Informer

PV_DESCRIPTION = "v1.PersistentVolume"
PVC_DESCRIPTION = "v1.PersistentVolumeClaim"
STORAGE_CLASS_INDEX = "storageclass"


def _pv_storage_class(obj: Any) -> list[str]:
    if isinstance(obj, PersistentVolume):
        return [obj.storage_class]
    raise WrongTypeError(PV_DESCRIPTION, obj)


def _pv(obj: Any) -> PersistentVolume:
    if not isinstance(obj, PersistentVolume):
        raise WrongTypeError(PV_DESCRIPTION, obj)
    return obj


def _pvc(obj: Any) -> PersistentVolumeClaim:
    if not isinstance(obj, PersistentVolumeClaim):
        raise WrongTypeError(PVC_DESCRIPTION, obj)
    return obj


def claim_key(claim: PersistentVolumeClaim) -> str:
    """``namespace/name``: how the claim cache keys a claim."""
    return f"{claim.namespace}/{claim.name}"


class PVAssumeCache(AssumeCache):
    def __init__(self, informer: Informer[Any] | None) -> None:
        super().__init__(informer, PV_DESCRIPTION, STORAGE_CLASS_INDEX, _pv_storage_class)

    def get_pv(self, name: str) -> PersistentVolume:
        return _pv(self.get(name))

    def get_api_pv(self, name: str) -> PersistentVolume:
        return _pv(self.get_api_obj(name))

    def list_pvs(self, storage_class: str) -> list[PersistentVolume]:
        """The latest versions of the volumes of one class."""
        return [pv for pv in self.by_index(storage_class) if isinstance(pv, PersistentVolume)]


class PVCAssumeCache(AssumeCache):
    def __init__(self, informer: Informer[Any] | None) -> None:
        super().__init__(informer, PVC_DESCRIPTION)

    def get_pvc(self, key: str) -> PersistentVolumeClaim:
        return _pvc(self.get(key))

    def get_api_pvc(self, key: str) -> PersistentVolumeClaim:
        return _pvc(self.get_api_obj(key))
