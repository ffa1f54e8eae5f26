"""Notebook 01, split validation: IclMem Sec. 4.1 ("Data Pre-Processing"), App. A.2 (Tab. 5, Tab. 6).

The names notebook 01 uses: the paper's Tab. 6 (:mod:`.paper`), the manifests (:mod:`.manifests`), our Tab. 6
(:mod:`.tables`), the ECDF figure (:mod:`.figures`), the glued numbers (:mod:`.numbers`) and claim C14
(:mod:`.claims`).
"""

from iclmem.chapters.ch01_split.claims import split_claim
from iclmem.chapters.ch01_split.figures import plot_pool_ecdfs
from iclmem.chapters.ch01_split.manifests import split_manifests
from iclmem.chapters.ch01_split.numbers import glue_values
from iclmem.chapters.ch01_split.paper import paper_table6
from iclmem.chapters.ch01_split.tables import validation_table

__all__ = ["glue_values", "paper_table6", "plot_pool_ecdfs", "split_claim", "split_manifests", "validation_table"]
