"""The device's stream budget (npu_sim.config.max_streams_per_device, CANN's 2048): live captured
graphs (each holds a stream), streams made by ``torch.npu.Stream()`` and the default stream.
Beyond it the runtime refuses the call that needs one more (207008), as CANN does."""

from __future__ import annotations

import weakref
from typing import Any

from .._runtime import ext

_streams: "dict[int, weakref.WeakSet]" = {}  # streams made by Stream() per device


def add_stream(device: int, stream) -> None:
    _streams.setdefault(device, weakref.WeakSet()).add(stream)


def live_streams(device: int) -> int:
    return len(_streams.get(device, ()))


def live_graphs(device: Any = None) -> int:
    """Captured graphs alive (captured, not reset) on the device."""
    from .device import _index

    return ext()._live_graphs(_index(device))


def check(call: str, device: Any = None) -> None:
    """Raise the runtime's 207008 when the device has no stream left for ``call``."""
    from .. import capture_rules, config
    from .device import _index

    idx = _index(device)
    graphs, streams, budget = live_graphs(idx), live_streams(idx) + 1, config.stream_budget()
    if graphs + streams >= budget:
        raise RuntimeError(
            capture_rules.NO_STREAM_RESOURCE.format(
                call=call, device=idx, graphs=graphs, streams=streams, budget=budget
            )
        )
