"""Triton kernels, one module per family; each module registers its kernels in the harness registry.

Importing this package imports nothing heavy; `tilewave.harness.registry.load_all_kernels()` imports
every module here (so a new family module is picked up without editing a list).
"""
