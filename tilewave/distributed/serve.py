"""The HTTP speech API (tilewave.server.app, the same FastAPI app `tilewave serve` runs) on Ray Serve: one
replica per GPU (or CPU replicas), each with its own engine session whose scheduler batches the chunks of the
requests it holds; Serve's back-pressure refuses what is beyond `max_ongoing_requests` per replica plus
`max_queued_requests` waiting (HTTP 503) instead of letting callers hang.

    from ray import serve
    from tilewave.distributed.serve import speech_app
    serve.run(speech_app(num_replicas=2, num_gpus=1), route_prefix="/")   # POST /v1/audio/speech
"""
from __future__ import annotations

import time

from ray import serve

# Requests one replica holds at once: its scheduler batches their chunks together (each is a thread of the
# app's sync endpoint); more wait in Serve's queue, up to MAX_QUEUED, and beyond it get 503.
MAX_ONGOING = 16
MAX_QUEUED = 64


@serve.ingress()
class SpeechServer:
    """One replica: an engine session, its model loaded in the constructor, and the server's app over it."""

    def __init__(self, lang: str | None = None, device: str | None = None, weights: str | None = None,
                 precision: str | None = None, memory_budget: str | None = None, dtype: str = "float32") -> None:
        from tilewave.engine import Session
        from tilewave.engine.process import configure_process

        configure_process(device, memory_budget)  # this replica's process
        options = {"dtype": dtype} if precision is None else {"precision": precision, "dtype": dtype}
        self.session = Session(lang=lang, device=device, weights=weights, memory_budget=memory_budget,
                               **options).load()

    def __serve_build_asgi_app__(self):
        from tilewave.server.app import create_app

        return create_app(session=self.session)

    def __del__(self) -> None:
        session = getattr(self, "session", None)
        if session is not None:
            session.close()


def speech_app(num_replicas: int = 1, num_gpus: float = 0, max_ongoing_requests: int = MAX_ONGOING,
               max_queued_requests: int = MAX_QUEUED, **session_options):
    """The bound Serve application: `num_replicas` replicas of SpeechServer, `num_gpus` each (1 on a GPU
    cluster: one replica per GPU)."""
    deployment = serve.deployment(SpeechServer, name="tilewave-speech", num_replicas=num_replicas,
                                  ray_actor_options={"num_gpus": num_gpus, "num_cpus": 0 if num_gpus else 1},
                                  max_ongoing_requests=max_ongoing_requests, max_queued_requests=max_queued_requests)
    return deployment.bind(**session_options)


def run_serve(address: str | None = None, host: str = "127.0.0.1", port: int = 8000, replicas: int | None = None,
              max_ongoing_requests: int = MAX_ONGOING, max_queued_requests: int = MAX_QUEUED, **session_options) -> None:
    """`tilewave serve --ray [ADDRESS]`: the API on the cluster at `address` (a local one when None), one replica
    per GPU (or `replicas` CPU replicas, default 1), until interrupted; Serve is shut down on the way out."""
    import ray

    ray.init(address=address, include_dashboard=False)
    try:
        gpus = int(ray.cluster_resources().get("GPU", 0))
        serve.start(http_options={"host": host, "port": port})
        serve.run(speech_app(num_replicas=replicas or gpus or 1, num_gpus=1 if gpus else 0,
                             max_ongoing_requests=max_ongoing_requests, max_queued_requests=max_queued_requests,
                             **session_options), name="tilewave", route_prefix="/")
        print(f"serving on http://{host}:{port} (POST /v1/audio/speech); Ctrl-C stops", flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        serve.shutdown()
        ray.shutdown()
