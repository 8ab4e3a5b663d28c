"""The PyTorch form of each op, one module per kernel family: what tilewave.ops runs off the GPU, and the stock
peer each Triton kernel of tilewave.kernels is tested and timed against (`Kernel.peer`).

Torch and NumPy only, never triton: a CPU process (`tilewave say --device cpu`) imports these and no kernel
module. Below tilewave.kernels, beside tilewave.spec; a family's float64 oracles stay beside its kernels, except
attention's, which share their masks with the peers.
"""
