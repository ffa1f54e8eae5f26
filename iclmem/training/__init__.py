"""Fine-tuning under control (Sec. 4.1, Tab. 2, App. D; issue 54 item 3): the one training loop of every regime
(:mod:`.loop`), the single-task setting (:mod:`.finetune`), the multi-task regimes (:mod:`.regimes`), DP-SGD
(:mod:`.privacy`) and the grid of runs that trains and probes (:mod:`.grid`).

Nothing is imported here, so that an artifact's code version (:func:`iclmem.store.keys.code_version`) hashes only the
modules its producer imports.
"""
