"""Models built from tilewave.ops: Kokoro-82M (TTS) and the vocoders."""
