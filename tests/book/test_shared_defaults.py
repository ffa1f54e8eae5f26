"""The tabular chapters' shared parameters live in one file, book/parameters.yaml (Sec. 4.1-4.2): their meaning,
type, range, paper value and, for a group of notebooks, their shared default.

Notebooks 03 and 04 probe the runs notebook 02 fine-tuned, and find them in the results store only
while their parameters agree; a notebook whose parameters cell drifts from the shared file would
silently recompute everything when run on its own. These tests fail on any such drift, and check
that ``iclmem book`` / ``iclmem run`` pass the shared values under the user's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from iclmem.book.execute import (
    SHARED_DEFAULTS,
    SharedGroup,
    UsageError,
    notebook_parameters,
    read_notebook,
    read_shared_defaults,
    shared_default_conflicts,
    shared_defaults_of,
    with_shared_defaults,
)

REPO = Path(__file__).resolve().parents[2]


def test_every_notebook_agrees_with_the_shared_defaults():
    assert shared_default_conflicts(REPO) == []


def test_notebooks_that_share_results_declare_the_same_values():
    """Pairwise, from the cells alone: every name two notebooks of a group share has one default."""
    groups = read_shared_defaults(REPO / SHARED_DEFAULTS)
    assert {"controlled_runs", "controlled_probes"} <= {g.name for g in groups}
    for group in groups:
        cells = {s: notebook_parameters(read_notebook(REPO / "notebooks" / f"{s}.py")) for s in group.notebooks}
        for name in group.values:
            defaults = {s: cells[s][name].default for s in group.notebooks}
            assert len({repr(v) for v in defaults.values()}) == 1, f"{group.name}: {name} differs: {defaults}"


def test_the_first_chapter_uses_the_names_of_the_others():
    declared = notebook_parameters(read_notebook(REPO / "notebooks" / "01_split_validation.py"))
    assert {"datasets", "query_sizes", "label_conditions"} <= set(declared)
    assert not {"dataset", "query_size", "label_condition"} & set(declared)


def _project(tmp_path: Path, cell_03: str) -> Path:
    (tmp_path / "notebooks").mkdir(parents=True)
    (tmp_path / "book").mkdir()
    cells = {
        "02_controlled_finetuning": "learning_rates: list = [0.1, 0.01]\nepochs: int = 100\n",
        "03_multiple_choice_probing": cell_03,
    }
    for stem, cell in cells.items():
        (tmp_path / "notebooks" / f"{stem}.py").write_text(f'# %% tags=["parameters"]\n{cell}\n# %%\nprint(epochs)\n')
    (tmp_path / SHARED_DEFAULTS).write_text(
        "groups:\n  runs: {notebooks: [02_controlled_finetuning, 03_multiple_choice_probing]}\n"
        "parameters:\n  learning_rates: {type: list, group: runs, default: [0.1, 0.01]}\n"
        "  epochs: {type: int, range: {low: 1}, group: runs, default: 100}\n  seed: {type: int}\n"
    )
    return tmp_path


def test_a_drifted_or_missing_shared_name_is_reported(tmp_path):
    assert (
        shared_default_conflicts(_project(tmp_path / "a", "learning_rates: list = [0.1, 0.01]\nepochs: int = 100\n"))
        == []
    )
    drifted = shared_default_conflicts(_project(tmp_path / "b", "learning_rates: list = [0.1]\nepochs: int = 100\n"))
    assert drifted == ["03_multiple_choice_probing: learning_rates = [0.1], the shared default is [0.1, 0.01]"]
    missing = shared_default_conflicts(_project(tmp_path / "c", "learning_rates: list = [0.1, 0.01]\n"))
    assert missing == ["03_multiple_choice_probing: declares no 'epochs' (shared default 100)"]


def test_a_name_set_by_two_groups_of_one_notebook_is_an_error(tmp_path):
    groups = [SharedGroup("a", ("n",), {"seed": 0}), SharedGroup("b", ("n", "m"), {"seed": 1})]
    assert shared_defaults_of(groups, "m") == {"seed": 1}
    with pytest.raises(UsageError, match="'seed' of n is set by both 'a' and 'b'"):
        shared_defaults_of(groups, "n")
    path = tmp_path / "parameters.yaml"  # in the file, a parameter names one group, which must exist
    path.write_text("groups:\n  a: {notebooks: [n]}\nparameters:\n  seed: {group: b, default: 0}\n")
    with pytest.raises(UsageError, match="parameter 'seed' names group 'b'; a shared parameter needs a group"):
        read_shared_defaults(path)


def test_the_parameters_file_is_the_one_source_of_types_ranges_and_meanings():
    """Every name it declares is some notebook's parameter, with the type it states in every cell; its ranges are the
    checks' and its meanings the pages'."""
    import yaml

    from iclmem.book.page_view import load_glossary
    from iclmem.book.parameter_rules import RULES, read_rules

    declared = yaml.safe_load((REPO / SHARED_DEFAULTS).read_text())["parameters"]
    cells = [notebook_parameters(read_notebook(p)) for p in sorted((REPO / "notebooks").glob("*.py"))]
    for name, spec in declared.items():
        types = {cell[name].type_name for cell in cells if name in cell}
        assert types, f"{name}: declared in {SHARED_DEFAULTS}, but no notebook has it"
        assert types == set(spec["type"].split(" | ")), f"{name}: the cells' types {types}, the file's {spec['type']}"
    assert set(RULES) == {n for n, spec in declared.items() if "range" in spec} and RULES == read_rules()
    assert RULES["label_conditions"].problem("label_conditions", ["nobody"])  # a range the file states, enforced
    assert load_glossary(REPO / SHARED_DEFAULTS)["epochs"] == {"meaning": declared["epochs"]["meaning"], "paper": "500"}
    every = set().union(*cells)
    assert every <= set(declared), f"parameters no file declares: {sorted(every - set(declared))}"


def test_shared_values_pass_only_where_a_cell_differs_and_the_user_wins(tmp_path):
    project = _project(tmp_path, "learning_rates: list = [0.1]\nepochs: int = 100\n")
    declared = notebook_parameters(read_notebook(project / "notebooks" / "03_multiple_choice_probing.py"))
    shared = shared_defaults_of(read_shared_defaults(project / SHARED_DEFAULTS), "03_multiple_choice_probing")
    assert with_shared_defaults(declared, shared, {}) == {"learning_rates": [0.1, 0.01]}  # epochs agrees: not passed
    assert with_shared_defaults(declared, shared, {"learning_rates": [0.5], "epochs": 2}) == {
        "learning_rates": [0.5],
        "epochs": 2,
    }
    assert (
        with_shared_defaults(declared, {"unknown": 1}, {}) == {}
    )  # a name the notebook does not declare is not passed
