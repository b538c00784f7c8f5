"""GPU sharing per card: the card model (:mod:`.cards`), the FGD fragmentation measure (:mod:`.frag`)
and the FGD paper's placement policies (:mod:`.policies`). The paper's experiment replays a trace with
them: :mod:`kubesched.sim.gpu_experiment`.
"""
