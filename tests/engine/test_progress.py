"""One live progress line per process, on the terminal, never in the notebook (iclmem.runtime.progress)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from iclmem.runtime import progress
from iclmem.runtime.progress import LABEL_ENV, LOG_INTERVAL_S, PROGRESS_ENV, Bar, Line, duration


class Terminal(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(autouse=True)
def _no_label(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LABEL_ENV, raising=False)
    monkeypatch.delenv(PROGRESS_ENV, raising=False)


def test_nested_bars_share_one_line_on_a_terminal(clock: Clock) -> None:
    term = Terminal(tty=True)
    line = Line(term, clock)
    runs = Bar(total=3, desc="fine-tuning runs", line=line)
    for _ in range(2):
        steps = Bar(total=4, desc="wine_pl lr=0.1", leave=False, line=line)
        for _ in range(4):
            clock.now += 1.0
            steps.update()
        steps.close()
        runs.update()
    clock.now += 1.0
    runs.update()
    assert "\n" not in term.getvalue(), "a live line never starts a new line before the outer loop ends"
    drawn = term.getvalue().split("\r")
    assert any("fine-tuning runs 0/3 > wine_pl lr=0.1 3/4" in d for d in drawn), drawn
    runs.close()
    assert term.getvalue().endswith("fine-tuning runs 3/3 · 0:09\n"), "leave=True keeps the last state as one line"
    assert term.getvalue().count("\n") == 1


def test_an_inner_bar_that_closes_leaves_no_line_behind(clock: Clock) -> None:
    term = Terminal(tty=True)
    line = Line(term, clock)
    with Bar(total=1, desc="outer", leave=False, line=line):
        with Bar(total=1, desc="inner", leave=False, line=line) as inner:
            inner.update()
    assert "\n" not in term.getvalue()
    assert term.getvalue().endswith("\r"), "closing the last bar clears the line"


def test_a_log_file_gets_a_plain_line_every_interval(clock: Clock) -> None:
    log = Terminal(tty=False)
    line = Line(log, clock)
    bar = Bar(total=100, desc="probing", line=line)
    for _ in range(100):
        clock.now += LOG_INTERVAL_S / 10
        bar.update()
    bar.close()
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    assert 10 <= len(lines) <= 12, lines  # the first, one per interval (300 s / 30 s), the last
    assert lines[-1] == "probing 100/100 · 5:00" and lines[-2] != lines[-1], "the last line is not written twice"


def test_eta_comes_from_the_outermost_bar(clock: Clock) -> None:
    line = Line(Terminal(tty=True), clock)
    bar = Bar(total=4, desc="runs", line=line)
    clock.now = 10.0
    bar.update(2)
    assert line.text() == "runs 2/4 · 0:10, about 0:10 left"
    bar.close()


def test_eta_counts_the_inner_loops_share_of_the_current_item(clock: Clock) -> None:
    line = Line(Terminal(tty=True), clock)
    runs = Bar(total=2, desc="runs", line=line)
    steps = Bar(total=4, desc="steps", leave=False, line=line)
    clock.now = 10.0
    steps.update(2)
    assert line.text() == "runs 0/2 > steps 2/4 · 0:10, about 0:30 left"
    steps.close()
    runs.close()


def test_label_names_the_notebook(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LABEL_ENV, "02_controlled_finetuning")
    line = Line(Terminal(tty=True), clock)
    bar = Bar(total=2, desc="runs", line=line)
    assert line.text().startswith("[02_controlled_finetuning] runs 0/2")
    bar.close()


@pytest.mark.parametrize("value", ["0", "false", "off"])
def test_progress_env_silences_every_bar(clock: Clock, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(PROGRESS_ENV, value)
    term = Terminal(tty=True)
    assert list(Bar(range(5), desc="x", line=Line(term, clock))) == [0, 1, 2, 3, 4]
    assert term.getvalue() == ""


def test_disable_none_shows_only_on_a_terminal(clock: Clock) -> None:
    log, term = Terminal(tty=False), Terminal(tty=True)
    list(Bar(range(2), desc="splits", disable=None, line=Line(log, clock)))
    list(Bar(range(2), desc="splits", disable=None, line=Line(term, clock)))
    assert log.getvalue() == "" and "splits 2/2" in term.getvalue()


def test_iterating_counts_and_a_bar_without_iterable_refuses_to_iterate(clock: Clock) -> None:
    line = Line(Terminal(tty=True), clock)
    bar = Bar(iter("abc"), desc="letters", line=line)
    assert list(bar) == ["a", "b", "c"] and bar.n == 3 and bar.closed
    assert "letters 3 it" in line.stream.getvalue()
    with pytest.raises(TypeError, match="update"):
        list(Bar(total=2, line=line))


def test_a_closed_terminal_does_not_stop_the_loop(clock: Clock) -> None:
    term = Terminal(tty=True)
    term.close()
    assert list(Bar(range(3), desc="x", line=Line(term, clock))) == [0, 1, 2]


def test_duration() -> None:
    assert (duration(0), duration(75), duration(3725)) == ("0:00", "1:15", "1:02:05")


LOOPING_NOTEBOOK = """\
# %% tags=["parameters"]
n = 3

# %%
from iclmem.runtime.progress import Bar

total = 0
for i in Bar(range(n), desc="tiny loop"):
    total += i
print("total", total)
"""


def test_iclmem_run_draws_the_kernel_loop_on_the_terminal_not_in_the_notebook(
    tmp_path: Path, make_notebook, capfd: pytest.CaptureFixture[str]
) -> None:  # noqa: ANN001
    """The kernel inherits this process's stderr (capfd stands in for the terminal)."""
    from iclmem.cli import main

    nb = make_notebook(tmp_path / "looping.py", LOOPING_NOTEBOOK)
    out = tmp_path / "looping.ipynb"
    assert main(["run", str(nb), "-o", str(out)]) == 0
    err = capfd.readouterr().err
    assert "[looping] tiny loop 3/3" in err, err
    stored = json.dumps([c.get("outputs", []) for c in json.loads(out.read_text())["cells"]])
    assert "total 3" in stored and "tiny loop" not in stored
    assert main(["run", str(nb), "-o", str(out), "--no-progress"]) == 0
    assert "tiny loop" not in capfd.readouterr().err


def test_the_process_line_is_shared() -> None:
    assert Bar(total=1, disable=True).line is progress.LINE
