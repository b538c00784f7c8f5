"""``kubesched bench``: throughput workloads modelled on upstream scheduler_perf (:mod:`.workloads`)
and what customising the scheduler costs (:mod:`.extensions`), on the shared templates of :mod:`.base`.
"""
