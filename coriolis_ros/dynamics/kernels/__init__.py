"""Numba kernels: one algorithm per module, all reading a Model's packed arrays and a workspace."""
