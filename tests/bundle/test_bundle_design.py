"""A design's bundle (issue 55, item 1): too large to keep its probe scores, it keeps each probed run's membership
null, exactly, and the few scores a check probes again; a check recomputes a small run's null in full."""

# ruff: noqa: F811
# (the test functions take the fixtures imported from tiny_sweep by name)
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tiny_sweep import made, reference  # noqa: F401 (the shared fixtures)

from iclmem.bundle import read_bundle, serve
from iclmem.bundle.check import check_bundle
from iclmem.bundle.collect import Contents, make_bundle
from iclmem.bundle.effect_codec import decode_aucs, decode_ranks
from iclmem.bundle.layout import ITEMS, BundleError
from iclmem.bundle.null_codec import decode as decode_null
from iclmem.bundle.sampling import RECHECK_QUERIES, witness_ids
from iclmem.bundle.scores import decode_witness
from iclmem.ltm import ReferenceLTM
from iclmem.probe.effects import group_ranks, manipulation_aucs
from iclmem.probe.null import run_null
from iclmem.probe.settings import ProbeSettings
from iclmem.stats.permutation import NullDraws
from iclmem.training.grid import probe_grid, run_grid

pytestmark = pytest.mark.slow
N_PERM = 40


@pytest.fixture(scope="module")
def design(made: dict, reference: ReferenceLTM) -> dict:
    """The sweep of ``made`` bundled as a design: witnesses and nulls instead of every score."""
    contents = Contents(scores="witness", null_permutations=N_PERM)
    bundle, report = make_bundle(
        made["grid"], made["tmp"] / "design", results_dir=made["tmp"] / "store", reference=reference, contents=contents
    )
    return {**made, "design": bundle, "design_report": report}


def _kinds(bundle) -> dict:
    return pd.Series([e["kind"] for e in bundle.items.values()]).value_counts().to_dict()


def test_a_design_bundle_keeps_nulls_and_witnesses_never_every_score(design: dict):
    bundle = design["design"]
    assert design["design_report"] == {"bundled": 3, "already": 0, "pending": 0}
    # 4 probed runs (2 single-task, the joint run's 2 views), one null, effects and witness each
    kinds = {"witness": 4, "null": 4, "effects": 4, "sweep": 3, "finetune": 2, "multitask": 1}
    assert _kinds(bundle) == kinds
    # a witness holds M_ref and the epochs a check may draw: 0-2 of a single-task run, 0-1 of a joint run's views
    models = sorted(len(e["models"]) for e in bundle.items.values() if e["kind"] == "witness")
    assert models == [3, 3, 4, 4]
    assert bundle.manifest["contents"] == {"scores": "witness", "null_permutations": N_PERM}
    nulls = [e for e in bundle.items.values() if e["kind"] == "null"]
    assert all(e["epochs"] == [1, 2] and e["n_perm"] == N_PERM and e["n_boot"] == 10 for e in nulls)


def _from_store(design: dict, reference: ReferenceLTM) -> tuple:
    """The single-task runs of the tiny sweep, their summary and scores, read from its store (nothing computed)."""
    grid = design["grid"]
    tables = {name: source.load() for name, source in grid.sources.items()}
    specs = [s for s in grid.specs if s.regime == "single_task_fixed"]
    store = design["tmp"] / "store"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ICLMEM_BUNDLE", "off")
        runs = run_grid(specs, reference, store, progress=False, tables=tables, workers=1)
        summary, scores = probe_grid(
            specs, runs, reference, ProbeSettings(max_queries=4, n_boot=10), results_dir=store,
            progress=False, tables=tables, workers=1,
        )  # fmt: skip
    return runs, summary, scores


