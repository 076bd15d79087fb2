"""One precompilation budget for all candidate configs of an npu kernel.

Upstream applies ``precompilation_timeout_seconds`` to template choices in
``select_algorithm`` only; an npu kernel's candidate configs are compiled one after the other
with no limit. Here they compile concurrently (threads: compiles release the GIL in the
compiler, and on npu-sim each "compile" is cheap) under one deadline for all of them: configs
not compiled by then are cancelled (queued ones never start, running ones are abandoned and
their results discarded) and dropped, logged; the kernel goes on with those that compiled.
No config compiled in time is an error naming the kernel and the timeout. ``None`` or a value
<= 0 means no timeout (upstream's rule).
"""

from __future__ import annotations

import contextvars
import logging
from concurrent.futures import ThreadPoolExecutor, wait

from torch._dynamo.utils import counters

from . import kernel_facts

log = logging.getLogger(__name__)
MAX_THREADS = 8


def timeout_s() -> float | None:
    from torch._inductor import config

    value = config.precompilation_timeout_seconds
    return None if value is None or value <= 0 else float(value)


def _dropped_error(exc: BaseException) -> bool:
    """What upstream's ``_precompile_worker`` drops instead of raising."""
    from triton.runtime.errors import OutOfResources

    return isinstance(exc, OutOfResources)


def _concurrent_parse_error(exc: BaseException) -> bool:
    """CPython's AST builder (3.11, 3.12) keeps one recursion counter for the interpreter: two
    threads parsing at once (Triton's front end, one thread per config here) can fail one parse
    with this SystemError (cpython gh-106905); the same compile alone succeeds."""
    return isinstance(exc, SystemError) and "AST constructor recursion depth mismatch" in str(exc)


def compile_all(kernel, configs: list) -> list:
    """Compile results of ``configs`` (in their order) that finished within the budget."""
    timeout = timeout_s()
    if timeout is None or len(configs) < 2:
        results = []
        for cfg in configs:
            try:
                results.append(kernel._precompile_config(cfg))
            except Exception as exc:
                if not _dropped_error(exc):
                    raise
        return _some(kernel, results, configs, timeout)
    pool = ThreadPoolExecutor(
        max_workers=min(len(configs), MAX_THREADS), thread_name_prefix="npu-precompile"
    )
    # torch >= 2.13 keeps config values in ContextVars: a pool thread would compile with the
    # defaults, not the caller's settings (use_static_triton_launcher, ...); each compile
    # runs in its own copy of the caller's context
    futures = [
        pool.submit(contextvars.copy_context().run, kernel._precompile_config, cfg)
        for cfg in configs
    ]
    try:
        done, _ = wait(futures, timeout=timeout)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    name = kernel_facts.kernel_name(kernel)
    results = []
    for cfg, future in zip(configs, futures):
        if future not in done:
            future.cancel()
            counters["npu_autotune"]["precompile_timed_out"] += 1
            log.warning(
                "npu kernel %s: config %s not compiled within precompilation_timeout_seconds=%s: "
                "cancelled and dropped",
                name,
                cfg,
                timeout,
            )
            continue
        exc = future.exception()
        if exc is not None and _concurrent_parse_error(exc):
            # compiled again here, after the others: no parse runs beside it
            counters["npu_autotune"]["precompile_parse_retried"] += 1
            try:
                results.append(kernel._precompile_config(cfg))
                continue
            except Exception as again:
                exc = again
        if exc is None:
            results.append(future.result())
        elif not _dropped_error(exc):
            raise exc
    return _some(kernel, results, configs, timeout)


def _some(kernel, results: list, configs: list, timeout) -> list:
    if not results:
        from torch._inductor.runtime.triton_heuristics import NoTritonConfigsError

        raise NoTritonConfigsError(
            f"npu kernel {kernel_facts.kernel_name(kernel)}: none of {len(configs)} configs compiled "
            f"(precompilation_timeout_seconds={timeout})"
        )
    return results
