"""Preferring the fusions that remove a GM round trip (README, "Preference").

Upstream's ``score_fusion`` counts a buffer node1 writes and node2 reads once in its memory
score, the same as an input both nodes merely read. Fused, such a buffer is neither stored to
nor loaded from GM when nothing else uses it: the fusion saves its bytes twice (and, on
Ascend, a host launch). When fusions conflict (the UB rule admits one but not both, or one
would create a cycle), upstream can take the shared-read fusion and leave the round trip. For
npu pairs the score puts GM bytes saved, round trips counted twice, before upstream's order;
every other pair is ordered by upstream's score alone.
"""

from __future__ import annotations

import functools


@functools.total_ordering
class NpuFusionScore:
    """Upstream's score plus the GM bytes an npu fusion removes (``saved``, None: not npu)."""

    __slots__ = ("upstream", "saved")

    def __init__(self, upstream, saved: int | None):
        self.upstream = upstream
        self.saved = saved

    def _key(self, other: "NpuFusionScore"):
        if self.saved is None or other.saved is None:
            return None
        return (self.upstream.template_score, self.saved), (
            other.upstream.template_score,
            other.saved,
        )

    def __lt__(self, other) -> bool:
        if not isinstance(other, NpuFusionScore):
            return self.upstream < other
        keys = self._key(other)
        if keys is not None and keys[0] != keys[1]:
            return keys[0] < keys[1]
        return self.upstream < other.upstream

    def __eq__(self, other) -> bool:
        if not isinstance(other, NpuFusionScore):
            return self.upstream == other
        keys = self._key(other)
        return (keys is None or keys[0] == keys[1]) and self.upstream == other.upstream

    def __repr__(self) -> str:
        return f"NpuFusionScore(saved={self.saved}, upstream={self.upstream!r})"


def round_trip_bytes(scheduler, node1, node2) -> int:
    """Bytes of the buffers one node writes and the other reads that the fused kernel no
    longer stores nor loads: every user is in the pair and the graph does not return it."""
    from torch._inductor.dependencies import WeakDep
    from torch._inductor.virtualized import V

    fused = set(node1.get_operation_names()) | set(node2.get_operation_names())
    outputs = set(V.graph.get_output_names())
    total = 0
    for producer, consumer in ((node1, node2), (node2, node1)):
        written = {dep.name: dep for dep in producer.read_writes.writes}
        for dep in consumer.read_writes.reads:
            if isinstance(dep, WeakDep) or dep.name not in written or dep.name in outputs:
                continue
            buf = scheduler.name_to_buf.get(dep.name)
            users = getattr(buf, "users", None)
            if users is None or any(u.get_name() not in fused for u in users):
                continue
            total += scheduler.dep_size_hint(written[dep.name])
    return total


def saved_bytes(scheduler, node1, node2, upstream) -> int:
    """GM bytes the fusion saves: upstream's memory score (each shared buffer once) plus the
    removed round trips' bytes again (their store)."""
    return int(getattr(upstream, "memory_score", 0)) + round_trip_bytes(scheduler, node1, node2)
