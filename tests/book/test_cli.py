"""The ``iclmem`` command line: exit codes, messages, and that values reach the notebook."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from iclmem.cli import SUBCOMMANDS, build_parser, main

REPO = Path(__file__).resolve().parents[2]


def _outputs(path: Path) -> str:
    nb = json.loads(path.read_text())
    return "".join("".join(o.get("text", "")) for c in nb["cells"] for o in c.get("outputs", []))


def test_subcommands_are_registered() -> None:
    names = set(build_parser()._subparsers._group_actions[0].choices)
    assert {"run", "params", "book", "pretrain"} <= names
    assert len(SUBCOMMANDS) == len(names)


def test_params_prints_a_table(tiny_notebook: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["params", str(tiny_notebook)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["name", "type", "default"]
    assert ["rate", "float", "0.5"] in [line.split() for line in out]
    assert ["data_path", "any", "None"] in [line.split() for line in out]


def test_params_gives_the_range_the_parameters_file_states(capsys: pytest.CaptureFixture[str]) -> None:
    notebook = Path(__file__).resolve().parents[2] / "notebooks" / "02_controlled_finetuning.py"
    assert main(["params", str(notebook)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["name", "type", "default", "range"]
    assert ["epochs", "int", "100", ">=", "1"] in [line.split() for line in out]  # book/parameters.yaml: low 1


def test_run_passes_typed_values(tiny_notebook: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run.ipynb"
    args = [
        "run",
        str(tiny_notebook),
        "-p",
        "n",
        "12",
        "-p",
        "rate",
        "1e-1",
        "-p",
        "sizes",
        "[4, 5]",
        "-p",
        "name",
        "2020",
        "-o",
        str(out),
        "--no-progress",
    ]
    assert main(args) == 0
    assert "RESULT n=12 rate=0.1 name=2020 sizes=[4, 5] flag=False" in _outputs(out)
    assert str(out) in capsys.readouterr().out


def test_run_with_parameters_file(tiny_notebook: Path, tmp_path: Path) -> None:
    params = tmp_path / "params.yaml"
    params.write_text("n: 2\nflag: true\nname: wine\n")
    out = tmp_path / "f.ipynb"
    assert main(["run", str(tiny_notebook), "-f", str(params), "-p", "n", "6", "-o", str(out), "--no-progress"]) == 0
    assert "RESULT n=6 rate=0.5 name=wine sizes=[1, 2] flag=True" in _outputs(out)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-p", "querysize", "5"], "unknown parameter 'querysize'; valid names: n, rate, name, sizes, flag"),
        (["-p", "n", "many"], "parameter 'n' expects int like its default 3, got str 'many'"),
        (["-p", "api_key", "abc"], "environment variable"),
        (["-p", "flag", "1"], "parameter 'flag' expects bool"),
    ],
)
def test_user_errors_exit_2_without_traceback(
    tiny_notebook: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    out = tmp_path / "never.ipynb"
    assert main(["run", str(tiny_notebook), *args, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("iclmem run: error: ")
    assert message in err
    assert "Traceback" not in err
    assert not out.exists()


def test_missing_files_are_user_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["params", str(tmp_path / "nope.py")]) == 2
    assert main(["pretrain", "--config", str(tmp_path / "nope.yaml")]) == 2
    assert main(["run", str(tmp_path / "nope.py")]) == 2
    err = capsys.readouterr().err
    assert "no such notebook" in err and "no such config" in err


def test_failing_notebook_exits_1(make_notebook, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nb = make_notebook(tmp_path / "bad.py", "# %%\n1 / 0\n")
    assert main(["run", str(nb), "-o", str(tmp_path / "bad.ipynb"), "--no-progress"]) == 1
    err = capsys.readouterr().err
    assert "ZeroDivisionError" in err and "bad.failed.ipynb" in err


def test_console_script_in_a_real_process(tiny_notebook: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "iclmem.cli", "run", str(tiny_notebook), "-p", "sizez", "[1]"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "unknown parameter 'sizez' (did you mean 'sizes'?); valid names: n, rate" in proc.stderr
    assert "-p NAME VALUE" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_pretrain_calls_the_ltm_pretraining(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import iclmem.ltm.pretrain as pretrain_module

    seen = []
    monkeypatch.setattr(pretrain_module, "pretrain", lambda cfg: seen.append(cfg) or tmp_path / "ckpt.pt")
    config = REPO / "configs" / "pretrain_reference.yaml"
    assert main(["pretrain", "--config", str(config)]) == 0
    assert seen == [pretrain_module.PretrainConfig.from_yaml(config)]


def test_book_rejects_unknown_notebook(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\n")
    (tmp_path / "intro.md").write_text("# Intro\n")
    assert main(["book", "--root", str(tmp_path), "-p", "02_missing", "seed", "1"]) == 2
    assert "'02_missing' is not a notebook in _toc.yml" in capsys.readouterr().err


@pytest.mark.slow
def test_split_validation_notebook_runs_with_tiny_parameters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, book_overrides: dict
) -> None:
    monkeypatch.setenv("ICLMEM_RESULTS", str(tmp_path / "results"))
    out = tmp_path / "01.ipynb"
    args = ["run", str(REPO / "notebooks" / "01_split_validation.py"), "-o", str(out), "--no-progress"]
    for name, value in book_overrides["01_split_validation"].items():
        args += ["-p", name, str(value)]
    assert main(args) == 0
    nb = json.loads(out.read_text())
    html = "".join("".join(o.get("data", {}).get("text/html", "")) for c in nb["cells"] for o in c.get("outputs", []))
    assert re.search(r"<th[^>]*>TVD</th>", html) and re.search(r"<th[^>]*>KS stat</th>", html)
    assert any((tmp_path / "results").rglob("*.json")), "the split manifests go to the results store"


def test_book_takes_overrides_from_a_file_and_the_command_line(
    tmp_path: Path, make_notebook, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "proj"
    make_notebook(root / "notebooks" / "tiny.py")
    (root / "_config.yml").write_text("title: t\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: notebooks/tiny\n")
    overrides = tmp_path / "book.yaml"
    overrides.write_text("tiny: {n: 8, name: from-file}\n")
    build = tmp_path / "b"
    args = ["book", "--root", str(root), "--build-dir", str(build), "--no-html", "-f", str(overrides)]
    assert main([*args, "-p", "notebooks/tiny", "rate", "3"]) == 0
    assert "executed: notebooks/tiny" in capsys.readouterr().out
    assert "RESULT n=8 rate=3.0 name=from-file" in _outputs(build / "executed" / "notebooks" / "tiny.ipynb")
    assert main([*args, "-p", "tiny", "rate", "3"]) == 0
    assert "executed: nothing; from cache: notebooks/tiny" in capsys.readouterr().out
    assert main([*args, "-p", "tiny", "rate", "fast"]) == 2
    assert "parameter 'rate' expects float" in capsys.readouterr().err


def test_malformed_yaml_is_a_user_error(
    tiny_notebook: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("n: [1, 2\n")
    assert main(["run", str(tiny_notebook), "-f", str(bad)]) == 2
    (tmp_path / "_toc.yml").write_text("root: [\n")
    assert main(["book", "--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("is not valid YAML") == 2 and "Traceback" not in err
