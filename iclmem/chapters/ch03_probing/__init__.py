"""Notebook 03, multiple-choice probing: IclMem Sec. 4.2, Sec. 5 ("Perturbation Effectiveness"), App. A.3."""
