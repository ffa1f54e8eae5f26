"""Split manifests: atomic JSON round trip and the cached results/manifests store (Sec. 4.1)."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from iclmem.data import (
    Dataset,
    ManifestError,
    SplitManifest,
    SplitValidationError,
    deduplicate,
    make_split,
    manifest_path,
    pool_frame,
    split_manifest,
)
from iclmem.store.integrity import seal


def _dataset(n: int = 300, shift: float = 0.0) -> Dataset:
    rng = np.random.default_rng(4)
    feats = pd.DataFrame({"x": np.arange(n), "s": rng.choice(["u", "v"], n)})
    return Dataset(
        "toy",
        feats,
        pd.Series(rng.normal(size=n) + shift, name="y"),
        "regression",
        "test",
        spec={"name_or_path": "toy"},
    )


def test_round_trip(tmp_path):
    m = make_split(_dataset(), 30, seed=1, label_condition="all")
    path = m.save(tmp_path / "m.json")
    loaded = SplitManifest.load(path)
    assert loaded == m
    assert loaded.to_dict() == m.to_dict()
    data = json.loads(path.read_text())
    assert data["seed_requested"] == 1 and data["label_condition"] == "all"
    assert set(data["pools"]) == {"members", "non_members", "context"}
    assert data["dedup"]["n_output"] == 300 and data["card"]["n"] == 300
    assert os.listdir(tmp_path) == ["m.json"]  # no temporary file left behind


def test_to_dict_is_asdict_with_plain_pools_and_does_not_alias_the_manifest():
    """Store keys hash to_dict (through identity): it must equal what dataclasses.asdict gives, key order included."""
    from dataclasses import asdict

    m = make_split(_dataset(), 30, seed=1, label_condition="all")
    assert m.randomized_labels  # label condition "all": every pool's labels randomized
    expected = asdict(m)
    expected["pools"] = {k: np.asarray(v).tolist() for k, v in m.pools.items()}
    expected["randomized_labels"] = {k: np.asarray(v).tolist() for k, v in m.randomized_labels.items()}
    data = m.to_dict()
    assert json.dumps(data) == json.dumps(expected)
    data["card"]["n"] = -1
    data["pools"]["members"].append(-1)
    assert m.card["n"] == 300 and -1 not in list(m.pools["members"])  # a copy, not the manifest's own containers


def test_manifest_path_and_env(tmp_path, monkeypatch):
    assert manifest_path("spotify", 50, 0, "none", tmp_path) == tmp_path / "manifests" / "spotify-Q50-s0-none.json"
    monkeypatch.setenv("ICLMEM_RESULTS", str(tmp_path / "r"))
    assert manifest_path("a", 512, 3, "members") == tmp_path / "r" / "manifests" / "a-Q512-s3-members.json"


def test_split_manifest_writes_then_reuses(tmp_path):
    ds = _dataset()
    m = split_manifest(ds, 30, seed=2, label_condition="members", results_dir=tmp_path)
    path = tmp_path / "manifests" / "toy-Q30-s2-members.json"
    assert path.exists()
    path.write_text(path.read_text().replace('"draws": 1', '"draws": 99'))  # marks the stored copy
    seal(path)  # ... with its completion record (an edit without one is damage: redrawn,
    # tests/store/test_store_integrity.py)
    again = split_manifest(ds, 30, seed=2, label_condition="members", results_dir=tmp_path)
    assert again.draws == 99 and again.pools == m.pools
    fresh = split_manifest(ds, 30, seed=2, label_condition="members", results_dir=tmp_path, refresh=True)
    assert fresh.draws == 1


def test_split_manifest_redraws_when_table_changes(tmp_path):
    split_manifest(_dataset(), 30, results_dir=tmp_path)
    other = split_manifest(_dataset(shift=1.0), 30, results_dir=tmp_path)
    stored = SplitManifest.load(tmp_path / "manifests" / "toy-Q30-s0-none.json")
    assert stored.table_fingerprint == other.table_fingerprint
    with pytest.raises(ManifestError, match="refresh=True"):
        stored.check_table(deduplicate(_dataset()))


def test_no_manifest_left_when_validation_fails(tmp_path):
    with pytest.raises(SplitValidationError):
        split_manifest(_dataset(n=40), 5, results_dir=tmp_path, max_redraws=2)
    assert not (tmp_path / "manifests").exists() or not any((tmp_path / "manifests").iterdir())


def test_pool_frame_uses_randomized_labels():
    ds = deduplicate(_dataset())
    m = make_split(ds, 30, label_condition="members")
    X, y = pool_frame(m, ds, "members")
    assert X.index.tolist() == m.members.tolist()
    assert y.tolist() == m.randomized_labels["members"]
    _, y_non = pool_frame(m, ds, "non_members")
    assert y_non.tolist() == ds.target.to_numpy()[m.non_members].tolist()


def test_malformed_manifest(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ManifestError, match="delete it"):
        SplitManifest.load(bad)
    bad.write_text(json.dumps({"format_version": 1, "dataset": "x"}))
    with pytest.raises(ManifestError, match="malformed"):
        SplitManifest.load(bad)
