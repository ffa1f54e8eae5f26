"""The Tab. 12 layer of notebook 05 (Paper 1, App. D): the per-regime peak table, its layout and the paper's counts."""

import pandas as pd

from iclmem.chapters import regimes as chapter
from iclmem.chapters.regimes import regime_peak_table


def test_peak_table_takes_the_best_detectable_epoch_per_dataset_and_regime():
    def row(dataset, regime, epoch, auc, outcome, lr=1e-4, q=512):
        return {"dataset": dataset, "regime": regime, "epoch": epoch, "auc_loss": auc, "tpr10_loss": auc / 4, "tpr1_loss": auc / 40,
                "auc_entropy": 0.4, "tpr10_entropy": 0.0, "tpr1_entropy": 0.0, "auc_loss_lo": auc - 0.15, "auc_entropy_lo": 0.3,
                "outcome": outcome, "learning_rate": lr, "query_size": q, "label_condition": "none", "members_logged": 512}
    rows = pd.DataFrame([
        row("a", "single_task_fixed", 0, 0.5, "no_signal"), row("a", "single_task_fixed", 1, 0.6, "detectable_memorization"),
        row("a", "single_task_fixed", 5, 0.7, "detectable_memorization", lr=1e-3), row("a", "single_task_fixed", 10, 0.9, "loss_inversion"),
        row("a", "single_task_fixed", 2, 0.99, "detectable_memorization", q=50),  # other Q: ignored
        row("a", "multi_task_random", 1, 0.45, "no_signal"), row("b", "single_task_fixed", 1, 0.55, "detectable_memorization"),
        row("b", "multi_task_random", 2, 0.52, "detectable_memorization")])
    peaks = regime_peak_table(rows).set_index(["dataset", "regime"])
    a = peaks.loc[("a", "single_task_fixed")]
    assert (a.epoch, a.auc, a.learning_rate, a.tpr10) == (5, 0.7, 1e-3, 0.7 / 4)  # peak across learning rates; inversion excluded
    assert not peaks.loc[("a", "multi_task_random")].detectable and pd.isna(peaks.loc[("a", "multi_task_random")].auc)
    assert chapter.detectable_counts(peaks.reset_index()).to_dict() == {"single_task_fixed": 2, "multi_task_random": 1}
    wide = chapter.wide_table(peaks.reset_index())
    assert list(wide.columns.get_level_values(0).unique()) == ["Single-Task Fixed Pairs", "Multi-Task Random Pairs"]
    assert chapter.detectable_counts(chapter.PAPER_TABLE12, chapter.PAPER_DATASETS).tolist() == [5, 2, 1]  # Tab. 12: 5 -> 2 -> 1 of 10
    strict = regime_peak_table(rows, require_ci=True).set_index(["dataset", "regime"])  # lower bound > 0.5: only a's 0.7 (0.55)
    assert strict.detectable.tolist() == [True, False, False, False] and strict.auc.iloc[0] == 0.7
    entropy = rows.assign(auc_entropy=0.8, tpr10_entropy=0.5)  # detected on entropy: "best" reports entropy's numbers
    best = regime_peak_table(entropy).set_index(["dataset", "regime"]).loc[("a", "single_task_fixed")]
    assert (best.metric, best.auc, best.tpr10, best.epoch) == ("entropy", 0.8, 0.5, 1)
    assert regime_peak_table(entropy, metric="loss").set_index(["dataset", "regime"]).loc[("a", "single_task_fixed")].auc == 0.7
    fig = chapter.plot_regime_decay(peaks.reset_index())
    assert len(fig.axes) == 2
