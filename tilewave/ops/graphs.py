"""CUDA graphs over bucketed shapes: a function's launches recorded once per shape bucket and replayed.

At batch 1 most of Kokoro's generator time on the H200 is host launch time (hundreds of small kernels; measured
in benchmarks/RESULTS.md: graph replays cut a 51-token sentence's generator 3.3x). A caller pads its inputs to a
bucket (with the lengths that keep the padding out of the result) and calls `GraphCache.run(key, fn, inputs)`:
the first call of a key runs `fn` once eagerly on a side stream (Triton compiles, workspaces are allocated), then
records it into a graph; every call copies `inputs` into that graph's static buffers, replays it, and returns
copies of its outputs. `fn` must not read tensors on the host (no .item(), .tolist(), .cpu()) and must launch
the same work for every input of the key's shapes.

Bounded: at most `max_graphs` graphs, least recently used dropped first; they share one memory pool (replays
are sequential on one stream and outputs are copied out before the next replay, so one graph's intermediates
may reuse another's memory).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Hashable

import torch


class GraphCache:
    def __init__(self, max_graphs: int = 8) -> None:
        if max_graphs < 1:
            raise ValueError(f"max_graphs must be >= 1, got {max_graphs}")
        self.max_graphs = max_graphs
        self._graphs: OrderedDict[Hashable, tuple] = OrderedDict()
        self._pool = None
        self.captures = 0  # how many graphs were recorded (a replay of a known key records none)

    def __len__(self) -> int:
        return len(self._graphs)

    def run(self, key: Hashable, fn: Callable[..., tuple[torch.Tensor, ...]],
            inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        entry = self._graphs.get(key)
        if entry is None:
            entry = self._capture(fn, inputs)
            self._graphs[key] = entry
            while len(self._graphs) > self.max_graphs:
                self._graphs.popitem(last=False)
        else:
            self._graphs.move_to_end(key)
        graph, static_in, static_out = entry
        for buffer, value in zip(static_in, inputs):
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
        with torch.cuda.graph(graph, pool=self._pool, capture_error_mode="thread_local"):
            static_out = fn(*static_in)
        self._pool = graph.pool()
        self.captures += 1
        return graph, static_in, tuple(static_out)
