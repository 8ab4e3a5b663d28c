"""Text -> Kokoro phonemes: normalization, inline markup, espeak-ng for English, the model's vocabulary, chunking."""
from tilewave.text.chunking import TextChunk, Word, chunk_phonemes, chunk_text
from tilewave.text.espeak import LANGUAGES, EspeakPhonemizer, check_language
from tilewave.text.frontend import text_chunks
from tilewave.text.normalize import normalize
from tilewave.text.vocab import MAX_PHONEMES, encode, has_phones, unknown_symbols, vocab

__all__ = ["LANGUAGES", "MAX_PHONEMES", "EspeakPhonemizer", "TextChunk", "Word", "check_language", "chunk_phonemes",
           "chunk_text", "encode", "has_phones", "normalize", "text_chunks", "unknown_symbols", "vocab"]
