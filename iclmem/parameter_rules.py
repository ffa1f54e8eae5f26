"""The ranges of the notebooks' shared parameter vocabulary: what a value may be beyond its type.

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
from typing import Any


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


_COUNT = Rule(low=1)
_COUNTS = Rule(low=1, non_empty=True)
_RATES = Rule(low=0, open_low=True, non_empty=True)
_SHARE = Rule(low=0, high=1)
#: The label conditions of Tab. 2 / 10 and chapter 4's flip, with the spellings iclmem.data.randomize also reads.
_LABELS = Rule(
    choices=("none", "members", "non-members", "all", "flip"),
    aliases=("non_members", "nonmembers", "both", "", "false"),
    fold_case=True,
    non_empty=True,
)

#: The ranges of the shared vocabulary (book/parameters.yaml says what each name means).
RULES: dict[str, Rule] = {
    "seed": Rule(low=0),
    "epochs": _COUNT,
    "query_sizes": _COUNTS,
    "query_size": _COUNT,
    "control_query_size": _COUNT,
    "learning_rates": _RATES,
    "control_learning_rates": _RATES,
    "single_task_learning_rates": _RATES,
    "learning_rate": Rule(low=0, open_low=True),
    "finetune_lr": Rule(low=0, open_low=True),
    "finetune_epochs": Rule(low=0),
    "probe_epochs": Rule(low=0, non_empty=True),
    "control_epochs": Rule(low=0, non_empty=True),
    "curve_learning_rates": _RATES,
    "curve_epochs": Rule(low=1, non_empty=True),
    "curve_conditions": _LABELS,
    "p1_vanilla_bound": _SHARE,
    "strong_seeds": Rule(low=0),
    "context_size": _COUNT,
    "control_context_size": _COUNT,
    "n_candidates": Rule(low=2),
    "max_queries": _COUNT,
    "n_boot": _COUNT,
    "n_permutations": _COUNT,
    "max_redraws": Rule(low=0),
    "n_instances": _COUNT,
    "n_demonstrations": Rule(low=0),
    "repeats": _COUNT,
    "batch_size": _COUNT,
    "num_threads": Rule(low=0),
    "completion_length": _COUNT,
    "performance_completion_length": _COUNT,
    "judge_folds": Rule(low=2),
    "llm_judge_pairs": Rule(low=0),
    "ks": Rule(low=0, non_empty=True),
    "segment_min": _SHARE,
    "segment_max": _SHARE,
    "member_fraction": Rule(low=0, high=1, open_low=True),
    "delta": Rule(low=0, high=1, open_low=True),
    "epsilons": Rule(low=0, open_low=True, non_empty=True),
    "task": Rule(choices=("", "classification", "regression")),
    "missing_target": Rule(choices=("error", "drop")),
    "label_conditions": _LABELS,
    "label_condition": _LABELS,
    "utility_condition": _LABELS,
    "control_label_condition": Rule(choices=("all", "flip"), fold_case=True),
}


def range_problems(values: dict[str, Any], rules: dict[str, Rule] | None = None) -> list[str]:
    """One line per value out of its range (names without a rule are skipped)."""
    rules = RULES if rules is None else rules
    found = (rules[name].problem(name, value) for name, value in values.items() if name in rules)
    return [p for p in found if p]


def rule_names() -> Sequence[str]:
    """The names that have a range rule."""
    return tuple(RULES)
