"""npu's joint-graph passes as one entry of Inductor's ``joint_custom_post_pass`` (set per npu
compile by ``graph_hooks``): a ``CustomGraphPass``, so its uuid enters the graph cache keys."""

from __future__ import annotations

from typing import Callable

from torch._inductor.custom_graph_pass import CustomGraphPass


class NpuJointPasses(CustomGraphPass):
    def __init__(self, passes: dict[str, tuple[Callable, Callable[[], str]]]) -> None:
        self._passes = passes  # owner -> (fn(graph), cache_key())

    def __call__(self, graph) -> None:
        for fn, _ in self._passes.values():
            fn(graph)

    def uuid(self) -> str:
        return "npu-joint:" + ",".join(
            f"{owner}={key()}" for owner, (_, key) in sorted(self._passes.items())
        )
