"""Statistics of the evidence (Sec. 4.2, Tab. 3, Tab. 8; issue 54 item 3): attack metrics (:mod:`.metrics`),
permutation nulls and power (:mod:`.permutation`), intervals (:mod:`.intervals`) and the five outcomes of Tab. 3
(:mod:`.outcomes`).

Nothing is imported here, so that an artifact's code version (:func:`iclmem.store.keys.code_version`) hashes only the
modules its producer imports.
"""
