"""Appendix A4 (notebook A4): audit your own fine-tuned LTM (IclMem Sec. 4.1, 4.2, App. A.4)."""
