"""GPU sharing per card: the card model (:mod:`.cards`), the FGD fragmentation measure (:mod:`.frag`),
the FGD paper's placement policies (:mod:`.policies`) and the paper's experiment (:mod:`.experiment`).
"""
