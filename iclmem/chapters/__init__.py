"""The paper layer: one module per chapter notebook, holding what only that chapter needs.

Each module's docstring opens with the paper sections it covers. The engine (the rest of
:mod:`iclmem`) never imports from here.
"""
