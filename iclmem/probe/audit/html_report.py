"""The report of ``iclmem audit``: one self-contained HTML file and one JSON file with every number (Sec. 4.2, App.
A.4).

The HTML holds its CSS inline and its figures as base64 PNG, and loads nothing: it can be mailed, archived or opened
offline. The JSON (:func:`plain`) is the audit's result as computed, NaN written as ``null``; the HTML is rendered
from it and from two figures: the attack's ROC curve on log axes (as LiRA-style evaluations plot it) and the
distribution of ``Delta S`` for members and non-members with the non-members' 99th percentile.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...stats.metrics import roc_points
from ...store.atomic import atomic_write_text

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:960px;margin:2em auto;
padding:0 1em;color:#1b1b1b;line-height:1.45}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;border-bottom:1px solid #ddd;padding-bottom:.2em;
margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}th,td{border:1px solid #ccc;padding:.25em .6em;
text-align:left;vertical-align:top}th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
.verdict{padding:.8em 1em;border-radius:6px;font-size:1.1em;margin:1em 0}
.v0{background:#e7f5ea;border:1px solid #6bb27a}.v1{background:#fbe9e7;border:1px solid #d9776b}
.v3{background:#fff6db;border:1px solid #d8b64c}.warn{background:#fff6db;border-left:4px solid #d8b64c;
padding:.4em .8em}.ok{border-left:4px solid #6bb27a;padding:.4em .8em}.muted{color:#666;font-size:.9em}
img{max-width:100%}code{background:#f5f5f5;padding:0 .2em}
"""


def plain(value: Any) -> Any:
    """``value`` with numpy scalars as Python numbers, tuples as lists and NaN / inf as None (strict JSON)."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [plain(v) for v in value.tolist()]
    if isinstance(value, np.bool_ | bool):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating | float):
        return float(value) if math.isfinite(float(value)) else None
    if isinstance(value, Path):
        return str(value)
    return value


def _png(fig: Any) -> str:
    """A matplotlib figure as a base64 PNG data URI."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def figures(delta: pd.DataFrame, p99: float) -> dict[str, str]:
    """The report's figures as data URIs: ``roc`` (log-log ROC of the attack) and ``delta`` (Delta S by membership)."""
    from matplotlib.figure import Figure  # no pyplot: the figures never touch a notebook's backend

    is_m = delta.is_member.astype(bool).to_numpy()
    m, n = delta.score.to_numpy()[is_m], delta.score.to_numpy()[~is_m]
    floor = min(1e-3, 1 / max(len(n), 1))
    pts = roc_points(m, n, floor=floor)
    fig = Figure(figsize=(4.2, 4))
    ax = fig.subplots()
    ax.plot(pts.fpr_plot, pts.tpr_plot, color="#b0413e", label="attack (Delta S)")
    ax.plot([floor, 1], [floor, 1], ls="--", color="#888", label="chance")
    ax.set(xscale="log", yscale="log", xlabel="false-positive rate", ylabel="true-positive rate", title="ROC, log axes")
    ax.legend(loc="lower right", fontsize=8)
    out = {"roc": _png(fig)}
    fig = Figure(figsize=(5.2, 3.4))
    ax = fig.subplots()
    bins = np.histogram_bin_edges(np.r_[m, n], bins=30)
    ax.hist(n, bins=bins, alpha=0.6, color="#4c72b0", label="non-members", density=True)
    ax.hist(m, bins=bins, alpha=0.6, color="#dd8452", label="members", density=True)
    ax.axvline(p99, color="#333", ls=":", label="non-members' 99th percentile")
    ax.set(xlabel="-Delta S (loss; higher = more member-like)", ylabel="density", title="Delta S by membership")
    ax.legend(fontsize=8)
    out["delta"] = _png(fig)
    return out


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "-" if not math.isfinite(value) else f"{value:.{digits}f}"
    return html.escape(str(value))


def _interval(d: dict[str, Any], key: str, digits: int = 3) -> str:
    if d.get(key) is None:
        return html.escape(str(d.get(key + "_note", "-")))
    return f"{_fmt(d[key], digits)} [{_fmt(d.get(key + '_lo'), digits)}, {_fmt(d.get(key + '_hi'), digits)}]"


