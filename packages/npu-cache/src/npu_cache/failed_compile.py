"""A compile that fails leaves nothing behind that steers the next one into the same failure.

A compile records what it measured as it goes: upstream's autotune timings of GEMM choices
(``PersistentCache``'s file in the Inductor cache dir), the best config of each autotuned
kernel (``*.best_config`` beside the kernel), and, with ``remote_gemm_autotune_cache`` on, the
shared GEMM configs this package publishes. When the compile then fails (after benchmarking,
in scheduling or codegen), none of it belongs to a compile that worked, and all of it is
read back by the next one: the same choices, the same path, the same failure, on every rerun
(the demo crash of a fresh machine was sticky this way). So each npu graph compile is a
transaction (a per-graph context, npu-inductor-core's ``compile_hooks``; no patch):

- the shared GEMM configs it would publish wait for the graph to compile, and are dropped
  with it (``defer``);
- on failure, the timings it added to upstream's local autotune file are taken out again
  (entries other compiles wrote meanwhile stay), and the ``*.best_config`` files written in the
  cache dir since it started are removed. The failure itself propagates unchanged.

Graphs without npu devices are left alone (cpu and cuda compiles are upstream's).
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import time
from pathlib import Path
from typing import Callable

log = logging.getLogger(__name__)

# the shared-cache writes of the graph compile running in this context (None: no transaction)
_deferred: contextvars.ContextVar[list[Callable[[], object]] | None] = contextvars.ContextVar(
    "npu_cache_deferred_writes", default=None
)
FILE_SUFFIXES = (".best_config",)


def defer(write: Callable[[], object]) -> bool:
    """Run ``write`` when the graph compile in progress succeeds; now when none is. True when
    deferred."""
    pending = _deferred.get()
    if pending is None:
        write()
        return False
    pending.append(write)
    return True


def graph_context(gm, example_inputs):
    """Per graph (``compile_hooks.around_compile_graph``): a transaction for npu graphs."""
    from npu_inductor_core.compile_hooks import graph_on_npu

    return transaction() if graph_on_npu(gm) else None


@contextlib.contextmanager
def transaction():
    started = time.time()
    before = _timing_keys()
    pending: list[Callable[[], object]] = []
    token = _deferred.set(pending)
    try:
        yield
    except BaseException:
        _deferred.reset(token)
        forgot = _forget_timings(before)
        removed = _remove_files_since(started)
        log.warning(
            "npu compile failed: dropped what it cached (%d autotune timings, %d best-config files, "
            "%d shared GEMM configs) so that the next compile measures again",
            forgot,
            removed,
            len(pending),
        )
        raise
    _deferred.reset(token)
    for write in pending:
        defer(write)  # to an enclosing transaction, if any; else now


def _timings_path() -> Path:
    from torch._inductor.codecache import CacheBase

    return Path(CacheBase.get_local_cache_path())


def _leaves(tree, prefix=()):
    """Key paths of upstream's timing file: op -> inputs -> precision -> choice -> ms."""
    if not isinstance(tree, dict) or len(prefix) == 4:
        yield prefix
        return
    for key, sub in tree.items():
        yield from _leaves(sub, (*prefix, key))


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _timing_keys() -> set[tuple]:
    data = _read(_timings_path())
    return set(_leaves(data.get("cache", {}))) if isinstance(data, dict) else set()


def _forget_timings(before: set[tuple]) -> int:
    """Take the timings added since ``before`` out of upstream's local autotune file."""
    from torch._inductor.codecache import write_atomic

    path = _timings_path()
    data = _read(path)
    if not isinstance(data, dict) or not isinstance(data.get("cache"), dict):
        return 0
    added = [keys for keys in _leaves(data["cache"]) if keys not in before]
    for keys in added:
        path_nodes = [data["cache"]]
        for key in keys[:-1]:
            path_nodes.append(path_nodes[-1][key])
        path_nodes[-1].pop(keys[-1], None)
        for parent, key, node in zip(
            reversed(path_nodes[:-1]), reversed(keys[:-1]), reversed(path_nodes[1:])
        ):
            if not node:  # an emptied level goes too
                parent.pop(key, None)
    if added:
        write_atomic(str(path), json.dumps(data, indent=4), make_dirs=True)
    return len(added)


def _remove_files_since(started: float) -> int:
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    removed = 0
    for root, _dirs, files in os.walk(cache_dir()):
        for name in files:
            if not name.endswith(FILE_SUFFIXES):
                continue
            path = os.path.join(root, name)
            try:
                if os.stat(path).st_mtime >= started:
                    os.unlink(path)
                    removed += 1
            except OSError:
                pass  # gone already
    return removed
