"""Word timestamps from the model's token durations, and their files (.srt, .vtt, .json).

    chunks = list(Pipeline()(text))
    words = word_timestamps(chunks)   # [WordTime("Hello", 0.075, 0.45), ...]
    write_timestamps("out.srt", words)

Kokoro predicts how many frames of 600 samples each token lasts (Chunk.durations, the two pads included),
and the front-end says which tokens are each word's (Chunk.words), so a word's start and end inside its
chunk are sums of durations. Kokoro gives the silence after the last sound of a phrase to that sound's
token (the "d" of "friend." can last 19 frames, 14 of them silent), so a word's end is pulled back over
frames of its own that are silent (40 dB below the chunk's peak); and it starts a word's sound in the
frames of the pad, space or punctuation before it (the "h" of a first "Hello" begins two frames into
the start pad), so a word's start is moved back over loud frames that no word owns. Where each chunk
starts in the joined audio is computed the way pipeline.join_chunks joins them (each join overlaps
CROSSFADE_SAMPLES, or less beside a shorter chunk), and a pause is part of its chunk's audio: no error
piles up over a long text.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from datetime import timedelta

import numpy as np

from tilewave.engine.pipeline import CROSSFADE_SAMPLES, SAMPLE_RATE
from tilewave.errors import InputError

FRAME_SAMPLES = 600  # samples of audio per duration frame at 24 kHz
SILENCE = 0.01       # a frame whose peak is below this share of the chunk's peak (-40 dB) is silent
FORMATS = (".srt", ".vtt", ".json")


@dataclass(frozen=True)
class WordTime:
    word: str
    start: float  # seconds from the start of the joined audio
    end: float


def chunk_starts(sizes: list[int], crossfade: int = CROSSFADE_SAMPLES) -> list[int]:
    """The sample where each chunk's audio begins in join_chunks' output, for chunks of these sizes."""
    starts, overlap = [], 0
    for k, size in enumerate(sizes):
        if k == 0:
            starts.append(0)
            continue
        overlap = min(crossfade, sizes[k - 1] - overlap, size)  # join_chunks' n: the rest of the last chunk
        starts.append(starts[-1] + sizes[k - 1] - overlap)
    return starts


def word_timestamps(chunks, crossfade: int = CROSSFADE_SAMPLES, sample_rate: int = SAMPLE_RATE) -> list[WordTime]:
    """Each word of the chunks (pipeline Chunks, in order) with its start and end in the joined audio."""
    chunks = list(chunks)
    out = []
    for chunk, start in zip(chunks, chunk_starts([c.audio.size for c in chunks], crossfade)):
        if not chunk.words:
            continue
        frames = np.concatenate([[0], np.cumsum(chunk.durations.numpy())])
        audio = np.abs(chunk.audio[: int(frames[-1]) * FRAME_SAMPLES])
        peaks = audio[: audio.size // FRAME_SAMPLES * FRAME_SAMPLES].reshape(-1, FRAME_SAMPLES).max(axis=1)
        loud = peaks >= SILENCE * peaks.max(initial=0.0)
        previous_end = 0
        for word in chunk.words:
            first, end = int(frames[word.first]), int(frames[word.last + 1])
            while end - 1 > first and end - 1 < loud.size and not loud[end - 1]:
                end -= 1
            while first - 1 >= previous_end and first - 1 < loud.size and loud[first - 1]:
                first -= 1
            previous_end = end
            out.append(WordTime(word.text, (start + first * FRAME_SAMPLES) / sample_rate,
                                (start + end * FRAME_SAMPLES) / sample_rate))
    return out


def check_timestamps_path(path: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise InputError(f"cannot write timestamps to {path!r}: give a file ending in {', '.join(FORMATS)}")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError(f"cannot write {path!r}: the folder {folder} does not exist")
    return ext


def _vtt_time(seconds: float) -> str:
    ms = round(seconds * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}"


def format_timestamps(words: list[WordTime], ext: str) -> str:
    """The words as SubRip (one cue per word), WebVTT (the same), or JSON ({"words": [{word, start, end}]})."""
    if ext == ".json":
        return json.dumps({"words": [asdict(w) for w in words]}, ensure_ascii=False, indent=1) + "\n"
    if ext == ".srt":
        import srt

        return srt.compose([srt.Subtitle(i + 1, timedelta(seconds=w.start), timedelta(seconds=w.end), w.word)
                            for i, w in enumerate(words)], reindex=False)
    cues = [f"{_vtt_time(w.start)} --> {_vtt_time(w.end)}\n{w.word}\n" for w in words]
    return "WEBVTT\n\n" + "\n".join(cues)


def write_timestamps(path: str, words: list[WordTime]) -> None:
    """Write the words to `path`, in the format its extension names (.srt, .vtt or .json)."""
    text = format_timestamps(words, check_timestamps_path(path))
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
