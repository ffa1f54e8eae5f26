"""Tab. 3 outcome classification, every branch on constructed cases."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclmem.stats.outcomes import Outcome, classify_outcome

torch.set_num_threads(1)

NOISY = np.array([-0.6, 0.5, -0.4, 0.3])  # mu_gap -0.05, sigma_gap large: no overfitting
STABLE = np.array([-0.01, -0.02, 0.0, -0.01])  # mu_gap -0.01, sigma_gap tiny
HIGH = {"loss": 0.62, "entropy": 0.48, "confidence": 0.7}
LOW = {"loss": 0.49, "entropy": 0.5, "confidence": 0.9}


def test_collapse_by_flag_or_ratio_comes_first():
    r = classify_outcome(gaps=[0.3, 0.2], auc=HIGH, collapsed=True)  # would also be inversion and memorization
    assert r.outcome is Outcome.COLLAPSE and r.outcome.short == "Coll."
    assert classify_outcome(gaps=NOISY, auc=HIGH, loss_ratio=5.01).outcome is Outcome.COLLAPSE
    assert classify_outcome(gaps=NOISY, auc=HIGH, loss_ratio=5.0).outcome is Outcome.MEMORIZATION  # strictly greater
    assert classify_outcome(gaps=NOISY, auc=HIGH, loss_ratio=float("nan")).outcome is Outcome.MEMORIZATION


def test_inversion_when_members_have_higher_mean_probe_loss():
    r = classify_outcome(gaps=[0.3, -0.1], auc=HIGH)  # mu_gap = +0.1 > 0
    assert r.outcome is Outcome.INVERSION and r.evidence["mu_gap"] == pytest.approx(0.1)
    # the stricter reading: every manipulation's gap positive
    assert classify_outcome(gaps=[0.3, -0.1], auc=HIGH, inversion="all").outcome is Outcome.MEMORIZATION
    assert classify_outcome(gaps=[0.3, 0.1], auc=HIGH, inversion="all").outcome is Outcome.INVERSION
    assert classify_outcome(gaps=[0.0, 0.0], auc=LOW).outcome is not Outcome.INVERSION  # mu_gap = 0 is not inverted


def test_detectable_memorization_on_loss_or_entropy_only():
    r = classify_outcome(gaps=NOISY, auc=HIGH)
    assert r.outcome is Outcome.MEMORIZATION and r.evidence["detected_on"] == ["loss"]
    r = classify_outcome(gaps=NOISY, auc={"loss": 0.4, "entropy": 0.51})
    assert r.evidence["detected_on"] == ["entropy"]
    # confidence alone does not count (Tab. 3: "on loss or entropy")
    assert classify_outcome(gaps=NOISY, auc=LOW).outcome is Outcome.NO_SIGNAL
    assert classify_outcome(gaps=NOISY, auc={"loss": 0.5, "entropy": float("nan")}).outcome is Outcome.NO_SIGNAL


def test_require_ci_uses_the_lower_bound():
    lo = {"loss": 0.49, "entropy": 0.45}
    assert classify_outcome(gaps=NOISY, auc=HIGH, auc_ci_low=lo).outcome is Outcome.MEMORIZATION  # paper rule: point
    assert classify_outcome(gaps=NOISY, auc=HIGH, auc_ci_low=lo, require_ci=True).outcome is Outcome.NO_SIGNAL
    assert (
        classify_outcome(gaps=NOISY, auc=HIGH, auc_ci_low={"loss": 0.51}, require_ci=True).outcome
        is Outcome.MEMORIZATION
    )
    with pytest.raises(ValueError, match="auc_ci_low"):
        classify_outcome(gaps=NOISY, auc=HIGH, require_ci=True)


def test_context_overfitting_and_no_signal():
    r = classify_outcome(gaps=STABLE, auc=LOW)
    assert r.outcome is Outcome.CONTEXT_OVERFITTING and r.outcome.short == "Ctx.Ov."
    assert r.evidence["sigma_gap"] < 0.2
    # |mu_gap| just at 0.05 or sigma_gap at 0.2 is no longer overfitting
    assert classify_outcome(gaps=[-0.05, -0.05], auc=LOW).outcome is Outcome.NO_SIGNAL
    assert classify_outcome(gaps=[-0.2, 0.2], auc=LOW).outcome is Outcome.NO_SIGNAL  # sigma 0.2, mu 0
    assert classify_outcome(gaps=NOISY, auc=LOW).outcome is Outcome.NO_SIGNAL
    assert classify_outcome(gaps=NOISY, auc=LOW).evidence["rule"] == "none of the above"


def test_bad_arguments():
    with pytest.raises(ValueError, match="inversion"):
        classify_outcome(gaps=NOISY, auc=LOW, inversion="some")
    with pytest.raises(ValueError):
        classify_outcome(gaps=[], auc=LOW)