def _table(rows: list[dict[str, Any]], columns: list[str] | None = None) -> str:
    if not rows:
        return "<p class='muted'>none</p>"
    columns = columns or list(rows[0])
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = []
    for row in rows:
        cells = []
        for c in columns:
            v = row.get(c)
            numeric = isinstance(v, int | float) and not isinstance(v, bool)
            cells.append(f"<td class='num'>{_fmt(v)}</td>" if numeric else f"<td>{_fmt(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _split_html(split: dict[str, Any]) -> str:
    d, both, base, det = split["dedup"], split["in_both"], split["baseline"], split["determining"]
    parts = [
        "<h2>1. The split, checked before probing</h2>",
        f"<p>{d['n_input']} rows read; {both['member_rows']} member and {both['non_member_rows']} non-member rows "
        f"share their features with a row of the other file ({both['same_target_rows']} with the same target, "
        f"{both['conflicting_rows']} conflicting) and were left out; deduplication as in chapter 01 dropped "
        f"{d['n_exact_duplicates_dropped']} exact duplicates and {d['n_conflicting_dropped']} conflicting rows; "
        f"{d['n_members']} members and {d['n_non_members']} non-members remain.</p>",
    ]
    t = split.get("table")
    if t:
        parts.append(
            f"<p>Both files were found in the table <code>{html.escape(t['path'])}</code> ({t['n_rows']} rows, "
            f"{t['n_rows_deduplicated']} after its deduplication; {t['n_file_rows_conflicting_in_table']} file rows "
            "whose features conflict there left out) and every row is probed as the row it is there.</p>"
        )
    cls = "warn" if base["separates"] else "ok"
    says = (
        "<b>separates the files</b>: the audit cannot tell memorization from distribution shift."
        if base["separates"]
        else "does not separate the files."
    )
    parts.append(
        f"<p class='{cls}'>Model-free baseline ({html.escape(base['classifier'])}, {base['folds']}-fold): AUC "
        f"{_interval(base, 'auc')}; it separates the files when the interval's lower end exceeds "
        f"{base['threshold']:.2f}. It {says}</p>"
    )
    if split.get("matched"):
        mt = split["matched"]
        parts.append(
            f"<p class='{'warn' if mt['baseline']['separates'] else 'ok'}'>Matched subsample (--match: one-to-one "
            f"nearest-neighbour matching on the logit of the baseline's propensity, caliper {mt['caliper_sd']} SD): "
            f"{mt['n_members']} members and {mt['n_non_members']} non-members; the baseline retrained on them: AUC "
            f"{_interval(mt['baseline'], 'auc')}.</p>"
        )
    elif base["separates"]:
        parts.append("<p>The fix: run again with <code>--match</code> to audit a matched subsample.</p>")
    det_text = (
        f"<p class='warn'>The target is determined by the feature <b>{html.escape(det['column'])}</b> alone "
        f"({det['measure']} {det['score']:.3f} in {det['folds']}-fold cross-validation, threshold {det['threshold']})"
        ": the probe needs a target the features cannot deduce (the paper's C16). Consider --drop "
        f"{html.escape(det['column'])}.</p>"
        if det["determines"]
        else f"<p class='ok'>No single feature determines the target (best: {html.escape(str(det['column']))}, "
        f"{det['measure']} {det['score']:.3f}, threshold {det['threshold']}).</p>"
    )
    parts.append(det_text)
    cols = ["column", "kind", "statistic", "value", "p", "over ch01 limit", "differs", "missing members"]
    parts.append(
        "<p>Per-column distance between the files (TVD for categories, KS for numbers, as chapter 01; "
        "'differs' at 5% over all columns, Bonferroni):</p>" + _table(split["columns"], cols + ["missing non-members"])
    )
    return "\n".join(parts)


def _encoding_html(encoding: dict[str, Any] | None) -> str:
    """How the probe read the rows: on the full table of ``--table``, or on the two files (the AUC a lower bound)."""
    if not encoding:
        return ""
    cls = "warn" if encoding["lower_bound"] else "ok"
    return f"<p class='{cls}'><b>Encoding:</b> {html.escape(encoding['note'])}.</p>"


def _attack_html(result: dict[str, Any], figs: dict[str, str]) -> str:
    a, null, power, eq = result["attack"], result["null"], result["power"], result["equivalence"]
    rows = [
        {"measure": "AUC", "value [95% interval]": _interval(a, "auc")},
        *(
            {"measure": f"TPR at {label} FPR", "value [95% interval]": _interval(a, key)}
            for label, key in (("0.1%", "tpr0.1"), ("1%", "tpr1"), ("10%", "tpr10"))
        ),
    ]
    return "\n".join(
        [
            "<h2>2. The attack and its error rates</h2>",
            f"<p>{a['n_members']} members and {a['n_non_members']} non-members probed under the model and the base "
            "with the 48 manipulations; the attack ranks them by Delta S of the probe loss.</p>",
            _table(rows),
            _encoding_html(result.get("encoding")),
            f"<p><b>Rule:</b> {html.escape(result['rule'])}. <b>Null rate</b> (the rule under "
            f"{null['n_permutations']} membership permutations): {null['rate']:.1%} "
            f"[{null['rate_lo']:.1%}, {null['rate_hi']:.1%}] (nominal {null['nominal']:.1%}).</p>",
            f"<p><b>Power:</b> the smallest AUC detectable at this size with {power['power']:.0%} power is "
            f"{power['smallest_detectable_auc']:.3f}.</p>",
            f"<p><b>Equivalence</b> (read when nothing is found): "
            f"{'not read, memorization is detected' if a['detected'] else html.escape(eq['reading'])}.</p>",
            f"<img alt='ROC' src='{figs['roc']}'> <img alt='Delta S' src='{figs['delta']}'>",
        ]
    )


def _rows_html(risk: dict[str, Any], show_rows: bool) -> str:
    share = risk["share"]
    top = [{k: v for k, v in r.items() if k != "row"} for r in risk["top"]]
    text = [
        "<h2>3. Rows at risk</h2>",
        f"<p>{share['share']:.1%} [{share['share_lo']:.1%}, {share['share_hi']:.1%}] of members lie above the "
        f"non-members' 99th percentile of -Delta S (about {share['expected_without_memorization']:.0%} without "
        "memorization).</p>",
        f"<p>The {len(top)} members with the largest -Delta S (file_row: the row's line under the header of the "
        "members file):</p>",
        _table(top),
    ]
    if show_rows and risk["top"] and "row" in risk["top"][0]:
        text.append("<p>Their contents (--show-rows):</p>" + _table([r["row"] for r in risk["top"]]))
    elif not show_rows:
        text.append("<p class='muted'>Row contents are left out; --show-rows adds them.</p>")
    return "\n".join(text)


def _control_html(control: dict[str, Any] | None) -> str:
    if control is None:
        return (
            "<h2>4. Positive control</h2><p class='muted'>Not run; --control fine-tunes a copy of the base on part of "
            "the non-members and probes it the same way, to show whether the probe sees memorization on this "
            "table.</p>"
        )
    a = control["attack"]
    says = "sees" if control["sees_memorization"] else "does <b>not</b> see"
    return (
        "<h2>4. Positive control</h2>"
        f"<p>Recipe: {html.escape(control['recipe_text'])}. Estimated {control['estimated_seconds']:.0f} s, took "
        f"{control['seconds']:.0f} s.</p><p class='{'ok' if control['sees_memorization'] else 'warn'}'>On "
        f"{control['n_members']} planted members and {control['n_non_members']} non-members the probe {says} "
        f"memorization: AUC {_interval(a, 'auc')}, TPR at 1% FPR {_interval(a, 'tpr1')}.</p>"
    )


def render_html(result: dict[str, Any], figs: dict[str, str]) -> str:
    """The report's HTML page from the result (:func:`plain`'s form) and the figures' data URIs."""
    v, inp = result["verdict"], result["inputs"]
    head = (
        f"<h1>Membership audit</h1><p class='muted'>iclmem audit, {html.escape(result['created'])}: model "
        f"<code>{html.escape(inp['model'])}</code>, base <code>{html.escape(inp['base'])}</code>, members "
        f"<code>{html.escape(inp['members'])}</code>, non-members <code>{html.escape(inp['non_members'])}</code>, "
        f"target <code>{html.escape(inp['target'])}</code> ({inp['task']}).</p>"
        f"<div class='verdict v{v['exit_status']}'><b>{html.escape(v['word'].upper())}</b>: "
        f"{html.escape(v['sentence'])}</div>"
    )
    body = [
        head,
        _split_html(result["split"]),
        _attack_html(result, figs),
        _rows_html(result["rows_at_risk"], result["config"]["show_rows"]),
        _control_html(result.get("control")),
        "<h2>Method</h2><p class='muted'>IclMem (Sec. 4.2, App. A.4): zero-information multiple-choice contexts, 48 "
        "manipulations, the probe loss averaged over them under the model and the base, Delta S = S_model - S_base. "
        "Intervals: stratified bootstrap. The split checks, the baseline, the rule, its null and power are stated in "
        "iclmem.probe.audit's modules; every number of this page is in the JSON beside it.</p>",
    ]
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>iclmem audit</title><style>{CSS}</style></head>"
        f"<body>{''.join(body)}</body></html>"
    )


def write_report(result: dict[str, Any], figs: dict[str, str], out: str | Path) -> tuple[Path, Path]:
    """Write ``audit.html`` and ``audit.json`` into ``out`` (created); return their paths."""
    folder = Path(out).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    data = plain(result)
    json_path, html_path = folder / "audit.json", folder / "audit.html"
    atomic_write_text(json_path, json.dumps(data, indent=1, allow_nan=False))
    atomic_write_text(html_path, render_html(data, figs))
    return html_path, json_path


__all__ = ["CSS", "figures", "plain", "render_html", "write_report"]
