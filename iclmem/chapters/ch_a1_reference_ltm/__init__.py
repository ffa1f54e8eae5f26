"""Appendix A1 (notebook A1): the reference LTM, its model card and its quality report."""
