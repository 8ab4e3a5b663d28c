"""Text -> Kokoro phonemes: one G2P per language (espeak-ng, Japanese, Mandarin), the vocabulary, and chunking."""
from tilewave.text.chunking import TextChunk, chunk_phonemes, chunk_text
from tilewave.text.espeak import EspeakPhonemizer
from tilewave.text.languages import LANGUAGE_CHOICES, LANGUAGES, check_language, phonemizer_for
from tilewave.text.vocab import MAX_PHONEMES, encode, has_phones, unknown_symbols, vocab

__all__ = ["LANGUAGES", "LANGUAGE_CHOICES", "MAX_PHONEMES", "EspeakPhonemizer", "TextChunk", "check_language",
           "chunk_phonemes", "chunk_text", "encode", "has_phones", "phonemizer_for", "unknown_symbols", "vocab"]
