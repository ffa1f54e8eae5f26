"""Appendix A4 of this book (IclMem Sec. 4.1, 4.2, App. A.4 applied to your own model): the commands that run the
audit chain on a TabPFN v2 or TabICL checkpoint (notebook A4).

The chain is the book's own (controlled fine-tuning with a logged ground truth, the zero-information
multiple-choice probe, calibration against M_ref), run on the checkpoint through :mod:`iclmem.adapters`.
"""

from __future__ import annotations

#: The chain an audit runs, in order: fine-tuning (ground truth), probing, calibration and outcome.
AUDIT_CHAIN: tuple[str, ...] = ("02_controlled_finetuning", "03_multiple_choice_probing", "04_calibration")


def audit_commands(kind: str, checkpoint: str, parameters_file: str = "my_table.yaml") -> str:
    """The exact shell commands that audit a ``kind`` ("tabpfn" or "tabicl") checkpoint on the table of
    ``parameters_file``."""
    if kind not in ("tabpfn", "tabicl"):
        raise ValueError(f"kind must be 'tabpfn' or 'tabicl', got {kind!r}.")
    lines = [
        "pip install -e '.[ltms]'   # tabicl==2.2.0, tabpfn==9.2.0 (make test installs them too)",
        "export HF_HUB_OFFLINE=1     # nothing downloads: the checkpoint is a local file",
    ]
    lines += [
        f"iclmem run notebooks/{stem}.py -f {parameters_file} -p model {kind}:{checkpoint}" for stem in AUDIT_CHAIN
    ]
    return "```bash\n" + "\n".join(lines) + "\n```"
