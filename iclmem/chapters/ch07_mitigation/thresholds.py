"""Chapter 7's chosen levels (IclMem Sec. 6's DP-SGD, measured beyond the papers): M1's privacy level, equivalence
margin and interval level, M2's utility budget and the label condition of its utility runs.

Choices of this companion, not the paper's: neither paper measures DP. The rules that read them are
:mod:`iclmem.chapters.ch07_mitigation.claims`.
"""

from __future__ import annotations

#: M2's criterion: DP may cost at most this much held-out accuracy (absolute) against M_ref and against epsilon = inf.
UTILITY_BUDGET = 0.05


#: M1's privacy levels: "epsilon <= 4".
M1_EPSILON = 4.0


#: The label condition of M2's utility runs: the members carry their true labels, so fine-tuning can help the task
#: and DP has something to cost (under the attack's condition ``all`` fine-tuning can only hurt it).
UTILITY_CONDITION = "none"


#: M1's equivalence margin: the signal counts as removed when the attack's AUC lies within 0.5 +- this (a tenth of
#: the way from chance to a perfect attack). A choice of this companion; neither paper measures DP.
M1_MARGIN = 0.05


#: Confidence of M1's equivalence interval: 90%, two one-sided 5% tests (TOST), so the rule says "removed" in at
#: most 5% of worlds whose true AUC lies at the margin's edge.
M1_LEVEL = 0.90