def test_bundled_nulls_and_effects_are_the_engines_bit_for_bit(design: dict, reference: ReferenceLTM):
    runs, _, scores = _from_store(design, reference)
    bundle = design["design"]
    for run in runs:
        [entry] = [e for e in bundle.items.values() if e["kind"] == "null" and e["run"] == run.input_key]
        kept = decode_null(bundle.item_dir("null", entry["key"]) / "null.parquet")
        pd.testing.assert_frame_equal(kept, run_null(scores[run.key], [1, 2], N_PERM, 0, 10), check_exact=True)
    for run in runs:  # C12's rank sums and Fig. 4's AUCs, as the chapters compute them from every score
        [entry] = [e for e in bundle.items.values() if e["kind"] == "effects" and e["run"] == run.input_key]
        folder = bundle.item_dir("effects", entry["key"])
        for epoch, kept in decode_ranks(folder / "ranks.parquet").items():
            mine = group_ranks(scores[run.key], epoch)
            assert kept.groups == mine.groups and kept.sizes == mine.sizes
            assert np.array_equal(kept.sums, mine.sums) and np.array_equal(kept.query_ids, mine.query_ids)
            assert np.array_equal(kept.is_member, mine.is_member)
        aucs = manipulation_aucs(scores[run.key], epochs=[1, 2])
        pd.testing.assert_frame_equal(decode_aucs(folder / "aucs.parquet"), aucs, check_exact=True)
    witnessed = {
        frozenset(decode_witness(p / "scores.parquet", "ref").query_id)
        for p in (bundle.root / ITEMS / "witness").glob("*/")
    }
    for run in runs:  # max_queries 4: the check's subset is the probe's own, 4 members and 4 non-members
        assert frozenset(witness_ids(run.manifest, 0, 4)) in witnessed
        assert set(scores[run.key].query_id) == witness_ids(run.manifest, 0, 4)
        [entry] = [e for e in bundle.items.values() if e["kind"] == "witness" and e["run"] == run.input_key]
        kept = decode_witness(bundle.item_dir("witness", entry["key"]) / "scores.parquet", "theta-2")
        theirs = scores[run.key][(scores[run.key].model == "theta") & (scores[run.key].epoch == 2)]
        order = ["query_id", "manipulation"]
        kept, theirs = (f.sort_values(order, ignore_index=True) for f in (kept, theirs))
        assert np.array_equal(kept.loss, theirs.loss) and np.array_equal(kept.entropy, theirs.entropy)


def test_a_check_of_a_design_bundle_recomputes_witnesses_and_small_runs_nulls(
    design: dict, reference: ReferenceLTM, tmp_path, monkeypatch
):
    monkeypatch.setenv("ICLMEM_CACHE", str(tmp_path / "cache"))
    serve.reset()
    bundle = read_bundle(design["design"].root)
    report = check_bundle(bundle, n=2, seed=3, workers=1, reference=reference, progress=False)
    assert report.verdict == "accepted", report.disagreements()
    trained = [x for x in report.landings if x.draw.epoch > 0]
    assert trained and all("null" in x.excess for x in trained)  # Q = 30 <= 64 members: each null recomputed
    assert all(v == 0.0 for x in report.landings for v in x.max_abs.values())
    serve.reset()


def test_a_bundle_keeps_one_kind_of_contents(design: dict, reference: ReferenceLTM):
    with pytest.raises(BundleError, match="null-permutations"):
        make_bundle(design["grid"], design["design"].root, results_dir=design["tmp"] / "store", reference=reference)
    with pytest.raises(BundleError, match="scores"):
        Contents(scores="some")


def test_witness_ids_are_the_probes_seeded_subset():
    class Split:
        members = np.arange(100, 150)
        non_members = np.arange(200, 260)

    ids = witness_ids(Split(), seed=0, max_queries=512)
    assert len(ids) == 2 * RECHECK_QUERIES and len(ids & set(range(100, 150))) == RECHECK_QUERIES
    assert witness_ids(Split(), seed=0, max_queries=512) == ids and witness_ids(Split(), seed=1, max_queries=512) != ids
    assert len(witness_ids(Split(), seed=0, max_queries=4)) == 8


