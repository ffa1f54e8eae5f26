"""Notebook A4, audit your model: IclMem Sec. 4.1, 4.2 and App. A.4 applied to a fine-tuned LTM of your own.

``commands`` (the shell commands of the audit chain), ``tables`` (the audit's tables).
"""

from iclmem.chapters.ch_a4_audit.commands import AUDIT_CHAIN, audit_commands
from iclmem.chapters.ch_a4_audit.tables import AUDIT_COLUMNS, audit_table, external_audit_table, naive_probe_table

__all__ = ["AUDIT_CHAIN", "AUDIT_COLUMNS", "audit_commands", "audit_table", "external_audit_table", "naive_probe_table"]
