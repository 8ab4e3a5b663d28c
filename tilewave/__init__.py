"""tilewave: neural speech models (TTS and vocoders) on hand-written Triton kernels, with PyTorch fallbacks."""
__version__ = "0.1.0"
