"""Per-run device timings of a callable: the one timer npu-autotune's benchmarker and its
collective benchmark share (its own module so that neither imports the other)."""

from __future__ import annotations

import time

DEVICE = "npu"


def device_interface():
    from torch._dynamo.device_interface import get_interface_for_device

    return get_interface_for_device(DEVICE)


class DeviceTimer:
    """Per-run timings in ms: device event pairs when the device has timing events."""

    def __init__(self):
        self.iface = device_interface()
        event = getattr(self.iface, "Event", None)
        try:
            event(enable_timing=True)
            self.event = event
        except Exception:
            self.event = None

    def run(self, fn, n: int, before=None) -> list[float]:
        if self.event is not None:
            pairs = [
                (self.event(enable_timing=True), self.event(enable_timing=True)) for _ in range(n)
            ]
            for start, end in pairs:
                if before is not None:
                    before()
                start.record()
                fn()
                end.record()
            self.iface.synchronize()
            return [s.elapsed_time(e) for s, e in pairs]
        out = []
        for _ in range(n):
            if before is not None:
                before()
            self.iface.synchronize()
            t0 = time.perf_counter()
            fn()
            self.iface.synchronize()
            out.append((time.perf_counter() - t0) * 1000.0)
        return out
