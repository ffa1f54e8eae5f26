"""Notebook 02, controlled fine-tuning: IclMem Sec. 4.1, Tab. 2, App. B.1 (Outcome I, the loss ratio)."""
