"""Appendix A3 (notebook A3, no paper section): every bad input the package answers, and its message."""
