"""Notebook 01, split validation: IclMem Sec. 4.1 ("Data Pre-Processing"), App. A.2 (Tab. 5, Tab. 6)."""
