"""What the server did, in Prometheus' text format (`GET /metrics`): requests by endpoint and status, the
engine's queue depth, batch sizes, time to first audio and the real-time factor of each speech request.

Each app has its own registry (a process may hold several apps, as the tests do); batch sizes are read from
the session's batch list at each scrape (the scheduler's worker keeps it), so the worker does no metrics work.
"""
from __future__ import annotations

import threading

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

# seconds; a CPU's first chunk takes ~0.3-3 s, a GPU's tens of ms
FIRST_AUDIO_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 16, 32)
# synthesis seconds per second of audio: below 1 is faster than real time
RTF_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64)


class Metrics:
    def __init__(self, session, ready) -> None:
        self.registry = CollectorRegistry()
        self._session, self._ready = session, ready  # ready(): the model is loaded and its worker runs
        self.requests = Counter("tilewave_requests", "HTTP requests answered, by endpoint and status",
                                ["endpoint", "status"], registry=self.registry)
        self.first_audio = Histogram("tilewave_time_to_first_audio_seconds", "From a speech request's arrival "
                                     "to its first audio bytes sent", buckets=FIRST_AUDIO_BUCKETS,
                                     registry=self.registry)
        self.real_time_factor = Histogram("tilewave_real_time_factor", "A speech request's time from arrival to "
                                          "its last audio, over the audio's duration", buckets=RTF_BUCKETS,
                                          registry=self.registry)
        self.batch_size = Histogram("tilewave_batch_size", "Chunks per model batch (of every request)",
                                    buckets=BATCH_BUCKETS, registry=self.registry)
        queue = Gauge("tilewave_queue_depth", "Requests the engine holds (queued or being made)",
                      registry=self.registry)
        queue.set_function(self._queue_depth)
        self._batches_seen = 0
        self._lock = threading.Lock()

    def _queue_depth(self) -> float:
        return float(self._session.scheduler.pending()) if self._ready() else 0.0

    def skip_batches(self) -> None:
        """Leave the batches run so far out of the histogram (the server's warm-up served no client)."""
        with self._lock:
            self._batches_seen = len(self._session.batches())

    def scrape(self) -> tuple[bytes, str]:
        with self._lock:
            batches = self._session.batches()
            for stats in batches[self._batches_seen:]:
                self.batch_size.observe(stats.size)
            self._batches_seen = len(batches)
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