def test_the_book_does_not_check_or_read_a_design_still_running(design: dict, tmp_path, monkeypatch):
    import shutil

    from iclmem.bundle.command import ensure_checked
    from iclmem.bundle.layout import write_manifest

    partial = tmp_path / "partial"
    shutil.copytree(design["design"].root, partial)
    body = {k: v for k, v in read_bundle(partial).manifest.items() if k != "digest"}
    write_manifest(partial, {**body, "grid": {**body["grid"], "tasks": body["grid"]["tasks"] + 1}})
    monkeypatch.setenv("ICLMEM_BUNDLE", str(partial))
    monkeypatch.setenv("ICLMEM_CACHE", str(tmp_path / "cache"))
    serve.reset()
    [line] = ensure_checked(progress=False)
    assert "3 of 4 tasks" in line and "does not read it yet" in line
    assert serve.read_check(read_bundle(partial)) is None  # nothing was recomputed, nothing is served
    assert ensure_checked(progress=False, grid="another grid") == []  # a sweep checks its own grid's bundles only
    serve.reset()


def test_a_design_reads_the_null_and_effects_the_notebooks_compute_from_scores(design: dict, reference):
    from iclmem.bundle.design import Design
    from iclmem.chapters.ch03_probing.claims import effect_draws
    from iclmem.probe.null import PERMUTED_COLUMNS, null_summaries

    runs, summary, scores = _from_store(design, reference)
    to_bundle = {r.key: r.input_key for r in runs}
    computed = null_summaries(summary, scores, NullDraws(N_PERM, 0, 10), reading="bound", progress=False, workers=1)
    read = Design(read_bundle(design["design"].root))
    mine = read.summary[read.summary.run_key.isin(set(to_bundle.values()))]
    kept = read.null("bound", mine)
    assert len(read.summary) == 4 * 3  # 4 probed runs (the joint run's 2 views among them) x 3 epochs
    columns = ["perm", "epoch", "auc_loss", "auc_loss_lo", "tpr10_entropy", "mu_gap", "sigma_gap", "outcome"]
    pd.testing.assert_frame_equal(
        kept.sort_values(["perm", "store_run_key", "epoch"])[columns].reset_index(drop=True),
        computed.sort_values(["perm", "run_key", "epoch"])[columns].reset_index(drop=True),
        check_exact=True,
    )
    narrow = read.null("bound", mine, ["dataset"])  # what a rule reads, the same values (a large design's memory)
    assert set(narrow.columns) - {"outcome", "outcome_reading"} == {
        "perm",
        "run_key",
        "epoch",
        "dataset",
        "collapsed",
        "loss_ratio",
    } | set(PERMUTED_COLUMNS)
    pd.testing.assert_frame_equal(narrow, kept[list(narrow.columns)], check_exact=True)
    configs = list(summary[summary.epoch > 0][["run_key", "epoch"]].itertuples(index=False))
    from_scores = effect_draws([group_ranks(scores[k], e) for k, e in configs], N_PERM, 0)
    from_bundle = effect_draws([read.group_ranks(to_bundle[k], e) for k, e in configs], N_PERM, 0)
    assert from_bundle.groups == from_scores.groups and np.array_equal(from_bundle.values, from_scores.values)
    for run in runs:  # Sec. 4.1's metrics of each run, under the summary's run keys
        kept = read.metrics[read.metrics.run_key == run.input_key].drop(columns=["run_key", "bundle_task", "dataset"])
        kept = kept.dropna(axis=1, how="all").reset_index(drop=True)  # its task's columns of the union
        pd.testing.assert_frame_equal(kept[list(run.metrics.columns)], run.metrics, check_dtype=False)
    assert set(read.metrics.run_key) == set(read.summary.run_key)
    assert (read.metrics.learning_rate == 1e-2).all() and set(read.metrics.regime) == {
        s.regime for s in design["grid"].specs
    }
    cards = ["run_key", "epoch", "k", "alpha", "task"]  # the dataset card's columns, as probe_grid adds them
    grid_cards = summary.assign(run_key=summary.run_key.map(to_bundle))[cards]
    pd.testing.assert_frame_equal(
        mine[cards].sort_values(cards[:2]).reset_index(drop=True),
        grid_cards.sort_values(cards[:2]).reset_index(drop=True),
        check_dtype=False,
    )
    aucs = read.manipulation_aucs(to_bundle[runs[0].key], [1])
    pd.testing.assert_frame_equal(aucs, manipulation_aucs(scores[runs[0].key], epochs=[1]), check_exact=True)


