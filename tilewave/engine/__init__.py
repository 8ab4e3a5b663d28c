"""The engine: text -> phonemes -> model -> audio chunks; the session that owns device, precision and model; the
scheduler that batches and streams requests; voices."""
from tilewave.engine.pipeline import SAMPLE_RATE, Chunk, Joiner, Pipeline, join_chunks
from tilewave.engine.scheduler import Cancelled, QueueFull
from tilewave.engine.session import Session, speak, speak_many, stream
from tilewave.engine.voices import DEFAULT_VOICE, builtin_voices, load_voice, style_for
from tilewave.precision import DEFAULT as DEFAULT_PRECISION, DTYPES, KOKORO_DTYPES, MODES as PRECISIONS
from tilewave.text import LANGUAGES

__all__ = ["DEFAULT_PRECISION", "DEFAULT_VOICE", "DTYPES", "KOKORO_DTYPES", "LANGUAGES", "PRECISIONS", "SAMPLE_RATE", "Cancelled", "Chunk",
           "Joiner", "Pipeline", "QueueFull", "Session", "builtin_voices", "join_chunks", "load_voice", "speak", "speak_many",
           "stream", "style_for"]
