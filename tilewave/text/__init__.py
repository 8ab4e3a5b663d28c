"""Text -> Kokoro phonemes: espeak-ng for English, the model's vocabulary, and chunking."""
from tilewave.text.chunking import TextChunk, chunk_phonemes, chunk_text
from tilewave.text.espeak import LANGUAGES, EspeakPhonemizer, check_language
from tilewave.text.vocab import MAX_PHONEMES, encode, has_phones, unknown_symbols, vocab

__all__ = ["LANGUAGES", "MAX_PHONEMES", "EspeakPhonemizer", "TextChunk", "check_language", "chunk_phonemes", "chunk_text", "encode",
           "has_phones", "unknown_symbols", "vocab"]
