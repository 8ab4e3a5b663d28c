"""CUDA graphs over bucketed shapes: a function's launches recorded once per shape bucket and replayed.

At batch 1 most of Kokoro's generator time on a fast GPU is host launch time (hundreds of small kernels), which
graph replays remove (benchmarks/RESULTS.md). A caller pads its inputs to a
bucket (with the lengths that keep the padding out of the result) and calls `GraphCache.run(key, fn, inputs)`:
the first call of a key runs `fn` once eagerly on a side stream (Triton compiles, workspaces are allocated), then
records it into a graph; every call copies `inputs` into that graph's static buffers, replays it, and returns
copies of its outputs. `fn` must not read tensors on the host (no .item(), .tolist(), .cpu()) and must launch
the same work for every input of the key's shapes.

Bounded: at most `max_graphs` graphs, least recently used dropped first; they share one memory pool (replays
are sequential on one stream and outputs are copied out before the next replay, so one graph's intermediates
may reuse another's memory).

Branches: `concurrently(device, *fns)` runs independent parts of a recorded function on side streams forked from
and joined back into the recording stream, so that a replay runs them at once; at batch 1 most of Kokoro's kernels
fill a fraction of a large GPU's SMs, and its stages have independent parts (the F0 blocks beside the energy blocks,
the generator's noise branch beside its upsampling and its three resblocks beside one another). Never an LSTM in a
branch: its kernel's programs meet at a barrier after every step and must all be resident, and beside other work
its steps stall (the text encoder beside ALBERT made a long item's token graph slower: benchmarks/RESULTS.md).
Outside a recording they run one after another: eager CUDA work across streams would need record_stream for every
tensor that crosses, and the CPU has one stream. The branches' kernels and their order within each branch are the
sequential run's, so a replay's results are bit-identical to it.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, Hashable

import torch

# per thread: two threads may record at once (capture_error_mode="thread_local"), and a stream joins one capture
_local = threading.local()


def concurrently(device: torch.device, *fns: Callable[[], object]) -> list:
    """[fn() for fn in fns], with fns[1:] each on its own side stream while a CUDA graph is being recorded (see the
    module's docstring). The branches must be independent: no branch reads what another writes, none writes a tensor
    that exists before the call (each returns fresh outputs), none calls concurrently itself, and none runs an LSTM."""
    if (len(fns) < 2 or not _local.__dict__.get("branch_streams", True) or device.type != "cuda"
            or not torch.cuda.is_current_stream_capturing()):
        return [fn() for fn in fns]
    main = torch.cuda.current_stream(device)
    sides = _local.__dict__.setdefault(device, [])
    while len(sides) < len(fns) - 1:
        sides.append(torch.cuda.Stream(device))
    results: list = [None] * len(fns)
    # Every branch starts after all the recording stream has queued (so memory freed on it before the fork is not
    # reused under a branch) and the recording stream goes on after every branch: the inputs a branch reads are
    # alive until the join, since the caller holds them.
    for side in sides[:len(fns) - 1]:
        side.wait_stream(main)
    for side, i in zip(sides, range(1, len(fns))):
        with torch.cuda.stream(side):
            results[i] = fns[i]()
    results[0] = fns[0]()
    for side in sides[:len(fns) - 1]:
        main.wait_stream(side)
    return results


class GraphCache:
    """Graphs by key: at most max_graphs, and at most max_bytes of their static inputs and outputs (None: no byte
    bound), least recently used dropped first. A key may ask to run eagerly on its first `record_after` calls
    (run's argument): one seen once is not worth a recording, which costs more than the eager pass. branch_streams
    off: concurrently's branches recorded on the recording stream, one after another (benchmarks/diag/graphs_gpu.py
    measures the two forms against each other in one process)."""

    def __init__(self, max_graphs: int = 8, max_bytes: int | None = None, branch_streams: bool = True) -> None:
        if max_graphs < 1:
            raise ValueError(f"max_graphs must be >= 1, got {max_graphs}")
        self.max_graphs, self.max_bytes, self.branch_streams = max_graphs, max_bytes, branch_streams
        self._graphs: OrderedDict[Hashable, tuple] = OrderedDict()
        self._seen: OrderedDict[Hashable, int] = OrderedDict()  # eager calls of keys not yet recorded
        self._pool = None
        self.bytes = 0  # of the kept graphs' static inputs and outputs
        self.captures = 0  # how many graphs were recorded (a replay of a known key records none)

    def __len__(self) -> int:
        return len(self._graphs)

    @property
    def keys(self) -> list:
        return list(self._graphs)

    def run(self, key: Hashable, fn: Callable[..., tuple[torch.Tensor, ...]],
            inputs: tuple[torch.Tensor, ...], record_after: int = 0) -> tuple[torch.Tensor, ...]:
        entry = self._graphs.get(key)
        if entry is None:
            seen = self._seen.pop(key, 0)
            if seen < record_after:
                self._seen[key] = seen + 1
                while len(self._seen) > 4 * self.max_graphs:
                    self._seen.popitem(last=False)
                return tuple(fn(*inputs))
            entry = self._capture(fn, inputs)
            self._graphs[key] = entry
            self.bytes += entry[3]
            while len(self._graphs) > 1 and (len(self._graphs) > self.max_graphs or (
                    self.max_bytes is not None and self.bytes > self.max_bytes)):
                self.bytes -= self._graphs.popitem(last=False)[1][3]
        else:
            self._graphs.move_to_end(key)
        graph, static_in, static_out, _ = entry
        for i, (buffer, value) in enumerate(zip(static_in, inputs)):
            # copy_ would broadcast a smaller input or fail deep in ATen: a key must fix its inputs' shapes
            if value.shape != buffer.shape or value.dtype != buffer.dtype:
                raise ValueError(f"graph {key!r} was recorded with input {i} {tuple(buffer.shape)} {buffer.dtype}, "
                                 f"got {tuple(value.shape)} {value.dtype}: its key must name what sets the shapes")
            buffer.copy_(value)
        graph.replay()
        return tuple(t.clone() for t in static_out)

    def _capture(self, fn, inputs):
        static_in = tuple(t.clone() for t in inputs)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn(*static_in)  # compiles and allocates outside the recording
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        # thread_local: CUDA work of other threads (another session on the same GPU) may go on while this records
        _local.branch_streams = self.branch_streams  # read by concurrently, on this thread, while it records
        try:
            with torch.cuda.graph(graph, pool=self._pool, capture_error_mode="thread_local"):
                static_out = fn(*static_in)
        finally:
            del _local.branch_streams
        self._pool = graph.pool()
        self.captures += 1
        size = sum(t.numel() * t.element_size() for t in (*static_in, *static_out))
        return graph, static_in, tuple(static_out), size
