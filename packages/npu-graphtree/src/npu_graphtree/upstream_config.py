"""What the tree reads from upstream's Inductor configuration (ours: ``config.py``).

Upstream names first: where the running torch has the Inductor flag
(``triton.cudagraph_trees``, ``triton.cudagraph_capture_sizes``,
``triton.cudagraph_unexpected_rerecord_limit``, ``triton.skip_cudagraph_warmup``,
``triton.force_cudagraphs_warmup``) it is used, so ``torch._inductor.config.patch`` steers our
trees as it steers upstream's. A read through ``_config_module.__getattr__`` costs ~1.3 us;
ours read the entry directly (``_compat.fast_config_reader``, ~0.1 us), and ``snapshot()``
reads the five values once per generation per thread
(2.13's overrides are context-local), and again after every warmup and record and after
``reset_trees()`` (``refresh``): a change is honoured by the first call after the next
generation begins (``mark_step_begin()``, a new torch.compile invocation), warmup or record. Rows torch has no flag for
(generation cloning, replay timings, slow asserts) are ours, in ``npu_graphtree.config`` (a
torch config module), read when used.
"""

from __future__ import annotations

import functools
import threading

from . import _compat

_UNSET = object()


@functools.cache
def _inductor_config():
    try:
        from torch._inductor import config as inductor_config
    except Exception:  # torch without Inductor: our defaults apply
        return None
    return inductor_config


@functools.cache
def _reader(name: str, default):
    """A cheap reader of ``triton.<name>`` (``_compat.fast_config_reader``), made once."""
    module = _inductor_config()
    if module is None:
        return lambda: default
    return _compat.fast_config_reader(module, "triton." + name, default)


def _upstream(name: str, default):
    return _reader(name, default)()


def trees_enabled() -> bool:
    return bool(_upstream("cudagraph_trees", True))


def capture_sizes():
    """None (capture every size) or the allowlist of dynamic int keys."""
    return _upstream("cudagraph_capture_sizes", None)


def rerecord_limit() -> int:
    return int(_upstream("cudagraph_unexpected_rerecord_limit", 128))


def skip_warmup() -> bool:
    return bool(_upstream("skip_cudagraph_warmup", False))


def force_warmup() -> bool:
    return bool(_upstream("force_cudagraphs_warmup", False))


@functools.cache
def _readers() -> tuple:
    return (
        _reader("cudagraph_trees", True),
        _reader("cudagraph_capture_sizes", None),
        _reader("cudagraph_unexpected_rerecord_limit", 128),
        _reader("skip_cudagraph_warmup", False),
        _reader("force_cudagraphs_warmup", False),
    )


class Snapshot:
    """Upstream values for one generation of one thread (five direct reads, ~1 us)."""

    __slots__ = ("generation", "trees", "sizes", "rerecord_limit", "skip_warmup", "force_warmup")

    def __init__(self, generation: int):
        trees, sizes, limit, skip, force = _readers()
        self.generation = generation
        self.trees = bool(trees())
        self.sizes = sizes()
        self.rerecord_limit = int(limit())
        self.skip_warmup = bool(skip())
        self.force_warmup = bool(force())


_snap = threading.local()


def snapshot() -> Snapshot:
    """This thread's values for the current generation (see the module docstring)."""
    gen = _compat.current_generation()
    snap = getattr(_snap, "value", None)
    if snap is None or snap.generation != gen:
        snap = _snap.value = Snapshot(gen)
    return snap


def refresh() -> None:
    """Forget this thread's values (each warmup and record, ``reset_trees()``): the next
    ``snapshot()`` reads upstream again."""
    _snap.value = None
