"""Volcano-style batch scheduling: PodGroups, Queues, the batch scheduler conf, and the scheduler.

Objects (:mod:`~kubesched.api.volcano`), conf (:mod:`~kubesched.batch.conf`), session machinery
(:mod:`~kubesched.batch.job_info`, :mod:`~kubesched.batch.session`, :mod:`~kubesched.batch.statement`,
:mod:`~kubesched.batch.operations`, :mod:`~kubesched.batch.framework`), actions and plugins
(subpackages, registered by name in :mod:`~kubesched.batch.factory`), and the
:class:`~kubesched.batch.scheduler.BatchScheduler` that runs a session every period (a façade over
:mod:`~kubesched.batch.events`, :mod:`~kubesched.batch.controller`, :mod:`~kubesched.batch.jobs`,
:mod:`~kubesched.batch.cycle`, :mod:`~kubesched.batch.apply` and :mod:`~kubesched.batch.report`).
"""

from kubesched.api.volcano import (
    GROUP_NAME_ANNOTATION,
    POD_GROUP_LABEL,
    SCHEDULING_VOLCANO,
    SCHEDULING_X_K8S,
    PodGroup,
    PodGroupCondition,
    Queue,
    group_name_of,
)
from kubesched.batch.conf import BATCH_SCHEDULER_NAME, BatchConf, PluginOption, Tier
from kubesched.batch.conf_loader import batch_conf_from_dict, default_batch_conf, load_batch_conf

__all__ = [
    "BATCH_SCHEDULER_NAME",
    "GROUP_NAME_ANNOTATION",
    "POD_GROUP_LABEL",
    "SCHEDULING_VOLCANO",
    "SCHEDULING_X_K8S",
    "BatchConf",
    "PluginOption",
    "PodGroup",
    "PodGroupCondition",
    "Queue",
    "Tier",
    "batch_conf_from_dict",
    "default_batch_conf",
    "group_name_of",
    "load_batch_conf",
]
