"""SIGKILL ``iclmem book`` (and its kernel) at random instants of a tiny real book, notebooks 01 and 02
on tiny parameters: the same command then finishes, and its glued values, executed notebooks, build
folder, results store and cache equal an uninterrupted build's, with no temporary file left anywhere.
``tests/random_kills.py`` builds the book and says what the comparison ignores;
``benchmarks/kill_random.py`` runs the same check at 20 instants.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import torch
from random_kills import Baseline, TinyBook, _comparable, artifacts, baseline, instants, kill_at, temporary_files

pytestmark = pytest.mark.slow  # the whole file is slow (a module or session fixture builds a book)

INSTANTS, SEED = 3, 0


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[TinyBook, Baseline]:
    """The tiny book (package and notebooks copied now) and its uninterrupted build."""
    book = TinyBook.create(tmp_path_factory.mktemp("kill_random"))
    return book, baseline(book)


def test_the_uninterrupted_build_writes_a_manifest_a_finetuning_run_and_glued_values(
    built: tuple[TinyBook, Baseline],
) -> None:
    """What the kills are compared against holds real store artifacts and glue, and no temporary file."""
    book, reference = built
    assert any(rel.startswith("results/manifests/") for rel in reference.files), sorted(reference.files)
    assert any(rel.startswith("results/finetune/") and rel.endswith("/metrics.csv") for rel in reference.files)
    assert any(rel.startswith("results/finetune/") and rel.endswith(".pt") for rel in reference.files)
    for name in ("01_split_validation", "02_controlled_finetuning"):
        assert f"project/_build/executed/notebooks/{name}.ipynb" in reference.files
    assert "01_split_validation:max_tvd" in reference.glue and "02_controlled_finetuning:n_runs" in reference.glue
    assert temporary_files(book) == []


@pytest.mark.parametrize("number", range(INSTANTS))
def test_a_kill_at_a_random_instant_then_the_same_command_equals_the_uninterrupted_build(
    built: tuple[TinyBook, Baseline], number: int
) -> None:
    """Kill ``number`` of :data:`INSTANTS`, drawn uniformly over the measured build time (seed :data:`SEED`)."""
    book, reference = built
    instant = instants(INSTANTS, reference.seconds, SEED)[number]
    trial = kill_at(book, instant, reference)
    where = f"killed at {trial.instant_s} s ({trial.landed}); resume: {trial.resume_summary}"
    assert trial.resume_exit == 0, where
    assert trial.differing_glue == [], where
    assert trial.differing_files == [], where
    assert trial.temporary_left == [], where
    assert artifacts(book) == reference.files  # read again: the resumed build left nothing changing behind


def _executed(output_text: str, duration: float, cell_id: str) -> bytes:
    cell = {
        "cell_type": "code",
        "id": cell_id,
        "execution_count": 1,
        "metadata": {"papermill": {"duration": duration, "status": "completed"}},
        "outputs": [{"output_type": "stream", "name": "stdout", "text": output_text}],
        "source": "print(1)",
    }
    return json.dumps({"cells": [cell], "metadata": {"papermill": {"duration": duration}}}).encode()


def test_the_comparison_ignores_timings_and_cell_ids_but_not_outputs() -> None:
    """Only what ``IGNORED`` lists is left out: an output's text still counts."""
    rel = "project/_build/executed/notebooks/x.ipynb"
    same = _comparable(rel, _executed("1\n", 0.5, "aaaa"))
    assert _comparable(rel, _executed("1\n", 9.0, "bbbb")) == same
    assert _comparable(rel, _executed("2\n", 0.5, "aaaa")) != same
    meta = "project/_build/executed/notebooks/x.ipynb.cache.json"
    assert _comparable(meta, b'{"key": "k", "wall_s": 1}') == _comparable(meta, b'{"key": "k", "wall_s": 2}')
    assert _comparable(meta, b'{"key": "k", "wall_s": 1}') != _comparable(meta, b'{"key": "j", "wall_s": 1}')


def _glued(name: str, value: str) -> bytes:
    output = {
        "output_type": "display_data",
        "data": {"application/papermill.record/text/plain": value},
        "metadata": {"scrapbook": {"name": name, "mime_prefix": "application/papermill.record/"}},
    }
    cell = {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [output], "source": "glue()"}
    return json.dumps({"cells": [cell], "metadata": {}}).encode()


def test_the_comparison_ignores_the_glued_wall_time_but_no_other_glued_value() -> None:
    """``wall_minutes`` (0 when the run came from the store) is left out of the notebook too; ``n_runs`` is not."""
    rel = "project/_build/executed/notebooks/02_controlled_finetuning.ipynb"
    assert _comparable(rel, _glued("wall_minutes", "'0.1'")) == _comparable(rel, _glued("wall_minutes", "'0.0'"))
    assert _comparable(rel, _glued("n_runs", "1")) != _comparable(rel, _glued("n_runs", "2"))


def test_saving_the_same_weights_twice_gives_the_same_bytes(tmp_path: Path) -> None:
    """Found by the random kills: ``torch.save`` to the temporary path named the zip's records after it."""
    from iclmem.store.atomic import atomic_torch_save

    state = {"w": torch.arange(6.0)}
    first = atomic_torch_save(state, tmp_path / "a" / "weights.pt").read_bytes()
    second = atomic_torch_save(state, tmp_path / "b" / "weights.pt").read_bytes()
    assert first == second
    assert torch.equal(torch.load(tmp_path / "a" / "weights.pt", weights_only=True)["w"], state["w"])


def test_a_finished_runs_log_carries_no_time_of_writing(tmp_path: Path) -> None:
    """Found by the random kills: the gzip header of ``log.json.gz`` held the time it was written."""
    from iclmem.training.loop import Trained, write_finished

    write_finished(tmp_path, Trained([{"epoch": 1, "query_ids": [1, 2]}], [{"epoch": 1}], []), ("epoch",))
    data = (tmp_path / "log.json.gz").read_bytes()
    assert data[4:8] == b"\0\0\0\0"  # MTIME of RFC 1952's member header
    assert json.loads(gzip.decompress(data)) == [{"epoch": 1, "query_ids": [1, 2]}]


def test_the_appendix_shows_one_row_per_kill() -> None:
    """Appendix A2's table of ``benchmarks/results/kill_random.json``: a row per kill, temporary files counted."""
    from iclmem.chapters.ch_a2_benchmarks import kill_random_table, other_results

    row = {"instant_s": 1.5, "landed": "startup", "resume_s": 30.0, "resume_summary": "executed: a", "equal": True}
    result = {"rows": [{**row, "temporary_left": []}, {**row, "equal": False, "temporary_left": ["results/.x.tmp"]}]}
    table = kill_random_table(result)
    assert table["equal"].tolist() == [True, False]
    assert table["temporary files left"].tolist() == [0, 1]
    assert other_results({"kill_random": result}) == {}  # a section of its own
