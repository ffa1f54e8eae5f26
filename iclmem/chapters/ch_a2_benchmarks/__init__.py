"""Appendix A2 (notebook A2, no paper section): the speed benchmarks of ``benchmarks/``."""
