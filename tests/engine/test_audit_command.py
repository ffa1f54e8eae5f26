"""``iclmem audit`` (issue 56): from a checkpoint, its base and two files to a verdict with its null rate, power and
sensitivity; the split checked first; bad inputs as one line and exit status 2.

The reference LTM is fine-tuned briefly on 30 rows of the shipped ``wine_pl`` table (regression); its members and 30
non-members are written as two CSV files (and the whole table as a third, for ``--table``), and the audit is run
through ``iclmem.cli.main``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from iclmem.adapters import load_model
from iclmem.adapters.tiny import write_tiny_checkpoint
from iclmem.cli import main
from iclmem.data import deduplicate, load_dataset
from iclmem.ltm import ICLTask, TableEncoder, load_checkpoint, subsample_features
from iclmem.probe.audit import AuditRows, audit_fine_tuned
from iclmem.probe.audit.audit_run import check_split
from iclmem.probe.audit.inputs import AuditConfig, AuditInputError, read_audit_files, read_audit_inputs
from iclmem.probe.audit.split_check import (
    combine_files,
    determining_feature,
    feature_matrix,
    matched_subsample,
    place_in_table,
)
from iclmem.probe.audit.verdict import equivalence
from iclmem.probe.settings import ProbeSettings

torch.set_num_threads(1)
N = 30  # members, and as many non-members
FAST = ["--n-boot", "100", "--permutations", "50", "--no-progress"]


def _fine_tune(model, task: ICLTask, steps: int, lr: float):
    """What a user does with their own code: AdamW steps on (context, members)."""
    theta = model.clone()
    opt = torch.optim.AdamW(theta.trainable_parameters(), lr=lr, weight_decay=0.01)
    for _ in range(steps):
        loss = theta.predict([task], grad=True)[0].loss().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return theta


@pytest.fixture(scope="module")
def wine(tmp_path_factory):
    """members.csv, non_members.csv (30 rows each of wine_pl), the reference fine-tuned on the members (saved with
    ReferenceLTM.save), and the in-memory table of both files."""
    folder = tmp_path_factory.mktemp("audit")
    table = deduplicate(load_dataset("wine_pl"))
    order = np.random.default_rng(1).permutation(table.n)
    a, b, ctx = order[:N], order[N : 2 * N], order[2 * N : 2 * N + 64]
    frame = table.features.assign(price=table.target)
    frame.iloc[a].to_csv(folder / "members.csv", index=False)
    frame.iloc[b].to_csv(folder / "non_members.csv", index=False)
    frame.to_csv(folder / "table.csv", index=False)  # the whole table the model was fine-tuned from (--table)
    both = np.r_[a, b]
    sub = table.with_(
        features=table.features.iloc[both].reset_index(drop=True), target=table.target.iloc[both].reset_index(drop=True)
    )
    encoder = TableEncoder().fit(sub.features)
    x = encoder.transform(table.features)[:, subsample_features(len(encoder.columns), 30, 0)]
    y = table.target.to_numpy()
    task = ICLTask(x[ctx], y[ctx], x[a], y[a], "regression", float(y[both].mean()), float(y[both].std() + 1e-6))
    theta = _fine_tune(load_model("reference"), task, steps=20, lr=1e-2)
    theta.save(folder / "theta.pt")
    return {"folder": folder, "sub": sub, "frame": frame, "a": a, "b": b, "table": table, "ctx": ctx}


def _audit(capsys, *args) -> tuple[int, str, str]:
    status = main(["audit", *map(str, args)])
    out = capsys.readouterr()
    return status, out.out, out.err


def _files(wine, non_members: Path | None = None) -> list:
    f = wine["folder"]
    return ["--members", f / "members.csv", "--non-members", non_members or f / "non_members.csv", "--target", "price"]


def test_the_command_reproduces_the_python_level_audit_and_detects_memorization(wine, capsys, tmp_path):
    status, out, _ = _audit(
        capsys, "--model", f"reference:{wine['folder'] / 'theta.pt'}", "--base", "reference", *_files(wine),
        "--out", tmp_path, *FAST,
    )  # fmt: skip
    result = json.loads((tmp_path / "audit.json").read_text())
    theta, ref = load_checkpoint(wine["folder"] / "theta.pt"), load_model("reference")
    python, _ = audit_fine_tuned(
        theta, ref, AuditRows(wine["sub"], np.arange(N), np.arange(N, 2 * N)), ProbeSettings(n_boot=100)
    )
    for key in ("auc_loss", "auc_loss_lo", "auc_entropy", "tpr10_loss", "raw_auc_loss", "mu_gap", "null_auc_loss"):
        assert result["probe_summary"][key] == pytest.approx(python[key], abs=1e-9), key
    assert result["attack"]["auc"] == pytest.approx(python["auc_loss"], abs=1e-12)  # the same scores
    assert result["attack"]["auc_lo"] > 0.5 and result["verdict"]["word"] == "detected" and status == 1
    assert 0 <= result["null"]["rate"] <= 0.2 and result["null"]["n_permutations"] == 50
    assert 0.5 < result["power"]["smallest_detectable_auc"] < 1
    assert result["attack"]["tpr0.1"] is None and "fewer than the 1000" in result["attack"]["tpr0.1_note"]
    assert len(result["rows_at_risk"]["top"]) == 10 and "row" not in result["rows_at_risk"]["top"][0]
    assert 1 <= result["rows_at_risk"]["top"][0]["file_row"] <= N
    assert not result["split"]["baseline"]["separates"] and result["split"]["dedup"]["n_members"] == N
    page = (tmp_path / "audit.html").read_text()
    assert "data:image/png;base64," in page and not re.search(r"(src|href)=['\"]https?:", page)
    assert "VERDICT: detected (exit status 1)" in out and "null rate" in out
    assert result["encoding"]["lower_bound"] and "read this AUC as a lower bound next to the chain's" in out


def test_with_the_full_table_the_command_reproduces_the_chains_auc(wine, capsys, tmp_path):
    """``--table``: the reference LTM fine-tuned as a controlled run is (encoder fitted on every row of the table,
    target statistics of the context pool), then audited from the members, non-members and full-table CSV files.
    The chain's AUC is :func:`iclmem.probe.audit.audit_fine_tuned` on the deduplicated table and the members' and
    non-members' row ids there, the call page A4 shows equal to notebooks 02-04.

    Tolerance: none. Both read the same float32 forward passes on the same encoded inputs in the same order, so the
    scores agree bit for bit and the AUC is asserted equal exactly; any real difference would show at 1e-3 anyway
    (an AUC on 30 + 30 rows moves in steps of 1/900 when a pair's order changes).
    """
    table, a, b, ctx = wine["table"], np.sort(wine["a"]), np.sort(wine["b"]), wine["ctx"]
    encoder = TableEncoder().fit(table.features)
    x = encoder.transform(table.features)[:, subsample_features(len(encoder.columns), 30, 0)]
    y, pool = table.target.to_numpy(), np.setdiff1d(np.arange(table.n), np.r_[a, b])
    task = ICLTask(x[ctx], y[ctx], x[a], y[a], "regression", float(y[pool].mean()), float(y[pool].std() + 1e-6))
    theta = _fine_tune(load_model("reference"), task, steps=20, lr=1e-2)
    theta.save(tmp_path / "theta.pt")
    status, out, _ = _audit(
        capsys, "--model", f"reference:{tmp_path / 'theta.pt'}", "--base", "reference", *_files(wine),
        "--table", wine["folder"] / "table.csv", "--out", tmp_path / "out", *FAST,
    )  # fmt: skip
    result = json.loads((tmp_path / "out" / "audit.json").read_text())
    theta, ref = load_checkpoint(tmp_path / "theta.pt"), load_model("reference")
    chain, _ = audit_fine_tuned(theta, ref, AuditRows(table, a, b), ProbeSettings(n_boot=100))
    assert result["attack"]["auc"] == chain["auc_loss"] and status == 1, (result["attack"]["auc"], chain["auc_loss"])
    for key in ("auc_loss_lo", "auc_entropy", "tpr10_loss", "raw_auc_loss", "mu_gap", "null_auc_loss"):
        assert result["probe_summary"][key] == pytest.approx(chain[key], abs=1e-12), key
    assert not result["encoding"]["lower_bound"] and "the AUC is the chain's" in out
    assert result["split"]["table"]["n_rows_deduplicated"] == table.n and result["split"]["dedup"]["n_members"] == N
    top = result["rows_at_risk"]["top"][0]
    assert 1 <= top["file_row"] <= N  # still the line in the members file


def test_a_shifted_non_member_file_is_not_called_memorization(wine, capsys, tmp_path):
    shifted = wine["frame"].iloc[wine["b"]].copy()
    shifted["ABV"] = shifted["ABV"] + 4.0  # non-members drawn from another distribution: stronger wines
    shifted["volume"] = shifted["volume"] * 2  # ... sold in magnums
    path = tmp_path / "shifted.csv"
    shifted.to_csv(path, index=False)
    model = ["--model", f"reference:{wine['folder'] / 'theta.pt'}", "--base", "reference"]
    status, out, _ = _audit(capsys, *model, *_files(wine, path), "--out", tmp_path / "a", *FAST)
    result = json.loads((tmp_path / "a" / "audit.json").read_text())
    assert status == 3 and result["verdict"]["word"] == "cannot tell: distribution shift"
    assert result["split"]["baseline"]["separates"] and "SEPARATES the files" in out
    assert "cannot be read as memorization" in result["verdict"]["sentence"] and "VERDICT: detected" not in out
    assert {"ABV", "volume"} <= {c["column"] for c in result["split"]["columns"] if c["differs"]}
    assert "--match" in (tmp_path / "a" / "audit.html").read_text()
    config = AuditConfig(model="reference", base="reference", target="price", match=True, n_boot=100,
                         members=str(wine["folder"] / "members.csv"), non_members=str(path))  # fmt: skip
    with pytest.raises(AuditInputError, match="--match keeps .* the files hardly overlap"):
        check_split(combine_files(*read_audit_files(config), "price"), config)  # nothing left to match
    half = wine["frame"].iloc[wine["b"]].copy()
    half.loc[half.index[::2], "ABV"] += 4.0  # half the non-members shifted: the matched subsample keeps the rest
    half.to_csv(path, index=False)
    audit = combine_files(*read_audit_files(config), "price")
    split, members, non_members = check_split(audit, config)  # --match, without probing
    matched = split["matched"]
    assert matched["n_members"] == matched["n_non_members"] == len(members) == len(non_members) < N
    assert matched["baseline"]["auc"] < split["baseline"]["auc"]


def test_the_model_against_itself_is_not_detected_with_its_power_and_an_equivalence_reading(wine, capsys, tmp_path):
    config = tmp_path / "audit.yaml"
    config.write_text(
        f"model: reference\nbase: reference\nmembers: {wine['folder'] / 'members.csv'}\n"
        f"non_members: {wine['folder'] / 'non_members.csv'}\ntarget: price\nout: {tmp_path / 'yaml'}\nshow_rows: true\n"
    )
    status, out, _ = _audit(capsys, "--config", config, *FAST)
    result = json.loads((tmp_path / "yaml" / "audit.json").read_text())
    assert status == 0 and result["verdict"]["word"] == "not detected" and result["attack"]["auc"] == 0.5
    assert result["power"]["smallest_detectable_auc"] == pytest.approx(0.72, abs=0.05)  # 30 + 30 rows
    reading = result["equivalence"]["reading"]
    assert reading.startswith("cannot say at this size") and result["equivalence"]["queries_needed"] > N
    assert "smallest AUC detectable" in out and "equivalence: cannot say" in out
    assert set(result["rows_at_risk"]["top"][0]["row"]) == set(wine["frame"].columns)  # show_rows from the file


def test_the_yaml_file_and_the_flags_are_one_audit(wine, capsys, tmp_path, monkeypatch):
    import iclmem.probe.audit.audit_run as audit_run

    seen = []

    def capture(config, **kwargs):
        seen.append(config)
        raise audit_run.AuditInputError("captured")

    monkeypatch.setattr(audit_run, "run_audit", capture)
    flags = ["--model", "reference", "--base", "reference", *_files(wine), "--out", tmp_path, "--show-rows", "--drop",
             "vegan,natural", "--max-queries", "20", "--control", "--table", wine["folder"] / "table.csv"]  # fmt: skip
    assert _audit(capsys, *flags)[0] == 2
    (tmp_path / "a.yaml").write_text(
        f"model: reference\nbase: reference\nmembers: {wine['folder'] / 'members.csv'}\nnon-members: "
        f"{wine['folder'] / 'non_members.csv'}\ntarget: price\nout: {tmp_path}\nshow_rows: true\n"
        "drop: [vegan, natural]\nmax_queries: 20\ncontrol: true\n"
        f"table: {wine['folder'] / 'table.csv'}\n"
    )
    assert _audit(capsys, "--config", tmp_path / "a.yaml")[0] == 2
    assert _audit(capsys, "--config", tmp_path / "a.yaml", "--max-queries", "50")[0] == 2  # a flag wins
    assert seen[0] == seen[1] and seen[2].max_queries == 50 and seen[0].drop == ("vegan", "natural")
    assert seen[0].table == str(wine["folder"] / "table.csv")


def test_equivalence_reads_below_the_margin_at_a_size_that_shows_it():
    rng = np.random.default_rng(0)
    n = 400
    delta = pd.DataFrame({"query_id": np.arange(2 * n), "is_member": np.r_[np.ones(n, bool), np.zeros(n, bool)]})
    delta["score"] = rng.normal(size=2 * n)
    auc = float((delta.score[:n].to_numpy()[:, None] > delta.score[n:].to_numpy()[None]).mean())
    found = equivalence(delta, auc, n_boot=200)
    assert found["below_margin"] and found["reading"].startswith("below AUC 0.60 with 95% confidence")


def test_the_matched_subsample_and_the_baseline_encoding():
    p = np.r_[np.linspace(0.1, 0.9, 20), np.linspace(0.5, 0.99, 30)]
    members, non = matched_subsample(p, np.arange(20), np.arange(20, 50), seed=0)
    assert len(members) == len(non) and len(members) >= 5 and set(non) <= set(range(20, 50))
    frame = pd.DataFrame({"name": ["c", "a", "b", None], "x": [1.0, 2.0, np.nan, 4.0]})
    codes = feature_matrix(frame)
    assert codes[:, 0].tolist()[:3] == [2.0, 0.0, 1.0] and np.isnan(codes[3, 0])  # sorted, not order of appearance
    assert np.array_equal(feature_matrix(frame.iloc[::-1])[::-1], codes, equal_nan=True)


def test_the_files_are_read_as_the_table_reads_and_placed_at_its_row_ids(tmp_path):
    rng = np.random.default_rng(0)
    full = pd.DataFrame({"id": np.arange(60), "a": rng.normal(size=60), "vintage": rng.integers(1990, 2020, 60)})
    full["vintage"] = full.vintage.astype(str).where(np.arange(60) % 7 != 6, "NV")  # text in the table ...
    full["y"] = rng.normal(size=60)
    full = pd.concat([full, full.iloc[[3]]], ignore_index=True)  # an exact duplicate, which deduplication drops
    full.to_csv(tmp_path / "t.csv", index=False)
    members = full.iloc[[50, 2, 10, 21, 30, 31, 35, 40, 42, 3]]
    non_members = full.iloc[[4, 8, 9, 11, 12, 14, 15, 16, 17, 18]]
    members.drop(columns="id").to_csv(tmp_path / "m.csv", index=False)  # ... numbers in the file
    non_members.drop(columns="id").to_csv(tmp_path / "n.csv", index=False)
    config = AuditConfig(model="reference", base="reference", target="y", drop=("id",), table=str(tmp_path / "t.csv"),
                         members=str(tmp_path / "m.csv"), non_members=str(tmp_path / "n.csv"))  # fmt: skip
    m, n, t = read_audit_inputs(config)
    assert list(m.columns) == list(t.columns) == ["a", "vintage", "y"] and m.vintage.dtype == t.vintage.dtype
    audit = place_in_table(combine_files(m, n, "y"), (m, n), t, "y", names=("m.csv", "n.csv"), table_name="t.csv")
    assert audit.table.n == 60 and audit.table_file["n_rows"] == 61  # as prepared_table reads t.csv
    assert audit.member_ids.tolist() == sorted(members.id) and audit.non_member_ids.tolist() == sorted(non_members.id)
    assert audit.file_rows[50] == 1 and audit.file_rows[3] == 10 and audit.file_rows[0] == 0  # lines in the files


# --- bad inputs: one line and exit status 2 ------------------------------------------------------------------------


def _tiny(folder: Path, n: int = 12, seed: int = 0, **columns) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "y": rng.integers(0, 2, n), **columns})
    return frame


def _bad_case(case: str, d: Path) -> list:
    m, nm = d / "m.csv", d / "n.csv"
    _tiny(d).to_csv(m, index=False)
    _tiny(d, seed=1).to_csv(nm, index=False)
    files = ["--members", m, "--non-members", nm]
    ref = ["--model", "reference", "--base", "reference"]
    if case == "unknown-column":
        return [*ref, *files, "--target", "y", "--drop", "idx"]
    if case == "target-unknown":
        return [*ref, *files, "--target", "label"]
    if case == "target-missing-in-one-file":
        _tiny(d, seed=1).drop(columns="y").to_csv(nm, index=False)
        return [*ref, *files, "--target", "y"]
    if case == "mismatched-columns":
        _tiny(d, seed=1).assign(c=1.0).to_csv(nm, index=False)
        return [*ref, *files, "--target", "y"]
    if case == "empty-file":
        nm.write_text("")
        return [*ref, *files, "--target", "y"]
    if case == "header-only-file":
        nm.write_text("a,b,y\n")
        return [*ref, *files, "--target", "y"]
    if case == "too-few-rows":
        _tiny(d, n=5).to_csv(m, index=False)
        return [*ref, *files, "--target", "y"]
    if case == "wrong-architecture":
        return ["--model", f"reference:{write_tiny_checkpoint('tabpfn', d / 'pfn.ckpt')}", "--base", "reference",
                *files, "--target", "y"]  # fmt: skip
    if case == "wrong-architecture-adapter":
        icl = write_tiny_checkpoint("tabicl", d / "icl.ckpt")
        return ["--model", f"tabpfn:{icl}", "--base", f"tabpfn:{icl}", *files, "--target", "y"]
    if case == "families-differ":
        pfn = write_tiny_checkpoint("tabpfn", d / "pfn.ckpt")
        return ["--model", f"tabpfn:{pfn}", "--base", "reference", *files, "--target", "y"]
    if case == "config-unknown-key":
        (d / "a.yaml").write_text("modle: reference\n")
        return ["--config", d / "a.yaml"]
    if case == "not-a-number":
        return [*ref, *files, "--target", "y", "--max-queries", "many"]
    if case == "rows-not-in-table":
        _tiny(d).iloc[:8].to_csv(d / "t.csv", index=False)  # 4 members and every non-member missing
        return [*ref, *files, "--target", "y", "--table", d / "t.csv"]
    if case == "table-lacks-a-column":
        _tiny(d).drop(columns="b").to_csv(d / "t.csv", index=False)
        return [*ref, *files, "--target", "y", "--table", d / "t.csv"]
    if case == "unknown-flag":
        return [*ref, *files, "--target", "y", "--bogus"]
    assert case == "target-not-given"
    return [*ref, *files]


BAD = {
    "unknown-column": r"unknown column\(s\) 'idx' in --drop: neither file has them",
    "target-unknown": r"unknown column: no target column 'label' in either file; .*set --target",
    "target-missing-in-one-file": r"the target 'y' is a column of m\.csv but not of n\.csv",
    "mismatched-columns": r"the files' columns differ: n\.csv has 'c' that m\.csv lacks",
    "empty-file": r"the non-members file .*n\.csv is empty",
    "header-only-file": r"the non-members file .*n\.csv has no rows \(only a header\)",
    "too-few-rows": r"too few rows: m\.csv keeps 5 rows .* fewer than the 10 the test can use",
    "wrong-architecture": r"reference:.*pfn\.ckpt: .*pfn\.ckpt is not a checkpoint of the reference architecture",
    "wrong-architecture-adapter": r"tabpfn:.*icl\.ckpt: .*(TabICL|tabicl)",
    "families-differ": r"--model is a tabpfn checkpoint but --base a reference one",
    "config-unknown-key": r"unknown setting\(s\) 'modle'; the settings are: model, base",
    "target-not-given": r"give --target",
    "not-a-number": r"max_queries must be int, got 'many'",
    "rows-not-in-table": r"16 rows of the two files are not in the table t\.csv \(4 of m\.csv, 12 of n\.csv; the "
    r"first: line 9 of m\.csv\); pass as --table the full table the model was fine-tuned from",
    "table-lacks-a-column": r"the table file t\.csv lacks 'b' that the files have; pass as --table the full table",
    "unknown-flag": r"unrecognized arguments: --bogus; see iclmem audit --help",
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_each_bad_input_is_one_line_and_exit_status_2(case, tmp_path, capsys):
    status, out, err = _audit(capsys, *_bad_case(case, tmp_path), "--out", tmp_path / "out", "--no-progress")
    lines = err.strip().splitlines()
    assert status == 2 and len(lines) == 1 and lines[0].startswith("iclmem audit: error: "), err
    assert re.search(BAD[case], lines[0]), lines[0]
    assert not (tmp_path / "out").exists() and not out.strip()


# --- TabPFN v2 and TabICL: their real architectures, random weights ------------------------------------------------


@pytest.mark.parametrize("kind", ["tabpfn", "tabicl"])
def test_a_tabpfn_or_tabicl_audit_runs_end_to_end(kind, tmp_path, capsys):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"a": rng.normal(size=60), "b": rng.normal(size=60), "c": rng.choice(["x", "y"], 60)})
    frame["y"] = rng.integers(0, 3, 60)
    frame.iloc[:30].to_csv(tmp_path / "m.csv", index=False)
    frame.iloc[30:].to_csv(tmp_path / "n.csv", index=False)
    base_path = write_tiny_checkpoint(kind, tmp_path / "base.ckpt", seed=1)
    base = load_model(f"{kind}:{base_path}")
    table = deduplicate(load_dataset(str(tmp_path / "m.csv"), target="y", task="classification"))
    encoder = TableEncoder().fit(table.features)
    x, y = encoder.transform(table.features), table.target.to_numpy()
    theta = _fine_tune(base, ICLTask(x, y, x, y), steps=10, lr=3e-3)
    theta.save(tmp_path / "ft.ckpt")
    (tmp_path / "control.yaml").write_text("control: true\ncontrol_epochs: 3\ncontrol_context_size: 16\n")
    status, out, _ = _audit(
        capsys, "--config", tmp_path / "control.yaml", "--model", f"{kind}:{tmp_path / 'ft.ckpt'}", "--base",
        f"{kind}:{base_path}", "--members", tmp_path / "m.csv", "--non-members", tmp_path / "n.csv", "--target", "y",
        "--out", tmp_path / "out", *FAST,
    )  # fmt: skip
    result = json.loads((tmp_path / "out" / "audit.json").read_text())
    assert (
        status in (0, 1)
        and result["verdict"]["exit_status"] == status
        and result["inputs"]["task"] == ("classification")
    )
    assert result["attack"]["n_members"] == 30 and result["probe_summary"]["n_non_members"] == 30
    assert result["control"]["n_members"] == 15 and result["control"]["recipe"]["epochs"] == 3
    assert "positive control: 3 fine-tuning steps" in out and "positive control: the probe" in out


def test_a_target_one_feature_determines_is_flagged_with_the_column():
    rng = np.random.default_rng(0)
    regime = rng.choice(["parliamentary", "presidential", "military", "monarchy"], 120)
    frame = pd.DataFrame({"gdp": rng.normal(size=120), "regime": regime})
    frame["democracy"] = np.isin(regime, ["parliamentary", "presidential"]).astype(int)  # regime fixes democracy
    audit = combine_files(frame.iloc[:60], frame.iloc[60:], "democracy")
    found = determining_feature(audit.table)
    assert found["determines"] and found["column"] == "regime" and found["score"] >= found["threshold"]
    audit = combine_files(frame.iloc[:60].drop(columns="regime"), frame.iloc[60:].drop(columns="regime"), "democracy")
    assert not determining_feature(audit.table)["determines"]
