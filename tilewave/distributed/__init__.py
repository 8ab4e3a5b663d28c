"""Beyond one process: batch jobs (a manifest -> one audio file per item, resumable) in one process or on Ray
Data, and the HTTP API on Ray Serve. Ray is imported only by what needs it.

    from tilewave.distributed import KokoroSynthesizer      # a map_batches-ready callable (see ray_data.py)
    from tilewave.distributed import Options, run_local, run_ray
"""
from tilewave.distributed.jobs import Item, Job, Result, read_manifest
from tilewave.distributed.local import Options, Summary, run_local
from tilewave.distributed.ray_data import KokoroSynthesizer, run_ray

__all__ = ["Item", "Job", "KokoroSynthesizer", "Options", "Result", "Summary", "read_manifest", "run_local", "run_ray"]
