"""Notebook 00, the scorecard (both papers, claims C1-C16 and D1-D9, the rows P1-P3, M1, M2)."""
