"""Notebook 04, calibration and outcomes: IclMem Sec. 4.2, Sec. 5, App. A.4, App. B, and the probe itself."""
