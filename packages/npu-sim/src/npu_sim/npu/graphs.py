"""Graph capture and replay (torch_npu's NPUGraph API).

Capture records device work instead of running it (csrc/capture.cpp). Memory allocated
during capture comes from the graph's private pool and is poisoned until replay writes it.
"""

from __future__ import annotations

import gc
from typing import Any

import torch

from .._runtime import ext
from . import budget
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

    def capture_begin(
        self, pool: tuple[int, int] | None = None, capture_error_mode: str = "global"
    ) -> None:
        if capture_error_mode not in ("global", "thread_local", "relaxed"):
            raise ValueError(
                f"capture_error_mode must be global, thread_local or relaxed, got {capture_error_mode!r}"
            )
        from .. import capture_rules

        rules = capture_rules.rules_on()
        if rules:
            budget.check("aclmdlRICaptureBegin")
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


class graph:
    """`with torch.npu.graph(g, pool=None, stream=None):` captures the block into g."""

    default_capture_stream: Stream | None = None

    def __init__(
        self,
        npu_graph: NPUGraph,
        pool: tuple[int, int] | None = None,
        stream: Stream | None = None,
        capture_error_mode: str = "global",
    ):
        if self.__class__.default_capture_stream is None:
            self.__class__.default_capture_stream = Stream()
        self.npu_graph = npu_graph
        self.pool = pool
        self.capture_stream = (
            stream if stream is not None else self.__class__.default_capture_stream
        )
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
