"""Volcano-style batch scheduling: PodGroups, Queues and the batch scheduler conf.

So far this package holds the parsed objects (:mod:`kubesched.batch.objects`) and the scheduler conf
(:mod:`kubesched.batch.conf`); the session, actions and plugins come next.
"""

from kubesched.batch.conf import (
    BATCH_SCHEDULER_NAME,
    BatchConf,
    PluginOption,
    Tier,
    batch_conf_from_dict,
    default_batch_conf,
    load_batch_conf,
)
from kubesched.batch.objects import (
    GROUP_NAME_ANNOTATION,
    POD_GROUP_LABEL,
    SCHEDULING_VOLCANO,
    SCHEDULING_X_K8S,
    PodGroup,
    PodGroupCondition,
    Queue,
    group_name_of,
)

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
