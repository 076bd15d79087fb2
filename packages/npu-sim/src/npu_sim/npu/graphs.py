"""Graph capture and replay (torch_npu's NPUGraph API).

Capture records device work instead of running it (csrc/capture.cpp). Memory allocated
during capture comes from the graph's private pool and is poisoned until replay writes it.
"""

from __future__ import annotations

import gc
from typing import Any

import torch

from .._runtime import ext
from .streams import Stream, stream as stream_ctx


def graph_pool_handle() -> tuple[int, int]:
    """An id for a pool several graphs can share (pass it as `pool=`)."""
    return ext()._graph_pool_handle()


def is_current_stream_capturing() -> bool:
    return ext()._is_current_stream_capturing()


class NPUGraph:
    """A recorded sequence of device work on fixed addresses."""

    def __init__(self):
        self._g = ext()._NPUGraph()
        self._generators: list[torch.Generator] = []

    def capture_begin(self, pool: tuple[int, int] | None = None, capture_error_mode: str = "global") -> None:
        if capture_error_mode not in ("global", "thread_local", "relaxed"):
            raise ValueError(f"capture_error_mode must be global, thread_local or relaxed, got {capture_error_mode!r}")
        from .. import capture_rules

        rules = capture_rules.rules_on()
        if rules:
            _check_stream_budget("aclmdlRICaptureBegin")
        self._g.capture_begin(tuple(pool) if pool is not None else (0, 0), rules)

    def capture_end(self) -> None:
        self._g.capture_end()

    def replay(self) -> None:
        self._g.replay()

    def reset(self) -> None:
        self._g.reset()

    def pool(self) -> tuple[int, int]:
        return self._g.pool()

    def register_generator_state(self, generator: torch.Generator) -> None:
        """Replays draw from the live generator, so registered generators need no state copy."""
        self._generators.append(generator)

    @property
    def recorded_ops(self) -> list[str]:
        """What the capture recorded, in order (for tests and debugging)."""
        return list(self._g.recorded)

    @property
    def replay_count(self) -> int:
        return self._g.replays

    @property
    def invalidated(self) -> str:
        """The error that invalidated this graph's capture ("" when it did not)."""
        return self._g.invalidated


def live_graphs(device: Any = None) -> int:
    """Captured graphs alive (captured, not reset) on the device: each holds one of its streams."""
    from .device import _index

    return ext()._live_graphs(_index(device))


def _check_stream_budget(call: str, device: Any = None) -> None:
    """The device's stream budget (npu_sim.config.max_streams_per_device): live captured graphs,
    streams made by ``torch.npu.Stream()`` and the default stream. Beyond it the runtime refuses
    the call that needs one more (207008), as CANN does."""
    from .. import capture_rules, config
    from .device import _index
    from .streams import live_streams

    idx = _index(device)
    graphs, streams, budget = live_graphs(idx), live_streams(idx) + 1, config.stream_budget()
    if graphs + streams >= budget:
        raise RuntimeError(capture_rules.NO_STREAM_RESOURCE.format(call=call, device=idx, graphs=graphs,
                                                                   streams=streams, budget=budget))


class graph:
    """`with torch.npu.graph(g, pool=None, stream=None):` captures the block into g."""

    default_capture_stream: Stream | None = None

    def __init__(self, npu_graph: NPUGraph, pool: tuple[int, int] | None = None, stream: Stream | None = None,
                 capture_error_mode: str = "global"):
        if self.__class__.default_capture_stream is None:
            self.__class__.default_capture_stream = Stream()
        self.npu_graph = npu_graph
        self.pool = pool
        self.capture_stream = stream if stream is not None else self.__class__.default_capture_stream
        self.stream_ctx = stream_ctx(self.capture_stream)
        self.capture_error_mode = capture_error_mode

    def __enter__(self):
        torch.npu.synchronize()
        gc.collect()
        torch.npu.empty_cache()
        self.stream_ctx.__enter__()
        self.npu_graph.capture_begin(self.pool, capture_error_mode=self.capture_error_mode)

    def __exit__(self, *exc: Any):
        try:
            self.npu_graph.capture_end()  # raises when the capture was invalidated (capture rules)
        finally:
            self.stream_ctx.__exit__(*exc)
        return False
