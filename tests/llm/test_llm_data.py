"""LLM replication data: loading (fixture files in the Hugging Face schema), sampling, segment pairs, bad input."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from iclmem.llm.datasets import (
    DatasetUnavailableError,
    Instance,
    Sample,
    SamplingError,
    UnknownLLMDatasetError,
    assign_members,
    demonstrations_for_k,
    load_dataset,
    sample_instances,
)
from iclmem.llm.replication import ReplicationConfig
from iclmem.llm.segments import split_instance

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split()


def write_trec(path, n_per_label: int = 12) -> None:
    rng = np.random.default_rng(0)
    rows = [
        {"text": " ".join(rng.choice(WORDS, size=int(rng.integers(6, 16)))) + f" q{lab}_{i}?", "coarse_label": lab}
        for lab in range(6)
        for i in range(n_per_label)
    ]
    pd.DataFrame(rows).to_csv(path, index=False)


def write_wnli(path, n_per_label: int = 10) -> None:
    with open(path, "w") as f:
        for lab in (0, 1):
            for i in range(n_per_label):
                f.write(
                    json.dumps(
                        {
                            "sentence1": f"The {WORDS[i]} saw the {WORDS[i + 1]} because it was {lab}.",
                            "sentence2": f"The {WORDS[i]} was {lab}.",
                            "label": lab,
                            "idx": lab * 100 + i,
                        }
                    )
                    + "\n"
                )
        f.write(json.dumps({"sentence1": "  ", "sentence2": "Empty first sentence.", "label": 0, "idx": 999}) + "\n")


@pytest.fixture
def trec(tmp_path):
    path = tmp_path / "trec.csv"
    write_trec(path)
    return load_dataset("trec", data_files=path)


def test_load_fixture_files_in_hf_schema(tmp_path, trec):
    assert len(trec.instances) == 72 and set(trec.label_counts()) == set(trec.spec.labels)
    wnli_path = tmp_path / "wnli.jsonl"
    write_wnli(wnli_path)
    wnli = load_dataset("wnli", data_files=wnli_path)
    assert wnli.n_dropped_empty == 1 and len(wnli.instances) == 20
    inst = wnli.instances[0]
    assert inst.id == "wnli:train:0" and len(inst.parts) == 2 and inst.label == "not_entailment"
    # DBpedia as parquet, labels given by name; an instance is the article's title and abstract (paper App. B)
    pd.DataFrame(
        {
            "title": ["Acme Ltd.", "Blue Moon", "Blue Moon"],
            "content": ["Acme is a company in Milan.", "Blue Moon is a 1990 film by someone.", None],
            "label": ["company", "film", "film"],
        }
    ).to_parquet(tmp_path / "db.parquet")
    db = load_dataset("dbpedia", data_files=tmp_path / "db.parquet")
    assert [i.label for i in db.instances] == ["company", "film"] and db.n_dropped_empty == 1  # no abstract: dropped
    assert [i.parts for i in db.instances] == [
        ("Acme Ltd. Acme is a company in Milan.",),
        ("Blue Moon. Blue Moon is a 1990 film by someone.",),
    ]
    pd.DataFrame({"content": ["A is a company in Milan."], "label": [0]}).to_csv(tmp_path / "no_title.csv", index=False)
    with pytest.raises(DatasetUnavailableError, match="lacks the columns \\['title'\\]"):
        load_dataset("dbpedia", data_files=tmp_path / "no_title.csv")


def test_shipped_carte_table_serialized_as_text():
    data = load_dataset("wine_vivino")
    assert len(data.instances) > 10000 and set(data.label_counts()) == {"red", "white", "sparkling", "rose"}
    text = data.instances[0].text
    assert text.startswith("Name is ") and "Winery is " in text and "Wine_Type" not in text


def test_bad_input_unknown_dataset_missing_file_and_columns(tmp_path):
    with pytest.raises(UnknownLLMDatasetError, match="unknown dataset 'nope'.*wnli"):
        load_dataset("nope")
    with pytest.raises(DatasetUnavailableError, match="does not exist"):
        load_dataset("trec", data_files=tmp_path / "missing.csv")
    pd.DataFrame({"question": ["x y"], "label": [0]}).to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(DatasetUnavailableError, match="lacks the columns"):
        load_dataset("trec", data_files=tmp_path / "bad.csv")


def test_empty_instances_are_dropped_and_refused(tmp_path):
    pd.DataFrame({"text": ["", "   ", "oneword", "two words", None], "coarse_label": [0, 1, 2, 3, 4]}).to_csv(
        tmp_path / "t.csv", index=False
    )
    data = load_dataset("trec", data_files=tmp_path / "t.csv")
    assert data.n_dropped_empty == 4 and [i.text for i in data.instances] == ["two words"]
    with pytest.raises(ValueError, match="at least 2"):
        split_instance(Instance("x", "entity", ("",)), "text")
    with pytest.raises(ValueError, match="two non-empty"):
        split_instance(Instance("x", "entailment", ("A sentence.", " ")), "nli")


def test_instances_and_demonstrations_disjoint_and_balanced(trec):
    s = sample_instances(trec, 12, 30, seed=3)
    ids_i, ids_d = {i.id for i in s.instances}, {d.id for d in s.demonstrations}
    assert len(ids_i) == 12 and len(ids_d) == 30 and not ids_i & ids_d
    assert set(Counter(i.label for i in s.instances).values()) == {2}
    assert set(Counter(d.label for d in s.demonstrations).values()) == {5}
    assert sample_instances(trec, 12, 30, seed=3) == s  # reproducible
    assert sample_instances(trec, 12, 30, seed=4).instances != s.instances
    with pytest.raises(SamplingError, match="has 12 rows"):
        sample_instances(trec, 60, 60, seed=0)


def test_nested_demonstrations_in_fixed_random_order_per_k(trec):
    s = sample_instances(trec, 6, 30, seed=0)
    d6, d12, d30 = (demonstrations_for_k(s, k) for k in (6, 12, 30))
    assert {d.id for d in d6} < {d.id for d in d12} < {d.id for d in d30}
    assert demonstrations_for_k(s, 12) == d12  # fixed per k
    assert [d.id for d in d12] != [d.id for d in s.demonstrations[:12]]  # shuffled, not the pool order
    assert set(Counter(d.label for d in d6).values()) == {1}  # every prefix stays balanced
    assert demonstrations_for_k(s, 0) == []
    with pytest.raises(SamplingError, match="k=31 is larger than the demonstration pool"):
        demonstrations_for_k(s, 31)
    with pytest.raises(SamplingError, match="larger than the demonstration pool"):
        ReplicationConfig(ks=(0, 25), n_demonstrations=20)


def test_members_are_a_stratified_subset(trec):
    s = assign_members(sample_instances(trec, 12, 6, seed=0), 0.5)
    members = [i for i in s.instances if s.is_member(i)]
    assert len(members) == 6 and set(Counter(i.label for i in members).values()) == {1}
    assert not {d.id for d in s.demonstrations} & s.members


def test_segment_split_bounds_and_per_instance_variation():
    words = " ".join(f"w{i}" for i in range(50))
    insts = [Instance(f"id{i}", "x", (words,)) for i in range(200)]
    pairs = [split_instance(i, "text", seed=0, segment_min=0.6, segment_max=0.8) for i in insts]
    shares = np.array([len(p.first.split()) / 50 for p in pairs])
    assert shares.min() >= 0.6 - 1 / 50 and shares.max() <= 0.8 + 1 / 50
    assert len(set(shares)) >= 8  # different instances, different cut points
    assert all(p.first + " " + p.second == words for p in pairs)
    assert split_instance(insts[5], "text", seed=0) == pairs[5]  # same instance, same cut
    narrow = [split_instance(i, "text", seed=0, segment_min=0.3, segment_max=0.3) for i in insts[:5]]
    assert {len(p.first.split()) for p in narrow} == {15}
    with pytest.raises(ValueError, match="segment_min"):
        split_instance(insts[0], "text", segment_min=0.9, segment_max=0.5)
    short = split_instance(Instance("s", "x", ("a b",)), "text")
    assert (short.first, short.second) == ("a", "b")


def test_nli_pairs_split_at_the_sentence_boundary():
    p = split_instance(Instance("n", "entailment", ("The cat sat on the mat.", "A cat sat.")), "nli", seed=0)
    assert (p.first, p.second, p.fraction) == ("The cat sat on the mat.", "A cat sat.", None)


@pytest.fixture
def hf_mirror(tmp_path, monkeypatch):
    import datasets
    from hf_fixtures import write_hf_mirror

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # nothing is downloaded
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf_cache")
    monkeypatch.setenv("ICLMEM_HF_DATASETS_DIR", str(write_hf_mirror(tmp_path / "mirror")))
    return tmp_path / "mirror"


@pytest.mark.parametrize(
    "name, n, labels",
    [
        ("wnli", 12, {"entailment", "not_entailment"}),
        ("rte", 12, {"entailment", "not_entailment"}),
        ("trec", 12, {"abbreviation", "entity", "description", "human", "location", "numeric"}),
        ("dbpedia", 12, None),
    ],
)
def test_hugging_face_loaders_read_local_copies_of_the_hub_repositories(hf_mirror, name, n, labels):
    data = load_dataset(name, "train")
    assert data.n_rows == n and len(data.instances) == n and data.source.startswith("hf:")
    got = {i.label for i in data.instances}
    assert got == labels if labels else len(got) == n  # DBpedia: 12 rows, 12 of its 14 classes
    if data.spec.kind == "nli":
        assert all(len(i.parts) == 2 for i in data.instances) and data.instances[0].parts[1] == "The alpha was late 0."
    if name == "wnli":
        assert len(load_dataset(name, "validation").instances) == 4


def test_a_missing_local_copy_names_the_fix(hf_mirror, monkeypatch):
    monkeypatch.setenv("ICLMEM_HF_DATASETS_DIR", str(hf_mirror / "nowhere"))
    with pytest.raises(DatasetUnavailableError, match="ICLMEM_HF_DATASETS_DIR is set but"):
        load_dataset("wnli")


@pytest.mark.parametrize(
    "seed, n_instances, n_demonstrations", [(0, 16, 50), (1, 16, 50), (0, 200, 200), (3, 200, 200)]
)
def test_members_non_members_and_demonstrations_share_no_winery(seed, n_instances, n_demonstrations):
    """wine_vivino's segment to replicate ends with the winery: a winery seen in a demonstration (or in the fine-tuning
    set) would leak the answer, so members, non-members and demonstrations are drawn from disjoint wineries."""
    from iclmem.llm.datasets import carte_data_dir

    data = load_dataset("wine_vivino")
    table = pd.read_parquet(carte_data_dir() / data.spec.carte_file)

    def wineries(instances) -> set[str]:  # from the raw table (instance id = data set:split:row position)
        return {str(table.iloc[int(i.id.rsplit(":", 1)[1])]["Winery"]) for i in instances}

    s = assign_members(sample_instances(data, n_instances, n_demonstrations, seed=seed), 0.5)
    members = wineries(i for i in s.instances if s.is_member(i))
    non_members = wineries(i for i in s.instances if not s.is_member(i))
    demos = wineries(s.demonstrations)
    shared = len(members & non_members) + len(members & demos) + len(non_members & demos)
    assert shared == 0, (
        f"{len(members & non_members)} wineries shared by members and non-members, "
        f"{len(members & demos)} by members and demonstrations, "
        f"{len(non_members & demos)} by non-members and demonstrations"
    )
    assert len(s.instances) == n_instances and len(s.demonstrations) == n_demonstrations


def write_wnli_shared(path, n_premises: int = 12, per_premise: int = 3) -> None:
    """WNLI-like rows where each sentence 1 has several sentence 2 with different labels (as the paper found,
    Sec. 5)."""
    rows = [
        {
            "sentence1": f"The {WORDS[p]} saw the {WORDS[p + 1]} because it was there {p}.",
            "sentence2": f"The {WORDS[(p + j) % len(WORDS)]} was there {j}.",
            "label": (p + j) % 2,
            "idx": p * 10 + j,
        }
        for p in range(n_premises)
        for j in range(per_premise)
    ]
    pd.DataFrame(rows).to_json(path, orient="records", lines=True)


def test_split_by_key_entity_keeps_each_premise_in_one_pool(tmp_path):
    write_wnli_shared(tmp_path / "w.jsonl")
    data = load_dataset("wnli", data_files=tmp_path / "w.jsonl")
    assert data.spec.key_entity == "sentence1" and len({i.group for i in data.instances}) == 12
    for seed in range(5):
        s = assign_members(sample_instances(data, 4, 6, seed=seed), 0.5)
        pools = [
            {i.group for i in s.instances if s.is_member(i)},
            {i.group for i in s.instances if not s.is_member(i)},
            {d.group for d in s.demonstrations},
        ]
        assert [len(p) for p in pools] == [2, 2, 6]  # one instance per premise; demonstrations too (one row each)
        assert not (pools[0] & pools[1]) and not (pools[0] & pools[2]) and not (pools[1] & pools[2])
        assert set(Counter(i.label for i in s.instances).values()) == {2}
        same = sample_instances(data, 4, 6, seed=seed)
        assert same == sample_instances(data, 4, 6, seed=seed)  # same seed, same split
    assert len({sample_instances(data, 4, 6, seed=seed).instances for seed in range(5)}) > 1
    with pytest.raises(SamplingError, match="key entities left"):
        sample_instances(data, 6, 8, seed=0)  # 14 rows wanted from 12 premises: 36 rows are not enough


def test_datasets_without_a_key_entity_split_by_row(trec):
    assert trec.spec.key_entity is None and all(i.group is None for i in trec.instances)
    s = sample_instances(trec, 12, 60, seed=0)  # every row of the 72 in some pool: possible only row by row
    assert len({i.id for i in (*s.instances, *s.demonstrations)}) == 72


def test_members_are_refused_when_instances_share_a_key_entity():
    insts = tuple(Instance(f"i{j}", "red", (f"wine {j}",), group="Same Winery") for j in range(2))
    with pytest.raises(SamplingError, match="share a key entity"):
        assign_members(Sample(insts, (), 0), 0.5)
