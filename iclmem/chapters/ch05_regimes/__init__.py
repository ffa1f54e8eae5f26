"""Notebook 05, realistic training regimes: IclMem Sec. 6 ("Limitations"), App. D (Tab. 12), claim C13."""
