"""Volcano-style batch scheduling: PodGroups, Queues, the batch scheduler conf, and the scheduler.

Objects (:mod:`~kubesched.api.volcano`), conf (:mod:`~kubesched.batch.conf`, read by
:mod:`~kubesched.batch.conf_loader`), session machinery
(:mod:`~kubesched.batch.job_info`, :mod:`~kubesched.batch.session`, :mod:`~kubesched.batch.statement`,
:mod:`~kubesched.batch.operations`, :mod:`~kubesched.batch.framework`), actions and plugins
(subpackages, registered by name in :mod:`~kubesched.batch.factory`), and the
:class:`~kubesched.batch.scheduler.BatchScheduler` that runs a session every period (a façade over
:mod:`~kubesched.batch.events`, :mod:`~kubesched.batch.controller`, :mod:`~kubesched.batch.jobs`,
:mod:`~kubesched.batch.cycle`, :mod:`~kubesched.batch.apply` and :mod:`~kubesched.batch.report`).
"""
