"""Appendix A4 of this book (IclMem Sec. 4.1, 4.2, App. A.4 applied to your own model): ``iclmem audit`` on a
controlled run's checkpoint and its two files, and the commands that run the audit chain on a TabPFN v2 or TabICL
checkpoint (notebook A4).

The chain is the book's own (controlled fine-tuning with a logged ground truth, the zero-information
multiple-choice probe, calibration against M_ref), run on the checkpoint through :mod:`iclmem.adapters`.
"""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

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


@dataclass(frozen=True)
class CommandAudit:
    """What ``iclmem audit`` did on a controlled run's checkpoint (notebook A4): its command line (the temporary
    folder written ``<folder>``), exit status, printed summary, result (``audit.json``) and report (``audit.html``)."""

    command: str
    status: int
    summary: str
    result: dict
    html: str


def audit_files(run, reference, table, folder: Path) -> tuple[str, Path, Path, Path]:
    """The files an auditor of ``run`` holds: its last kept M_theta as a checkpoint (``ReferenceLTM.save`` or the
    adapter's ``save``), its member rows, its non-member rows and the whole table it was fine-tuned from as CSV;
    returns the checkpoint's model spec and the three files."""
    epoch = max(run.config.probe_epochs)
    frame = pd.concat([table.features, table.target], axis=1)
    members, non_members, whole = folder / "members.csv", folder / "non_members.csv", folder / "table.csv"
    frame.iloc[run.manifest.members].to_csv(members, index=False)
    frame.iloc[run.manifest.non_members].to_csv(non_members, index=False)
    frame.to_csv(whole, index=False)
    kind = getattr(reference, "kind", "reference")
    path = run.model(epoch, reference).save(folder / ("theta.pt" if kind == "reference" else "theta.ckpt"))
    return f"{kind}:{path}", members, non_members, whole


def run_audit_command(
    run,
    reference,
    table,
    model: str,
    *,
    control: bool = True,
    full_table: bool = True,
    max_queries: int = 1000,
    n_boot: int = 200,
    n_permutations: int = 100,
    seed: int = 0,
) -> CommandAudit:
    """``iclmem audit`` on the files of :func:`audit_files` (a temporary folder), run as a user runs it
    (:func:`iclmem.cli.main`), with ``model`` (the page's M_ref) as ``--base`` and, with ``full_table``, the run's
    whole table as ``--table`` (then the command reads the rows as the chain does, and its AUC is the chain's);
    ``max_queries`` probes at most that many members and non-members (at least the audit's smallest,
    :data:`iclmem.probe.audit.inputs.MIN_ROWS`)."""
    from iclmem.cli import main
    from iclmem.probe.audit.inputs import MIN_ROWS

    with tempfile.TemporaryDirectory(prefix="iclmem-a4-") as tmp:
        folder = Path(tmp)
        spec, members, non_members, whole = audit_files(run, reference, table, folder)
        args = ["--model", spec, "--base", model, "--members", members, "--non-members", non_members]
        args += ["--table", whole] if full_table else []
        args += ["--target", table.target_name, "--task", table.task, "--out", folder / "report"]
        args += ["--max-queries", max(max_queries, MIN_ROWS), "--n-boot", n_boot, "--permutations", n_permutations]
        args += ["--seed", seed] + (["--control"] if control else [])
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["audit", *map(str, args), "--no-progress"])
        if status == 2:  # a bad input: the one line the command printed
            from iclmem.probe.audit.inputs import AuditInputError

            raise AuditInputError(err.getvalue().strip().removeprefix("iclmem audit: error: "))
        result = json.loads((folder / "report" / "audit.json").read_text())
        page = (folder / "report" / "audit.html").read_text()
        shown = " ".join(shlex.quote(str(a)) for a in args).replace(tmp, "<folder>")
    return CommandAudit(f"iclmem audit {shown}", status, out.getvalue().replace(tmp, "<folder>"), result, page)
