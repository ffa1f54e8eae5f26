"""The paper layer: one module per chapter notebook, holding what only that chapter needs.

``claims`` (the claims registry, the glue and the scorecard, notebook 00), ``split`` (01),
``finetuning`` (02), ``probing`` (03), ``calibration`` (04), ``regimes`` (05), ``llm_kshot`` (06),
``reference_ltm`` (A1), ``benchmarks`` (A2), ``bad_inputs`` (A3); ``tables`` holds the data
parameters the tabular chapters share and ``verdicts`` the interval and share verdicts
they share.
A chapter module over about 500 lines is split by job into parts named after it (``calibration_tables``,
``regime_decay``, ``probing_claims``, ``claim_records``, ``llm_kshot_correlation``, ...), which it re-exports, so the
notebooks import one module.
Each module's docstring opens with the paper sections it covers. The engine (the rest
of :mod:`iclmem`) never imports from here.
"""