def test_an_epoch_0_draw_of_random_pairs_trains_the_first_epoch_its_members_come_from(made, reference, tmp_path):
    """App. D's random pairs probe the members its first epoch drew: a check's draw at epoch 0 trains that epoch too
    (a real check of bundle/decide failed there: no member was logged, an empty split to compare)."""
    import dataclasses

    from iclmem.bundle.recheck import _train_to

    grid = made["grid"]
    tables = {name: source.load() for name, source in grid.sources.items()}
    [fixed] = [s for s in grid.specs if s.regime == "multi_task_fixed"]
    run = _train_to(dataclasses.replace(fixed, regime="multi_task_random"), tables, 0, reference, tmp_path)
    assert run.metrics.epoch.max() == 1 and set(run.probed_members) == set(fixed.datasets)
    assert all(len(ids) > 0 for ids in run.probed_members.values())


def test_the_chapters_read_their_claims_on_a_design_as_on_its_scores(design: dict, reference):
    """Issue 57 item 4: chapters 02-05 read their claims on the design's bundle with the rules they apply to their own
    grid; on the same runs the records agree with those computed from every score (a record of the bundle names the
    same runs, tables and numbers)."""
    from iclmem.bundle.design import Design
    from iclmem.chapters.ch02_finetuning import design_finetuning_claims, loss_ratio_claim
    from iclmem.chapters.ch03_probing import design_perturbation_claims, perturbation_claims, replayed_selection
    from iclmem.chapters.ch04_calibration import (
        calibration_claims,
        design_calibration_claims,
        design_summary,
        detectable_by_table,
        table_claim_grid,
    )
    from iclmem.chapters.ch04_calibration.claims import detectable_tables, tpr1_tables
    from iclmem.chapters.ch04_calibration.nulls import SummaryStack
    from iclmem.chapters.ch05_regimes import design_regime_claims, design_regime_rows
    from iclmem.chapters.ch_a6_instrument import design_instrument_claims, negative_control
    from iclmem.chapters.ch_a6_instrument.claims import p2_record
    from iclmem.probe.invariances import model_invariances
    from iclmem.probe.null import null_summaries, permutations
    from iclmem.probe.same_context import same_as_baseline
    from iclmem.probe.summary import membership_rows
    from iclmem.stats.outcomes import reclassify
    from iclmem.training.grid import grid_metrics

    runs, summary, scores = _from_store(design, reference)
    read = Design(read_bundle(design["design"].root))
    null = null_summaries(summary, scores, NullDraws(N_PERM, 0, 10), progress=False, workers=1)
    grid = reclassify(summary, "bound")
    on_design = {r["id"]: r for r in design_calibration_claims(read, "bound")}
    assert on_design == {r["id"]: r for r in calibration_claims(grid, permutations(reclassify(null, "bound")), "bound")}
    assert on_design["C1"]["null_draws"] == N_PERM  # the kept null's draws, not a default
    # the table-by-claim grid counts as the rules do; on the design's rows, and with table cls made a hit of both
    summary_on = design_summary(read, "bound")
    cls = (summary_on.dataset == "cls") & (summary_on.epoch > 0)
    forced = summary_on.copy()
    forced.loc[cls, "outcome"] = "detectable_memorization"
    forced.loc[cls, ["tpr10_loss", "tpr10_entropy", "tpr1_loss", "tpr1_entropy"]] = 0.5
    for frame, cls_hit in ((summary_on, None), (forced, 1.0)):
        table_grid = table_claim_grid(frame)
        stack = SummaryStack.of([frame], membership_rows)
        for column, rule in (
            ("C1: detectable (N), TPR@10% > 0.1", detectable_tables),
            ("C3: TPR@1% > 0.1", tpr1_tables),
        ):
            [evidence] = rule(stack)
            assert table_grid[column].sum() == round(evidence.statistic * table_grid[column].notna().sum())
            assert cls_hit is None or table_grid.loc["cls", column] == cls_hit
    assert set(table_grid.index) == {"cls", "reg"} and table_grid["C6: detectable at Q=30"].notna().all()
    per_table = detectable_by_table(forced).set_index("dataset")  # the per-table map: the best bound's row, and counts
    fine = forced[forced.epoch > 0]
    best = fine[["auc_loss_lo", "auc_entropy_lo"]].max(axis=1).groupby(fine.dataset).max()
    assert np.allclose(per_table.auc_lo, best.reindex(per_table.index))
    assert (per_table.auc_lo <= per_table.auc).all() and (per_table.auc <= per_table.auc_hi).all()
    assert per_table.loc["cls", "detectable"] == per_table.loc["cls", "rows"] == cls.sum()
    specs = [s for s in design["grid"].specs if s.regime == "single_task_fixed"]
    assert design_finetuning_claims(read) == [loss_ratio_claim(grid_metrics(specs, runs))]
    fine = membership_rows(grid[(grid.epoch > 0) & ~grid.collapsed.astype(bool)]).reset_index(drop=True)
    fine_null = null_summaries(fine, scores, NullDraws(N_PERM, 0, 10), reading="bound", progress=False, workers=1)
    invariances = model_invariances(reference)
    expected = perturbation_claims(
        [group_ranks(scores[k], e) for k, e in zip(fine.run_key, fine.epoch, strict=True)],
        "detectable-memorization" if (fine.outcome == "detectable_memorization").any() else "non-collapsed",
        invariances.row_order, n_perm=N_PERM, seed=0, selected=replayed_selection(fine, fine_null),
        same_as_base=same_as_baseline(invariances),
    )  # fmt: skip
    assert design_perturbation_claims(read, "bound") == expected
    rows = design_regime_rows(read)  # both tables in both regimes, each with its own kept null
    assert sorted(rows.groupby("regime").dataset.nunique().items()) == [
        ("multi_task_fixed", 2),
        ("single_task_fixed", 2),
    ]
    # P2 (A6) reads the single-task runs' null halves, one unit per non-member set (table, Q, seed)
    assert design_instrument_claims(read) == [p2_record(negative_control(summary))]
    sets = len(summary.groupby(["dataset", "query_size", "seed"]))
    assert design_instrument_claims(read)[0]["observed"].endswith(f" in {sets} sets")
    [c13] = design_regime_claims(read)
    assert c13["id"] == "C13" and " of 2 (" in c13["ours"] and c13["verdict"] != "not testable here"
    assert read.null(None, rows).groupby("regime").perm.nunique().to_dict() == {
        "multi_task_fixed": N_PERM,
        "single_task_fixed": N_PERM,
    }


