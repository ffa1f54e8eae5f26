"""The ranges of the notebooks' shared parameter vocabulary: what a value may be beyond its type (read from
``book/parameters.yaml``, the one file that declares each shared parameter).

A parameters cell gives each value's type (its default's, :mod:`iclmem.book.execute`); this module
gives the range of the names the chapters share (``epochs >= 1``, ``learning_rates`` a non-empty
list of positive numbers, ``task`` one of three words, ...). The same rules are read by ``iclmem
run`` before a notebook starts and by the check cell each notebook runs after its parameters
(:mod:`iclmem.book.parameter_check`), so papermill, Jupyter's "run all" and ``iclmem run`` answer a
value out of range with the same line. A name not listed here is checked for its type only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from iclmem.store.imports import PACKAGE_ROOT
from iclmem.user_errors import UserError


@dataclass(frozen=True)
class Rule:
    """The range of one parameter: bounds on a number, or on each element of a list, and the allowed words."""

    low: float | None = None  # smallest allowed number (inclusive unless ``open_low``)
    high: float | None = None  # largest allowed number (inclusive)
    open_low: bool = False  # ``low`` itself is not allowed (a learning rate > 0)
    choices: tuple[str, ...] = ()  # allowed strings (for a str, or each element of a list)
    non_empty: bool = False  # a list needs at least one element
    aliases: tuple[str, ...] = ()  # other spellings also accepted (not shown in messages)
    fold_case: bool = False  # compare strings lower-cased and stripped

    def describe(self) -> str:
        """The range in words (``>= 1``, ``> 0 and <= 1``, ``one of: a, b``)."""
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.open_low else '>='} {_number(self.low)}")
        if self.high is not None:
            parts.append(f"<= {_number(self.high)}")
        if self.choices:
            parts.append("one of: " + ", ".join(repr(c) for c in self.choices))
        return " and ".join(parts)

    def problem(self, name: str, value: Any) -> str | None:
        """One line naming what is wrong with ``value``, or None when it is in range."""
        if isinstance(value, list | tuple):
            if self.non_empty and not value:
                return f"parameter {name!r} needs at least one value, got an empty list"
            bad = [v for v in value if not self._ok(v)]
            if bad:
                return f"parameter {name!r}: every value must be {self.describe()}, got {bad[0]!r} in {list(value)!r}"
            return None
        if not self._ok(value):
            return f"parameter {name!r} must be {self.describe()}, got {value!r}"
        return None

    def _ok(self, value: Any) -> bool:
        if self.choices and isinstance(value, str):
            key = value.strip().lower() if self.fold_case else value
            return key in self.choices or key in self.aliases
        if isinstance(value, bool) or not isinstance(value, int | float):
            return True  # a type mismatch is the type check's to report
        if isinstance(value, float) and not math.isfinite(value) and (self.low is not None or self.high is not None):
            return False
        if self.low is not None and (value <= self.low if self.open_low else value < self.low):
            return False
        return self.high is None or value <= self.high


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(x)


#: The file that declares every shared parameter: its meaning, type, range, paper value and shared default.
PARAMETERS_FILE = PACKAGE_ROOT.parent / "book" / "parameters.yaml"


def read_rules(path: str | Path = PARAMETERS_FILE) -> dict[str, Rule]:
    """The range of every parameter ``path`` gives one (``parameters: {name: {range: {...}}}``), as :class:`Rule`."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path} is missing: the parameters' ranges live there; restore it (git checkout -- book/)")
    declared = (yaml.safe_load(path.read_text()) or {}).get("parameters") or {}
    rules = {}
    for name, spec in declared.items():
        given = (spec or {}).get("range")
        if given is None:
            continue
        try:
            rules[str(name)] = Rule(**{k: tuple(v) if isinstance(v, list) else v for k, v in given.items()})
        except TypeError as exc:
            raise UserError(f"{path}: the range of {name!r} is not a range ({exc}); see the file's header") from exc
    return rules


#: The ranges of the shared vocabulary, read from :data:`PARAMETERS_FILE` (which also says what each name means).
RULES: dict[str, Rule] = read_rules()


def range_problems(values: dict[str, Any], rules: dict[str, Rule] | None = None) -> list[str]:
    """One line per value out of its range (names without a rule are skipped)."""
    rules = RULES if rules is None else rules
    found = (rules[name].problem(name, value) for name, value in values.items() if name in rules)
    return [p for p in found if p]


def rule_names() -> Sequence[str]:
    """The names that have a range rule."""
    return tuple(RULES)
