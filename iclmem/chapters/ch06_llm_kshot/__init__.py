"""Notebook 06, k-shot replication: Golchin et al. 2024, Sec. 3-5, Tab. 1-3, Fig. 2-4, claims D1-D9."""
