"""The content-addressed results store (issue 54 item 3): keys and code versions (:mod:`.keys`), the import closure
a code version hashes (:mod:`.imports`), atomic writes (:mod:`.atomic`) and the store's errors (:mod:`.errors`),
completion records (:mod:`.integrity`), ``iclmem store`` (:mod:`.tools`) and injected faults for tests
(:mod:`.faults`).

Nothing is imported here: a module's code version hashes the files it imports, and each package's ``__init__`` among
them, so this file stays free of imports to keep every artifact's key as narrow as its code.
"""
