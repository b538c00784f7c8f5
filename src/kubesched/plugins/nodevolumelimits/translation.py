"""What NodeVolumeLimits needs of CSI migration (upstream ``csi-translation-lib`` and the plugin's
``isCSIMigrationOn``): which in-tree sources a CSI driver serves, whether their migration is on for a
node, and the volume handle an in-tree volume gets once translated to CSI, so that a migrated volume
and the same volume written as a CSI source count once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlparse

from kubesched.api.objects import BETA_ZONE_LABEL, ZONE_LABEL
from kubesched.api.storage import IN_TREE_PLUGIN_NAMES, CSINode, PersistentVolume

__all__ = [
    "ALWAYS_MIGRATED",
    "PORTWORX_PLUGIN",
    "TranslationError",
    "inline_volume_handle",
    "kind_of_plugin",
    "migrated_plugins",
    "pv_volume_handle",
]

PORTWORX_PLUGIN: Final = IN_TREE_PLUGIN_NAMES["portworxVolume"]
#: Plugins whose migration is on wherever the node has a CSINode (GA and locked in kube v1.35).
ALWAYS_MIGRATED: Final = frozenset(
    IN_TREE_PLUGIN_NAMES[k] for k in ("awsElasticBlockStore", "gcePersistentDisk", "azureDisk", "cinder")
)
_KIND_OF_PLUGIN: Final = {plugin: kind for kind, plugin in IN_TREE_PLUGIN_NAMES.items()}

#: csi-translation-lib's placeholders and formats for GCE PD volume ids.
_UNSPECIFIED: Final = "UNSPECIFIED"
_GCE_ZONAL: Final = "projects/{}/zones/{}/disks/{}"
_GCE_REGIONAL: Final = "projects/{}/regions/{}/disks/{}"
_AWS_VOLUME: Final = re.compile(r"^vol-[^/]*$")


class TranslationError(Exception):
    """An in-tree volume that csi-translation-lib refuses to translate."""


def kind_of_plugin(plugin: str) -> str | None:
    """The volume source kind of an in-tree plugin name (``kubernetes.io/aws-ebs`` →
    ``awsElasticBlockStore``), or None: upstream ``IsMigratableIntreePluginByName``."""
    return _KIND_OF_PLUGIN.get(plugin)


def migrated_plugins(csinode: CSINode | None) -> frozenset[str]:
    """The in-tree plugins whose volumes count as CSI volumes on the node (``isCSIMigrationOn``):
    none without a CSINode; AWS EBS, GCE PD, Azure Disk and Cinder with one; Portworx only when the
    CSINode's ``storage.alpha.kubernetes.io/migrated-plugins`` annotation lists it. Azure File and
    vSphere volumes are never counted."""
    if csinode is None:
        return frozenset()
    if PORTWORX_PLUGIN in csinode.migrated_plugins:
        return ALWAYS_MIGRATED | {PORTWORX_PLUGIN}
    return ALWAYS_MIGRATED


def _text(source: Mapping[str, Any], key: str) -> str:
    value = source.get(key)
    return value if isinstance(value, str) else ""


def ebs_volume_id(kubernetes_id: str) -> str:
    """``KubernetesVolumeIDToEBSVolumeID``: ``aws://<zone>/vol-…`` → ``vol-…``; a bare id as is."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    aws_id = urlparse(kubernetes_id).path.strip("/")
    if not _AWS_VOLUME.match(aws_id):
        raise TranslationError(f"Invalid format for AWS volume ({kubernetes_id})")
    return aws_id


def _gce_region(zones: list[str]) -> str:
    regions: set[str] = set()
    for zone in zones:
        parts = zone.split("-")
        if len(parts) != 3:
            raise TranslationError(f"zone in unexpected format, expected: [region]-[zone], got: {zone}")
        regions.add("-".join(parts[:2]))
    if len(regions) != 1:
        raise TranslationError(f"multiple or no regions gotten from zones, got: {sorted(regions)}")
    return regions.pop()


def _handle(kind: str, source: Mapping[str, Any]) -> str:
    if kind == "awsElasticBlockStore":
        return ebs_volume_id(_text(source, "volumeID"))
    if kind == "azureDisk":
        return _text(source, "diskURI")
    if kind in ("cinder", "portworxVolume"):
        return _text(source, "volumeID")
    if kind == "vsphereVolume":
        return _text(source, "volumePath")
    if kind == "azureFile":
        return _text(source, "shareName")
    raise TranslationError(f"no CSI translation for volume source {kind}")


def inline_volume_handle(kind: str, source: Mapping[str, Any]) -> str:
    """The CSI volume handle of an inline in-tree volume (``TranslateInTreeInlineVolumeToCSI``)."""
    if kind == "gcePersistentDisk":
        return _GCE_ZONAL.format(_UNSPECIFIED, _UNSPECIFIED, _text(source, "pdName"))
    return _handle(kind, source)


def pv_volume_handle(pv: PersistentVolume) -> str:
    """The CSI volume handle of an in-tree PersistentVolume (``TranslateInTreePVToCSI``): a GCE PD's
    id names the zone, or the region of a multi-zone volume, from the PV's zone label."""
    kind = pv.source_kind
    if kind != "gcePersistentDisk":
        return _handle(kind, pv.source)
    disk = _text(pv.source, "pdName")
    zones_label = pv.labels.get(BETA_ZONE_LABEL) or pv.labels.get(ZONE_LABEL) or ""
    zones = zones_label.split("__")
    if len(zones) == 1 and zones[0]:
        return _GCE_ZONAL.format(_UNSPECIFIED, zones[0], disk)
    if len(zones) > 1:
        return _GCE_REGIONAL.format(_UNSPECIFIED, _gce_region(zones), disk)
    return _GCE_ZONAL.format(_UNSPECIFIED, _UNSPECIFIED, disk)
