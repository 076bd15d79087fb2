"""Triton's JIT post-compile hook for npu kernels on npu-sim.

Upstream calls ``triton.knobs.runtime.jit_post_compile_hook`` under
``run_jit_post_compile_hook`` right after ``triton.compile`` in ``_precompile_config``; on
Ascend that path runs unchanged. On npu-sim nothing goes through ``triton.compile`` (the
interpreter runs the Python function), so the hook would never fire: here it fires once per
config when the kernel object makes that config launchable in this process, with upstream's
arguments (``compile`` is the simulated compile result, which has no binary).
"""

from __future__ import annotations

import inspect
import logging

from torch._inductor.runtime.runtime_utils import triton_config_to_hashable

log = logging.getLogger(__name__)


def _hook():
    from torch._inductor import config

    if not config.run_jit_post_compile_hook:
        return None
    try:
        from triton import knobs
    except ImportError:
        return None
    return getattr(knobs.runtime, "jit_post_compile_hook", None)


def fire(kernel, configs, compiled) -> None:
    """``compiled(cfg)``: the compile result handed to the hook for ``cfg``."""
    hook = _hook()
    if hook is None:
        return
    seen = kernel.__dict__.setdefault("_npu_post_compiled", set())
    for cfg in configs:
        key = triton_config_to_hashable(cfg)
        if key in seen:
            continue
        seen.add(key)
        fn = kernel.fn
        kwargs = dict(
            key=getattr(fn, "cache_key", None) or getattr(kernel, "kernel_hash", None) or str(fn),
            repr=getattr(fn, "src", None),
            fn=fn,
            compile=compiled(cfg),
            is_manual_warmup=False,
            already_compiled=True,
        )
        try:
            if (
                "inductor_args" in inspect.signature(hook).parameters
                and "config_args" in kernel.inductor_meta
            ):
                kwargs["inductor_args"] = kernel.inductor_meta["config_args"]
            hook(**kwargs)
        except Exception:  # upstream's rule: a failing hook is logged, the compile goes on
            log.exception("jit_post_compile_hook failed")
