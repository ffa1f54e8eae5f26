"""The verdict vocabulary of iclmem.report.verdicts: directional and equality rules, and a rule without a null."""

from __future__ import annotations

import numpy as np
import pytest

from iclmem.report.verdicts import (
    directional_answers,
    directional_verdict,
    equivalence_answers,
    equivalence_verdict,
    verdict_without_null,
)


def test_directional_rule_agrees_contradicts_or_stays_in_the_noise():
    agrees, contradicted = directional_answers(
        [5.0, 5.0, -1.0, -4.0, np.nan], [1.0, -1.0, -3.0, -9.0, 0.0], [9.0, 9.0, 1.0, -1.0, 1.0]
    )
    assert agrees.tolist() == [True, False, False, False, False]
    assert contradicted.tolist() == [False, False, False, True, False]
    assert directional_verdict(5.0, 1.0, 9.0, null_rate=0.01) == "reproduced"
    assert directional_verdict(5.0, 1.0, 9.0, null_rate=0.2) == "inconclusive"
    assert directional_verdict(5.0, -1.0, 9.0) == "inconclusive"
    assert directional_verdict(-4.0, -9.0, -1.0) == "differs"  # the interval excludes the claimed direction


def test_a_wrong_signed_estimate_whose_interval_covers_zero_is_not_contradicted():
    """Issue 53: D1 (-2.8 [-32, +24]) and D5 (-8 [-21, 0]) read "differs" on the point estimate alone."""
    for est, lo, hi in ((-2.8, -32.0, 24.0), (-8.0, -21.0, 0.0), (0.0, -1.0, 1.0)):
        agrees, contradicted = directional_answers(est, lo, hi)
        assert not bool(agrees) and not bool(contradicted)
        assert directional_verdict(est, lo, hi) == "inconclusive"
    assert not bool(directional_answers(8.0, 0.0, 21.0, sign=-1)[1])  # the mirror image for a claimed fall
    assert bool(directional_answers(8.0, 1.0, 21.0, sign=-1)[1])
    assert directional_verdict(-5.0, -9.0, -1.0, sign=-1, null_rate=0.0) == "reproduced"
    assert directional_verdict(5.0, None, None) == "not testable here"
    with pytest.raises(ValueError, match="null rate"):
        directional_verdict(5.0, 1.0, 9.0)  # agreeing without a null rate is refused


def test_equality_rule_and_a_rule_without_a_null():
    agrees, outside = equivalence_answers([-5.0, -15.0, 12.0], [5.0, 5.0, 20.0], 10.0)
    assert agrees.tolist() == [True, False, False] and outside.tolist() == [False, False, True]
    assert equivalence_verdict(-5.0, 5.0, 10.0, null_rate=0.0) == "reproduced"
    assert equivalence_verdict(-15.0, 5.0, 10.0) == "inconclusive"
    assert equivalence_verdict(-15.0, 30.0, 10.0, one_sided=True) == "inconclusive"
    assert equivalence_verdict(12.0, 20.0, 10.0) == "differs"
    assert (verdict_without_null(True), verdict_without_null(False)) == ("inconclusive", "differs")
