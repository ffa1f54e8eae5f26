"""Paper 1, App. A.2 (Tab. 6): the member vs non-member target ECDFs of notebook 01."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from iclmem.data.dataset import Dataset
from iclmem.data.manifest import SplitManifest
from iclmem.data.stats import label_codes

POOL_NAMES = {"members": "members", "non_members": "non-members"}


def pool_targets(manifest: SplitManifest, table: Dataset) -> pd.DataFrame:
    """Long table (pool, target) of members and non-members; classification labels as sorted label codes."""
    frames = []
    for pool, label in POOL_NAMES.items():
        values = table.target.to_numpy()[manifest.ids(pool)]
        if table.task == "classification":
            values = label_codes(values, table.classes)
        frames.append(pd.DataFrame({"pool": label, "target": values}))
    return pd.concat(frames, ignore_index=True)


def plot_pool_ecdfs(manifests: Sequence[SplitManifest], tables: Sequence[Dataset]) -> plt.Figure:
    """ECDFs of member vs non-member targets: one column per dataset, one row per query size Q."""
    by_name = {t.name: t for t in tables}
    names = list(dict.fromkeys(m.dataset for m in manifests))
    sizes = sorted({m.query_size for m in manifests})
    fig, axes = plt.subplots(
        len(sizes), len(names), figsize=(max(3.2 * len(names), 5.0), 2.8 * len(sizes) + 0.4), squeeze=False
    )
    for m in manifests:
        ax = axes[sizes.index(m.query_size)][names.index(m.dataset)]
        table = by_name[m.dataset]
        data = pool_targets(m, table)
        for label, style in (("members", "-"), ("non-members", "--")):
            sns.ecdfplot(data[data["pool"] == label], x="target", ax=ax, linestyle=style, label=label)
        ax.set_title(f"{m.dataset}, Q={m.query_size}", fontsize=9)
        ax.set_xlabel("label code" if m.task == "classification" else f"target ({m.target})")
        ax.set_ylabel("ECDF")
    for ax in axes.flat:
        if not ax.has_data():
            ax.set_visible(False)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle("Member vs non-member target distributions (cf. App. A.2, Tab. 6)", fontsize=10)
    fig.tight_layout()
    return fig


__all__ = [
    "POOL_NAMES",
    "pool_targets",
    "plot_pool_ecdfs",
]
