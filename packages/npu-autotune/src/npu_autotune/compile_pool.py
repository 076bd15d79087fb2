"""npu kernels in upstream's async compile pool (``compile_threads``, ``worker_start_method``).

Upstream's ``AsyncCompile.triton`` loads a kernel module in a compile worker (the
decorators run there), calls ``precompile(warm_cache_only=True)`` and pickles the kernel
object back; the parent then calls ``precompile(reload_kernel=...)``. A worker has none of
this process's state: npu-sim's device facts (the tile generator falls back to 910B),
npu-autotune's settings, the remote caches other components route for npu compiles. On
npu-sim the worker compiles nothing (the interpreter has nothing to build), so the parent
rebuilds the kernel object from its source, as it must anyway to get the Python function
back, and adopts that build: configs and autotune-cache lookups are then this process's.
On Ascend the worker's compiled configs are kept (upstream's behaviour).
"""

from __future__ import annotations

import os
import time

# test hook (never set outside tests; npu_autotune.config.test_compile_faults, an internal key
# whose default is this variable, inherited by compile workers): a directory; a file ``hang`` or ``hang-<kernel name>``
# there makes a compile worker wait while it exists (at most HANG_LIMIT_S; it writes
# ``held-<kernel name>`` when it starts waiting), ``crash`` /
# ``crash-<kernel name>`` makes the worker process exit. Read only in compile workers.
FAULTS_ENV = "NPU_AUTOTUNE_TEST_COMPILE_FAULTS"
HANG_LIMIT_S = 120.0
# state of the parent process only (locks, compile ids) and the worker marker stay
_KEEP = frozenset(
    {"lock", "compile_id", "is_backward", "_reload_kernel", "_plugins", "_npu_compiled_in"}
)


def in_worker(kernel) -> None:
    """``precompile(warm_cache_only=True)``: upstream calls it only in a compile worker."""
    kernel._npu_compiled_in = os.getpid()
    _test_faults(kernel.inductor_meta.get("kernel_name") or "")


def from_worker(kernel) -> bool:
    pid = getattr(kernel, "_npu_compiled_in", None)
    return pid is not None and pid != os.getpid() and not getattr(kernel, "_npu_adopted", False)


def adopt_parent_build(kernel, reload_kernel) -> None:
    """Take the decorators' decisions from a build of the same source in this process."""
    fresh = reload_kernel()
    for name, value in fresh.__dict__.items():
        if name not in _KEEP:
            setattr(kernel, name, list(value) if isinstance(value, list) else value)
    kernel._npu_adopted = True
    # this process's kernel module now hands out this object, as a synchronous compile hands
    # out one object per kernel source: a later load of the source (the final module after
    # autotune_at_compile_time, a recompile) adopts its tuned state instead of tuning again
    module = getattr(getattr(fresh, "fn", None), "__globals__", None)
    if isinstance(module, dict):
        for name, value in list(module.items()):
            if value is fresh:
                module[name] = kernel


def _test_faults(name: str) -> None:
    from . import config

    where = config.test_compile_faults
    if not where:
        return
    if any(os.path.exists(os.path.join(where, f)) for f in ("crash", f"crash-{name}")):
        os._exit(70)
    hangs = [os.path.join(where, f) for f in ("hang", f"hang-{name}")]
    if not any(os.path.exists(p) for p in hangs):
        return
    with open(os.path.join(where, f"held-{name}"), "w"):  # tells the test the hold began
        pass
    deadline = time.monotonic() + HANG_LIMIT_S
    while any(os.path.exists(p) for p in hangs) and time.monotonic() < deadline:
        time.sleep(0.02)
