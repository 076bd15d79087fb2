"""Entry-point lookups by which components find each other without importing each other."""

from __future__ import annotations

import functools
from importlib import metadata

SIM_LAUNCH_GROUP = "npu_inductor.sim_launch"  # npu-sim: runs a kernel in Triton's interpreter


@functools.cache
def entry(group: str, name: str):
    """The loaded object of entry point ``name`` in ``group``, or None when none is installed."""
    eps = [ep for ep in metadata.entry_points(group=group) if ep.name == name]
    return eps[0].load() if eps else None


def sim_launch():
    """npu-sim's launch entry (``npu_inductor.sim_launch: launch``)."""
    launch = entry(SIM_LAUNCH_GROUP, "launch")
    if launch is None:
        raise RuntimeError(
            f"device 'npu' is simulated but no '{SIM_LAUNCH_GROUP}: launch' entry point is installed"
        )
    return launch
