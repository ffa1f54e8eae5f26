"""Progress on the terminal, never in a notebook: every loop of a process shares one live line.

Every long loop of the package (fine-tuning runs and steps, probing, sweeps, LLM batches,
pretraining) reports through :class:`Bar`. The open bars of a process form a stack and are
drawn together as **one line**, outermost first::

    [02_controlled_finetuning] fine-tuning runs 5/32 > wine_pl lr=0.1 Q=512 37/100 · 12:03, about 40:10 left

The line goes to the process's real standard error (``sys.__stderr__``). In a notebook kernel
started by ``iclmem run`` / ``iclmem book`` (:func:`iclmem.book.execute.execute` turns the kernel's
capture of file-descriptor output off) that is the terminal the command runs in, so the line is
seen while the notebook runs and never stored in the executed notebook; the command names the
notebook in ``$ICLMEM_PROGRESS_LABEL`` (the ``[...]`` prefix).

On a terminal the line is redrawn in place (at most every :data:`TTY_INTERVAL_S`). Written to a
file or pipe (``nohup make book > log``) it becomes a plain line every :data:`LOG_INTERVAL_S`, so
a log shows progress without thousands of carriage returns. ``ICLMEM_PROGRESS=0`` silences every
bar (``--no-progress``); ``ICLMEM_PROGRESS_LINES=1`` writes plain lines on a terminal too (set by
``iclmem book --jobs`` while lanes share the terminal, :mod:`iclmem.book.lanes`).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any, TypeVar

T = TypeVar("T")

PROGRESS_ENV = "ICLMEM_PROGRESS"
LABEL_ENV = "ICLMEM_PROGRESS_LABEL"
LINES_ENV = "ICLMEM_PROGRESS_LINES"
TTY_INTERVAL_S = 0.25
LOG_INTERVAL_S = 30.0


def progress_enabled() -> bool:
    """False when ``$ICLMEM_PROGRESS`` is ``0`` / ``false`` / ``no`` / ``off`` (the command's ``--no-progress``)."""
    return os.environ.get(PROGRESS_ENV, "1").strip().lower() not in {"0", "false", "no", "off"}


def duration(seconds: float) -> str:
    """``75`` -> ``1:15``, ``3725`` -> ``1:02:05``."""
    s = int(round(max(seconds, 0.0)))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Line:
    """The one progress line of a process: draws the stack of open bars to ``stream``."""

    def __init__(self, stream: IO[str] | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self._stream = stream
        self.clock = clock
        self.bars: list[Bar] = []
        self._drawn_at = -float("inf")
        self._width = 0  # characters of the live line now on a terminal (0: none)
        self._logged = ""  # the last line written to a log (not repeated when a loop ends on it)

    @property
    def stream(self) -> IO[str] | None:
        return self._stream if self._stream is not None else sys.__stderr__

    def _tty(self) -> bool:
        if os.environ.get(LINES_ENV, "").strip() == "1":  # processes that share a terminal: no redrawn line
            return False
        stream = self.stream
        return bool(stream is not None and getattr(stream, "isatty", lambda: False)())

    def text(self) -> str:
        """The line for the open bars: ``[label] outer n/N > inner n/N · elapsed, about ETA left``."""
        label = os.environ.get(LABEL_ENV, "").strip()
        parts = [bar.text() for bar in self.bars]
        line = (f"[{label}] " if label else "") + " > ".join(parts)
        outer = self.bars[0] if self.bars else None
        if outer is not None:
            elapsed = self.clock() - outer.started
            line += f" · {duration(elapsed)}"
            fraction = self._inner_fraction()
            done = outer.n - outer.initial + fraction
            if outer.total and done > 0 and outer.n < outer.total:
                line += f", about {duration(elapsed / done * (outer.total - outer.n - fraction))} left"
        return line

    def _inner_fraction(self) -> float:
        """How far the outermost bar's current item is, from the counts of the bars inside it."""
        fraction = 0.0
        for bar in reversed(self.bars[1:]):
            fraction = min((bar.n + fraction) / bar.total, 1.0) if bar.total else 0.0
        return fraction

    def open(self, bar: Bar) -> None:
        self.bars.append(bar)
        self.draw(force=len(self.bars) == 1)

    def close(self, bar: Bar) -> None:
        final = self.text() if self.bars and self.bars[0] is bar else None
        if bar in self.bars:
            self.bars.remove(bar)
        if not self.bars:
            self._write_final(final if bar.leave else None)
        else:
            self.draw()

    def draw(self, force: bool = False) -> None:
        stream = self.stream
        if stream is None or not self.bars:
            return
        now, tty = self.clock(), self._tty()
        if not force and now - self._drawn_at < (TTY_INTERVAL_S if tty else LOG_INTERVAL_S):
            return
        self._drawn_at = now
        text = self.text()
        try:
            if tty:
                width = max(shutil.get_terminal_size((120, 24)).columns - 1, 20)
                text = text[:width]
                stream.write("\r" + text + " " * max(self._width - len(text), 0))
                self._width = len(text)
            else:
                stream.write(text + "\n")
                self._logged = text
            stream.flush()
        except (OSError, ValueError):  # a closed terminal must not stop the computation
            pass

    def _write_final(self, text: str | None) -> None:
        stream = self.stream
        if stream is None:
            return
        try:
            if self._tty():
                stream.write("\r" + " " * self._width + "\r" + (text + "\n" if text else ""))
            elif text and text != self._logged:
                stream.write(text + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass
        self._width, self._logged = 0, ""
        self._drawn_at = -float("inf")


#: The process's line (tests may swap it for one on their own stream and clock).
LINE = Line()


class Bar:
    """One loop's share of the progress line (the arguments of ``tqdm`` the package uses).

    ``Bar(iterable, desc=...)`` iterates and counts; ``Bar(total=..., desc=...)`` counts through
    :meth:`update`. Nested bars (runs > steps) show side by side on one line. ``disable=True``
    (or ``ICLMEM_PROGRESS=0``) makes a bar that shows nothing; ``disable=None`` shows it only on a
    terminal. ``leave=True`` keeps the outermost bar's last state as a line when it closes.
    """

    def __init__(
        self,
        iterable: Iterable[T] | None = None,
        *,
        total: int | None = None,
        initial: int = 0,
        desc: str = "",
        disable: bool | None = False,
        leave: bool = True,
        unit: str = "it",
        line: Line | None = None,
    ) -> None:
        self.iterable = iterable
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)  # type: ignore[arg-type]
        self.total, self.initial, self.n = total, initial, initial
        self.desc, self.unit, self.leave = desc, unit, leave
        self.postfix = ""
        self.line = line or LINE
        self.started = self.line.clock()
        if disable is None:
            disable = not self.line._tty()
        self.disabled = bool(disable) or not progress_enabled()
        self.closed = False
        if not self.disabled:
            self.line.open(self)

    def text(self) -> str:
        count = f"{self.n}/{self.total}" if self.total is not None else f"{self.n} {self.unit}"
        return " ".join(p for p in (self.desc, count, self.postfix) if p)

    def update(self, n: int = 1) -> None:
        self.n += n
        if not self.disabled and not self.closed:
            self.line.draw()

    def set_postfix(self, **values: Any) -> None:
        self.postfix = " ".join(f"{k}={v}" for k, v in values.items())

    def close(self) -> None:
        if not self.closed and not self.disabled:
            self.line.close(self)
        self.closed = True

    def __iter__(self) -> Iterator[T]:
        if self.iterable is None:
            raise TypeError("Bar(total=...) counts with update(); pass an iterable to iterate")
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["LABEL_ENV", "LINE", "LINES_ENV", "PROGRESS_ENV", "Bar", "Line", "duration", "progress_enabled"]
