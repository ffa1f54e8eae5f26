"""Notebook A4, audit your model: IclMem Sec. 4.1, 4.2 and App. A.4 applied to a fine-tuned LTM of your own.

``commands`` (``iclmem audit`` on a run's checkpoint and files; the shell commands of the audit chain), ``tables``
(the audit's tables, the command's numbers and report).
"""

from iclmem.chapters.ch_a4_audit.commands import AUDIT_CHAIN, CommandAudit, audit_commands, run_audit_command
from iclmem.chapters.ch_a4_audit.tables import (
    AUDIT_COLUMNS,
    audit_table,
    command_table,
    command_texts,
    external_audit_table,
    naive_probe_table,
    report_frame,
)

__all__ = [
    "AUDIT_CHAIN",
    "AUDIT_COLUMNS",
    "CommandAudit",
    "audit_commands",
    "audit_table",
    "command_table",
    "command_texts",
    "external_audit_table",
    "naive_probe_table",
    "report_frame",
    "run_audit_command",
]
