"""Notebook 07, mitigation: DP-SGD against the memorization the book detects (IclMem Sec. 6), claims M1, M2."""