def test_a_damaged_design_item_stops_its_reading_in_one_line_and_the_chapter_goes_on(design: dict, tmp_path, capsys):
    """A design's results are not recomputed in a build: a flipped byte in one of its items is named with the fix,
    and a chapter reading the design shows that instead of the design's claims (its grid's verdicts stand)."""
    import shutil

    from iclmem.bundle.design import Design
    from iclmem.chapters.ch04_calibration import design_calibration_claims
    from iclmem.report.design_glue import read_on_design

    copy = tmp_path / "design"
    shutil.copytree(design["design"].root, copy)
    read = Design(read_bundle(copy))
    assert len(read.summary) and len(read.null("bound", read.summary))  # intact: read
    with pytest.MonkeyPatch.context() as mp:  # intact: the chapter's claims, with no power table registered for it
        mp.setattr("iclmem.report.design_glue.load_design", lambda name: Design(read_bundle(copy)))
        _, table = read_on_design("tiny", design_calibration_claims)
    assert "C1" in table.index and set(table["registered status"]) == {"no power table registered"}
    single = set(read.summary[read.summary.regime == "single_task_fixed"].run_key)  # a run chapter 04 reads
    [entry] = [k for k, e in read.bundle.items.items() if e["kind"] == "null" and e["run"] in single][:1]
    target = next((copy / ITEMS / entry).glob("*.parquet"))
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    damaged = Design(read_bundle(copy))
    with pytest.raises(BundleError, match=rf"item {entry} is damaged .*git checkout -- bundle/"):
        damaged.null("bound", damaged.summary)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("iclmem.report.design_glue.load_design", lambda name: Design(read_bundle(copy)))
        the_design, table = read_on_design("decide", design_calibration_claims)
    assert the_design is None and table.empty
    assert f"item {entry} is damaged" in capsys.readouterr().err


