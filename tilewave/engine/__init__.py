"""The engine: text -> phonemes -> model -> audio chunks; the session that owns device, precision and model; the
scheduler that batches and streams requests; voices.

Each name is imported on first use (PEP 562), so that `tilewave.engine.wav` or the command line's parser do not
load torch, espeak and the model code."""
from importlib import import_module

_WHERE = {
    "SAMPLE_RATE": "pipeline", "Chunk": "pipeline", "Joiner": "pipeline", "Pipeline": "pipeline",
    "join_chunks": "pipeline", "Cancelled": "scheduler", "QueueFull": "scheduler", "Session": "session",
    "speak": "session", "speak_many": "session", "stream": "session", "DEFAULT_VOICE": "voices",
    "builtin_voices": "voices", "load_voice": "voices", "style_for": "voices", "BatchPolicy": "policy",
    "KokoroRunner": "runner", "configure_process": "process",
}
_PRECISION_NAMES = {"DEFAULT_PRECISION": "DEFAULT", "PRECISIONS": "MODES", "DTYPES": "DTYPES",
                    "KOKORO_DTYPES": "KOKORO_DTYPES"}
__all__ = sorted([*_WHERE, *_PRECISION_NAMES, "LANGUAGES"])


def __getattr__(name):
    if name in _PRECISION_NAMES:
        from tilewave import precision

        return getattr(precision, _PRECISION_NAMES[name])
    if name == "LANGUAGES":
        from tilewave.text import LANGUAGES

        return LANGUAGES
    if name in _WHERE:
        return getattr(import_module(f"tilewave.engine.{_WHERE[name]}"), name)
    if not name.startswith("_"):  # a submodule not yet imported: `tilewave.engine.session` after `import tilewave.engine`
        try:
            return import_module(f"tilewave.engine.{name}")
        except ModuleNotFoundError:
            pass
    raise AttributeError(f"module 'tilewave.engine' has no attribute {name!r}")
