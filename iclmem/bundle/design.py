"""A design's results as the book reads them from its bundle: summaries, membership nulls, manipulation effects and
fine-tuning metrics of every task, without a probe score (issue 57, item 4).

A design bundle (``iclmem bundle make --scores witness --null-permutations N``) keeps, per probed run, what the
tabular claims' rules read: its per-epoch summary rows (Sec. 4.2, Tab. 3), its membership null
(:func:`iclmem.probe.null.run_null`'s rows), its group rank sums and per-manipulation AUCs
(:mod:`iclmem.probe.effects`, C12 and Fig. 4), and its fine-tuning metrics and curve (Sec. 4.1). :class:`Design`
reads them under the bundle's run keys (its input keys: a joint run's view is ``content_key(joint key, dataset)``),
and gives the same frames the notebooks compute from scores: :meth:`Design.null` is
:func:`iclmem.probe.null.null_summaries`' frame (:func:`iclmem.probe.null.assemble_null` on the kept rows).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from ..data.cards import cards_frame, dataset_card
from ..probe.effects import GroupRanks
from ..probe.null import assemble_null
from ..store.keys import content_key
from ..sweep.gridfile import DatasetSource
from .effect_codec import decode_aucs, decode_ranks
from .layout import Bundle, BundleError
from .null_codec import decode as decode_null
from .serve import item_problem


def _item_key(entry_key: str) -> str:
    return entry_key.split("/", 1)[1]


#: The spec columns :attr:`Design.metrics` carries, as the grid's metrics do (Sec. 4.1, Tab. 2's axes).
SPEC_COLUMNS: tuple[str, ...] = ("learning_rate", "query_size", "label_condition", "seed", "regime")


@dataclass
class Design:
    """The results of the design held by ``bundle`` (read lazily, once)."""

    bundle: Bundle
    _by_run: dict[str, dict[str, str]] = field(default_factory=dict, init=False, repr=False)
    _intact: set[str] = field(default_factory=set, init=False, repr=False)

    def __post_init__(self) -> None:
        for key, entry in self.bundle.items.items():
            if entry["kind"] in ("null", "effects"):
                self._by_run.setdefault(entry["run"], {})[entry["kind"]] = _item_key(key)

    def _dir(self, kind: str, key: str) -> Path:
        """The folder of item ``kind/key``, checked against its completion record once (a design's results are not
        recomputed in a build: a damaged item stops the reading, in one line naming it and the fix)."""
        name = f"{kind}/{key}"
        if name not in self._intact:
            problem = item_problem(self.bundle, kind, key)
            if problem:
                raise BundleError(
                    f"bundle {self.bundle.name}: item {name} is damaged ({problem}); restore it with "
                    "`git checkout -- bundle/`"
                )
            self._intact.add(name)
        return self.bundle.item_dir(kind, key)

    @cached_property
    def null_draws(self) -> tuple[int, int]:
        """(permutations, seed) of the kept membership nulls, one pair for the whole bundle: a rule replayed on them
        (C12's selection, :func:`iclmem.chapters.ch03_probing.claims.replayed_selection`) draws the same."""
        pairs = {(int(e["n_perm"]), int(e["seed"])) for e in self.bundle.items.values() if e["kind"] == "null"}
        if len(pairs) != 1:
            raise BundleError(
                f"the bundle {self.bundle.name} keeps nulls of {len(pairs)} (permutations, seed) pairs, not 1"
            )
        return pairs.pop()

    @cached_property
    def cards(self) -> pd.DataFrame:
        """The dataset card of every table of the design (:func:`iclmem.data.cards.dataset_card` of the deduplicated
        table its runs split, loaded offline from the bundle's sources), indexed by name."""
        sources = self.bundle.manifest.get("sources") or {}
        if not sources:
            raise BundleError(f"the bundle {self.bundle.name} names no table source: make it again with this version")
        return cards_frame([dataset_card(DatasetSource(**source).load()) for source in sources.values()])

    @cached_property
    def summary(self) -> pd.DataFrame:
        """Every task's summary rows, one per (probed run, epoch), as :func:`iclmem.training.grid.probe_grid` gives
        them (its card columns ``k``, ``alpha`` and ``task`` included): ``run_key`` is the bundle's run key,
        ``bundle_task``
        the bundle's task, ``store_run_key`` the key of the store that computed it."""
        frames = []
        for key, entry in sorted(self.bundle.items.items()):
            if entry["kind"] != "sweep":
                continue
            summary = json.loads((self._dir("sweep", _item_key(key)) / "summary.json").read_text())
            rows = pd.DataFrame(summary["rows"]).rename(columns={"run_key": "store_run_key"})
            joint = entry["spec"]["regime"] != "single_task_fixed"
            run = rows.dataset.map(lambda d, r=entry["run"]: content_key(r, d)) if joint else entry["run"]
            frames.append(rows.assign(run_key=run, bundle_task=_item_key(key)))
        if not frames:
            raise BundleError(f"the bundle {self.bundle.name} holds no finished task")
        cards = self.cards[["k", "alpha", "task"]]
        return pd.concat(frames, ignore_index=True).join(cards, on="dataset")

    @cached_property
    def metrics(self) -> pd.DataFrame:
        """Every run's per-epoch fine-tuning metrics (Sec. 4.1: losses, accuracy, the loss ratio and collapse), one
        row per (run, epoch) under the same ``run_key`` and ``bundle_task`` as :attr:`summary` (a joint run: one per
        view), with the run's :data:`SPEC_COLUMNS`."""
        frames = []
        for key, entry in sorted(self.bundle.items.items()):
            if entry["kind"] != "sweep":
                continue
            joint = entry["spec"]["regime"] != "single_task_fixed"
            folder = self._dir("multitask" if joint else "finetune", entry["run"])
            metrics = pd.read_csv(folder / "metrics.csv")
            if joint:
                run = metrics.dataset.map(lambda d, r=entry["run"]: content_key(r, d))
            else:
                metrics, run = metrics.assign(dataset=entry["spec"]["dataset"]), entry["run"]
            spec = {c: entry["spec"][c] for c in SPEC_COLUMNS}
            frames.append(metrics.assign(run_key=run, bundle_task=_item_key(key), **spec))
        if not frames:
            raise BundleError(f"the bundle {self.bundle.name} holds no finished task")
        return pd.concat(frames, ignore_index=True)

    def _item(self, run: str, kind: str) -> str:
        try:
            return self._by_run[run][kind]
        except KeyError:
            raise BundleError(
                f"the bundle {self.bundle.name} keeps no {kind} for run {run}: make it with --scores witness "
                "--null-permutations N (a design bundle)"
            ) from None

    def null(
        self, reading: str | None = None, rows: pd.DataFrame | None = None, columns: Sequence[str] | None = None
    ) -> pd.DataFrame:
        """:func:`iclmem.probe.null.null_summaries`' frame of the fine-tuned ``rows`` of :attr:`summary` (default:
        all), from the kept nulls; with ``reading``, each permuted outcome under that reading of Tab. 3. ``columns``:
        the rows' columns to keep (:func:`iclmem.probe.null.assemble_null`; default: all)."""
        rows = self.summary if rows is None else rows
        runs = rows[rows.epoch > 0].run_key.unique()
        per_run = {r: decode_null(self._dir("null", self._item(r, "null")) / "null.parquet") for r in runs}
        return assemble_null(rows, per_run, reading, columns)

    def group_ranks(self, run: str, epoch: int) -> GroupRanks:
        """The :class:`~iclmem.probe.effects.GroupRanks` of ``run`` at fine-tuned ``epoch`` (C12)."""
        ranks = decode_ranks(self._dir("effects", self._item(run, "effects")) / "ranks.parquet")
        if epoch not in ranks:
            raise BundleError(f"the bundle keeps run {run}'s effects at epochs {sorted(ranks)}, not {epoch}")
        return ranks[epoch]

    def manipulation_aucs(self, run: str, epochs: list[int] | None = None) -> pd.DataFrame:
        """:func:`iclmem.probe.effects.manipulation_aucs`' rows of ``run`` (at ``epochs``, default all kept)."""
        aucs = decode_aucs(self._dir("effects", self._item(run, "effects")) / "aucs.parquet")
        return aucs if epochs is None else aucs[aucs.epoch.isin(epochs)].reset_index(drop=True)


__all__ = ["SPEC_COLUMNS", "Design"]
