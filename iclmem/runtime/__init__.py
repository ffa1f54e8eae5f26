"""Where and how the work runs (issue 54 item 3): the device (:mod:`.device`), thread counts (:mod:`.threads`), worker
processes (:mod:`.workers`) and progress bars in the terminal (:mod:`.progress`).

Nothing is imported here, so that an artifact's code version (:func:`iclmem.store.keys.code_version`) hashes only the
modules its producer imports.
"""
