"""iclmem: a reproducible companion to two papers on memorization in in-context learning.

Paper 1 (IclMem): "Probing Memorization of Tabular In-Context Learning".
Paper 2: "Memorization In In-Context Learning".
"""

__version__ = "0.1.0"
