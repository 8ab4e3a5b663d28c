"""Triton kernels, one module (or package) per family; each registers its kernels in tilewave.spec's registry.

Importing this package imports nothing heavy; `tilewave.harness.catalogue.load_all_kernels()` imports
every module here (so a new family module is picked up without editing a list).
"""
