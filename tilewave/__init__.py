"""tilewave: neural speech models (TTS and vocoders) on hand-written Triton kernels, with PyTorch fallbacks."""
__version__ = "0.1.0"


def __getattr__(name):
    # `tilewave.speak` and its kin are imported on first use, so that `import tilewave` does not load torch and espeak.
    if name in ("speak", "speak_many", "stream", "Session"):
        from tilewave import engine

        return getattr(engine, name)
    raise AttributeError(f"module 'tilewave' has no attribute {name!r}")
