"""The engine: text -> phonemes -> model -> audio chunks, with voices and the one-call `speak`."""
from tilewave.engine.pipeline import SAMPLE_RATE, Chunk, Pipeline, join_chunks, speak
from tilewave.engine.voices import builtin_voices, load_voice, style_for

__all__ = ["SAMPLE_RATE", "Chunk", "Pipeline", "builtin_voices", "join_chunks", "load_voice", "speak", "style_for"]
