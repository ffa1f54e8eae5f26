"""Shared fixtures: a tiny notebook, and the real book built once per session with tiny parameters."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: The controlled grid of 02-04 and A6, tiny: 02 fine-tunes it, 03, 04 and A6 probe it from the store.
_TINY_GRID: dict[str, object] = {
    "datasets": ["wine_pl"],
    "learning_rates": [0.001, 0.1],
    "query_sizes": [50],
    "epochs": 2,
    "context_size": 64,
}
_TINY_PROBE: dict[str, object] = {"probe_epochs": [0, 1, 2], "max_queries": 8, "n_boot": 20, "n_permutations": 100}
#: Parameters that make notebooks of the real book fast enough for the test suite.
BOOK_TEST_OVERRIDES: dict[str, dict[str, object]] = {
    "01_split_validation": {"datasets": ["wine_pl"], "query_sizes": [50]},
    # the design's reading of C10 is tested on a tiny design (tests/bundle/test_bundle_design.py)
    "02_controlled_finetuning": {**_TINY_GRID, "design": ""},
    "03_multiple_choice_probing": {**_TINY_GRID, **_TINY_PROBE, "design": ""},  # as 02: C12 on a tiny design
    # the readers are tested on a tiny design (tests/bundle), not on the shipped one as it grows
    "04_calibration": {**_TINY_GRID, **_TINY_PROBE, "design": ""},
    "A6_instrument": {  # the grid of 02-04 (read from the store) and its own controls
        **_TINY_GRID,
        **_TINY_PROBE,
        "control_epochs": [1, 2],
        "control_learning_rates": [0.001],
        "curve_datasets": ["wine_pl"],
        "curve_learning_rates": [0.001],
        "curve_epochs": [1, 2],
        "design": "",  # as 04: P2 on a tiny design (tests/bundle/test_bundle_design.py)
    },
    "05_realistic_regimes": {
        "datasets": ["wine_pl", "spotify"],
        "query_sizes": [50],
        "epochs": 1,
        "context_size": 32,
        "max_queries": 4,
        "probe_epochs": [0, 1],
        "n_boot": 20,
        "n_permutations": 100,
        "design": "",  # as 02
    },
    "A4_audit_your_model": {"epochs": 2, "probe_epochs": [0, 2], "max_queries": 4, "n_boot": 20},
    # tests/chapters/ch_a3_bad_inputs/test_bad_inputs.py runs every case; the page here shows three (the real
    # chapters' cases take a minute)
    "A3_bad_inputs": {"cases": ["parameter-unknown", "data-file-missing", "target-nan"]},
    "06_llm_kshot_replication": {
        "n_instances": 4,
        "n_demonstrations": 4,
        "ks": [0, 2],
        "finetune_epochs": 1,
        "llm_judge_pairs": 4,
        "completion_length": 8,
        "performance_completion_length": 3,
    },
    "07_mitigation": {"epochs": 2, "context_size": 32, "max_queries": 8, "n_boot": 20, "epsilons": [4.0, "inf"]},
}

TINY_NOTEBOOK = """\
# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Tiny notebook

# %% tags=["parameters"]
n = 3
rate = 0.5
name = "abc"
sizes = [1, 2]
flag = False
data_path = None

# %%
print(f"RESULT n={n} rate={rate} name={name} sizes={sizes} flag={flag} data_path={data_path}")
"""


def write_tiny_notebook(path: Path, source: str = TINY_NOTEBOOK) -> Path:
    """Write a small jupytext percent notebook (parameters n, rate, name, sizes, flag, data_path)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(source))
    return path


#: Slow tests marked by node id: single cases of parametrized tests that take seconds while their siblings take
#: milliseconds, and tests in files that do not import pytest.
SLOW_CASES: frozenset[str] = frozenset(
    {
        "tests/chapters/ch_a3_bad_inputs/test_bad_inputs.py::"
        "test_bad_input_is_answered_with_the_problem_and_the_fix[prompt-over-window]",
        "tests/chapters/ch_a3_bad_inputs/test_bad_inputs.py::test_each_store_case_does_what_it_documents[store-two-writers]",
        # files without their own ``import pytest`` (a decorator there would need one)
        "tests/engine/test_kill_finetune.py::test_killed_finetuning_resumes_to_the_uninterrupted_weights",
        "tests/probe/test_kill_probe.py::test_killed_probing_resumes_and_recomputes_nothing_it_stored",
        "tests/llm/test_llm_cache_kill_concurrent.py::test_sigkill_at_concurrency_4_loses_no_received_completion",
    }
)


@pytest.hookimpl(tryfirst=True)  # before -m "not slow" deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark slow every test that uses :func:`built_book` (the real book, minutes) and each of :data:`SLOW_CASES`."""
    for item in items:
        if "built_book" in getattr(item, "fixturenames", ()) or item.nodeid in SLOW_CASES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def make_notebook() -> Callable[..., Path]:
    """``make_notebook(path, source=TINY_NOTEBOOK)`` writes a notebook and returns its path."""
    return write_tiny_notebook


@pytest.fixture
def tiny_notebook(tmp_path: Path) -> Path:
    return write_tiny_notebook(tmp_path / "tiny.py")


@pytest.fixture(scope="session")
def book_overrides() -> dict[str, dict[str, object]]:
    return BOOK_TEST_OVERRIDES


@pytest.fixture(scope="session")
def built_book(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the project's book (its _toc.yml, notebooks and pages) through the CLI into a temp
    folder with :data:`BOOK_TEST_OVERRIDES`; return that build folder (html in ``html/``).

    Only tests/book/test_real_book.py uses it: ``make test`` runs the files on two pytest-xdist workers
    (``--dist loadfile``), and a session fixture is built once per worker that needs it."""
    from iclmem.cli import main

    tmp = tmp_path_factory.mktemp("book")
    build = tmp / "_build"
    args = ["book", "--root", str(REPO), "--build-dir", str(build)]
    for notebook, params in BOOK_TEST_OVERRIDES.items():
        for name, value in params.items():
            args += ["-p", notebook, name, str(value)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ICLMEM_RESULTS", str(tmp / "results"))  # keep the repository's results/ untouched
        mp.setenv("ICLMEM_BUNDLE", "off")  # a session fixture runs before the autouse one below: no bundle checked
        assert main(args) == 0, "the book did not build"
    return build


@pytest.fixture(autouse=True)
def no_shipped_bundle(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests compute what they read: the repository's results bundles (bundle/) are served only where a test says
    so (tests/bundle/ sets ICLMEM_BUNDLE to a bundle of its own)."""
    monkeypatch.setenv("ICLMEM_BUNDLE", "off")