def test_a_registered_extension_serves_its_claims_only_once_it_decides(design: dict, tmp_path, monkeypatch):
    """Issue 57: a registered extension of a design (grids/decide_c9.yaml for C9) is read only by the claims it was
    registered for, on the design and the extension together, and only once it is complete and its recomputed
    sample accepted here; before that those claims keep the design's reading and say where the extension stands."""
    import json
    import shutil

    from iclmem.bundle.design import Design
    from iclmem.chapters.ch04_calibration import on_design
    from iclmem.chapters.ch04_calibration.claims import calibration_claims

    for name in ("tiny", "tiny_c9"):  # the extension: here the same runs again, bundled under its own name
        shutil.copytree(design["design"].root, tmp_path / name)
    read = Design(read_bundle(tmp_path / "tiny"))
    grid_name = str(read.bundle.manifest["grid"]["name"])
    monkeypatch.setenv("ICLMEM_CACHE", str(tmp_path / "cache"))
    alone = {r["id"]: r for r in on_design.design_calibration_claims(read)}
    assert not any("extension" in r["reason"] for r in alone.values())  # no extension registered for it
    monkeypatch.setitem(on_design.EXTENSIONS, grid_name, ("tiny_c9", ("C9",)))
    waiting = {r["id"]: r for r in on_design.design_calibration_claims(read)}
    assert (
        "its registered extension is not read yet" in waiting["C9"]["reason"]
        and "not checked" in waiting["C9"]["reason"]
    )
    assert {k: v for k, v in waiting["C9"].items() if k != "reason"} == {
        k: v for k, v in alone["C9"].items() if k != "reason"
    }
    assert all(waiting[c] == alone[c] for c in alone if c != "C9")
    extension = Design(read_bundle(tmp_path / "tiny_c9"))
    path = serve.check_path(extension.bundle)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"verdict": "accepted"}))  # as a check that recomputed its sample would record
    joined = {r["id"]: r for r in on_design.design_calibration_claims(read)}
    assert all(joined[c] == alone[c] for c in alone if c != "C9")  # the other claims keep the registered design
    summary = pd.concat([on_design.design_summary(read), on_design.design_summary(extension)], ignore_index=True)
    both = pd.concat([read.null(None, on_design.design_summary(read))] * 2, ignore_index=True)
    [expected] = [r for r in calibration_claims(summary, both, "bound") if r["id"] == "C9"]
    assert {k: v for k, v in joined["C9"].items() if k != "reason"} == {
        k: v for k, v in expected.items() if k != "reason"
    }
    assert (
        joined["C9"]["reason"].startswith(expected["reason"])
        and "and its registered extension" in joined["C9"]["reason"]
    )
