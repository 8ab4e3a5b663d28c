"""Models built from tilewave ops: Kokoro (TTS) and vocoders."""
