"""The loaded C++ device module, shared by the Python pieces (set once by npu_sim.start())."""

from __future__ import annotations

_C = None


def ext():
    if _C is None:
        raise RuntimeError(
            "npu-sim is not started: call npu_sim.start() (or npu_inductor.enable())"
        )
    return _C
