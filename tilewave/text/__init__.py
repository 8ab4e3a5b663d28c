"""Text -> Kokoro phonemes: normalization, inline markup, one G2P per language (espeak-ng, Japanese, Mandarin), the
vocabulary, and chunking."""
from tilewave.text.chunking import TextChunk, Word, chunk_phonemes, chunk_text
from tilewave.text.espeak import EspeakPhonemizer
from tilewave.text.frontend import text_chunks
from tilewave.text.languages import LANGUAGE_CHOICES, LANGUAGES, check_language, phonemizer_for
from tilewave.text.normalize import normalize
from tilewave.text.vocab import MAX_PHONEMES, encode, has_phones, unknown_symbols, vocab

__all__ = ["LANGUAGES", "LANGUAGE_CHOICES", "MAX_PHONEMES", "EspeakPhonemizer", "TextChunk", "Word", "check_language",
           "chunk_phonemes", "chunk_text", "encode", "has_phones", "normalize", "phonemizer_for", "text_chunks",
           "unknown_symbols", "vocab"]
