"""BatchPolicy: every rule by which the engine forms batches and runs them on a device, in one frozen object.

A Session is given one (default: BatchPolicy(), the measured defaults; figures in benchmarks/RESULTS.md) and hands
it to its runner (engine.runner.KokoroRunner: CUDA graphs, buckets, padded or one by one) and its scheduler (length
buckets, frame budget, fill). A benchmark that tries another rule passes its own, made with dataclasses.replace;
nothing assigns a module's constant to change what the engine does.
"""
from __future__ import annotations

from dataclasses import dataclass

GRAPH_KINDS = 3  # graphs of a length: its token stages, its frame stages, its generator


@dataclass(frozen=True)
class BatchPolicy:
    """How a session batches its requests and replays them from CUDA graphs (each field's rule and why below)."""

    token_bucket: int = 32
    """Graphs: the token stages (ALBERT, the duration predictor, the text encoder) run on ids padded to a multiple of
    this, so that Kokoro's 512 tokens take 16 graphs."""
    frame_bucket: int = 64
    """Graphs: after the one read-back of the durations, alignment, the F0/energy curves, the decoder and the
    generator run on decoder frames (two a duration frame; 64 is 0.8 s of audio) padded to a multiple of this."""
    max_frames: int = 2048
    """Graphs for items up to this many decoder frames (25.6 s of audio, 32 buckets): what they save is launch time,
    most of a short item's forward and some of a long one's (a lower limit made a long item slower than eager, its
    frame stages then eager); longer items run their frame stages and generator eagerly, so a stream of long chunks
    cannot cycle through more buckets than graphs are kept."""
    padded_min: int = 4
    """With graphs, a batch of fewer items than this runs as its items' graphed forwards one after another: an eager
    padded pass (well over a thousand launches) is host-bound at a few items, and graphed singles run small batches
    faster."""
    padded_batches: bool = False
    """A padded batch of up to batch_buckets[-1] items replays the graphs of its batch bucket (the smallest of
    batch_buckets that holds it, the last item repeated into the spare rows) — tokens, frames and generator, as a
    single does — where it would run eagerly. Off: a batch alone runs faster that way, but in a server's load test
    every new batch key pays a recording under load; with keys recorded on their first call (record_after=0, so
    the server's warm-up records them) it beat eager padded batches in one run, which is not yet enough to make it
    the default (benchmarks/RESULTS.md)."""
    batch_buckets: tuple[int, ...] = (1, 2, 3, 4, 6, 8, 12, 16)
    """The batch sizes padded batches' graphs are recorded at (padded_batches)."""
    max_batch_frames: int = 16384
    """A graphed padded batch of more decoder frames than this over its bucket's rows runs its frame stages and
    generator eagerly (the graphs' static buffers grow with rows x frames)."""
    record_after: int = 1
    """A padded batch's graph key is recorded on its call after this many eager ones: a server's batches draw from
    many keys, and a recording costs more than the eager pass it replaces (a single's keys record at once)."""
    max_bytes: int = 4 << 30
    """The graph cache keeps at most this many bytes of graph inputs and outputs, least recently used dropped first."""
    branch_streams: bool = True
    """A graph records the independent branches of its stages on side streams (ops.graphs.concurrently), so that a
    replay runs them at once; off, every branch on the recording stream (bit-identical either way)."""
    frame_budget: int = 4_096
    """Padded frames per batch when the session is given no memory budget: ~100 s of speech, two full 510-phoneme
    chunks at once."""
    bytes_per_frame: int = 1_200_000
    """Memory one estimated frame of a batch takes while Kokoro makes it, for turning a memory budget into frames:
    above what the per-item forward and the warm batched pass were measured to take on a CPU (float32, peak
    resident set above the loaded model)."""
    fill_share: int = 4
    """On a GPU a batch of fewer padded frames than frame_budget // fill_share also takes other length buckets'
    chunks: small batches are launch-bound there. A CPU runs a batch's items one by one anyway (buckets only)."""
    max_batch: int = 64
    """Chunks a batch takes at most (1: one request's chunk at a time)."""

    def batch_bucket(self, items: int) -> int | None:
        """The batch bucket that holds `items`, or None past the largest."""
        return next((b for b in self.batch_buckets if b >= items), None)

    @property
    def max_graphs(self) -> int:
        return GRAPH_KINDS * self.max_frames // self.frame_bucket * (len(self.batch_buckets) if self.padded_batches
                                                                     else 1)
