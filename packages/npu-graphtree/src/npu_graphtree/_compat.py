"""Everything that differs between the torch versions we support (2.13, 2.14, 2.15), and the
only place that may patch an upstream symbol (none today: torch 2.13's
``config.cudagraph_policy`` hook, pytorch#180163, replaced torch 2.11's ``post_compile`` patch).
"""

from __future__ import annotations

import contextvars
import functools
import logging
import threading

import torch

log = logging.getLogger("npu_graphtree")


def has_cudagraph_policy() -> bool:
    """torch 2.13: ``torch._inductor.config.cudagraph_policy`` and ``CUDAGraphPolicy``."""
    try:
        from torch._inductor import config
        from torch._inductor.cudagraph_utils import CUDAGraphPolicy  # noqa: F401
    except ImportError:
        return False
    return hasattr(config, "cudagraph_policy")


@functools.cache
def external_stream_setter():
    """Dynamo's external-object registry setter for the current stream (torch 2.13 and 2.11
    have ``torch._dynamo.graph_bytecode_inputs``); None where torch has no registry."""
    try:
        from torch._dynamo.graph_bytecode_inputs import (
            CURRENT_STREAM_INDEX,
            set_external_object_by_index,
        )
    except ImportError:
        return None
    return functools.partial(set_external_object_by_index, CURRENT_STREAM_INDEX)


def recording_callbacks(compile_id):
    """Dynamo's compile callbacks for a recording: ``CallbackTrigger.CUDAGRAPH_RECORDING``
    in 2.11 and 2.13 (there is no device-neutral trigger; the npu recording reuses it)."""
    import contextlib

    try:
        from torch._dynamo.callback import CallbackTrigger, callback_handler
    except ImportError:
        return contextlib.nullcontext()
    return callback_handler.install_callbacks(CallbackTrigger.CUDAGRAPH_RECORDING, str(compile_id))


def current_generation() -> int:
    """Upstream's notion of a step: a user ``torch.compiler.cudagraph_mark_step_begin()``
    (shared, so one call steps upstream's trees and ours) else Dynamo's per-invocation
    generation counter. Called on every replay: two cached class lookups, no import."""
    box = _mark_step_box()
    if box is not None and box.mark_step_counter != 0:
        return box.mark_step_counter
    return _generation_tracker().generation


@functools.cache
def _generation_tracker():
    from torch._dynamo.mutation_guard import GenerationTracker

    return GenerationTracker


def user_marked_step() -> bool:
    box = _mark_step_box()
    return box is not None and box.mark_step_counter != 0


@functools.cache
def _mark_step_box():
    try:
        from torch._inductor.cudagraph_trees import MarkStepBox
    except ImportError:
        return None
    return MarkStepBox


def mark_step_begin() -> None:
    upstream = _upstream_mark_step()
    if upstream is not None:
        upstream()


@functools.cache
def _upstream_mark_step():
    if _mark_step_box() is None:
        return None
    from torch._inductor.cudagraph_trees import mark_step_begin

    return mark_step_begin


def reset_mark_step() -> None:
    """As upstream's ``reset_cudagraph_trees``: steps count from Dynamo's generation again."""
    box = _mark_step_box()
    if box is not None:
        box.mark_step_counter = 0


@functools.cache
def dynamo_timed_usable() -> bool:
    """Our timings also go through torch._dynamo.utils.dynamo_timed (pt2 compile events) on
    torch 2.13; on torch 2.11 (H200 machine, 2026-12-02) calling it from a graph-tree warmup
    outside a compile crashed the process, so there our own Timing records stand alone."""
    major, minor = (int(p) for p in torch.__version__.split(".")[:2])
    return (major, minor) >= (2, 13)


_stash_keepalive = threading.local()


def stash_in_tls(key: str, obj) -> None:
    """Put ``obj`` in torch's ThreadLocalState (autograd copies it into its worker threads).
    torch 2.11 (H200, 2026-12-02) keeps no strong reference to a stashed object: with only the
    stash holding it, it was freed and its memory reused (a new tree manager every call, never
    a replay). So this thread keeps one too; harmless where torch does (2.13)."""
    torch._C._stash_obj_in_tls(key, obj)
    setattr(_stash_keepalive, key, obj)


def fast_config_reader(config_module, key: str, default):
    """A zero-argument reader of Inductor config ``key`` (e.g. ``"triton.cudagraph_trees"``)
    that costs ~0.1 us instead of ``ConfigModule.__getattr__``'s ~1.3 us; the tree reads five
    such values per generation. It reads the entry's user override (a ContextVar in 2.13, so
    ``config.patch`` in this context is seen; a plain attribute in older torch) and falls back
    to the entry's default, exactly what ``__getattr__`` does for an entry without alias, forced
    env value, justknob or deprecation. Entries with any of those, a hidden entry (mid
    ``mock.patch``), or a torch whose config module looks different, use ``getattr``.
    Upstream hook that would remove it: none (a cheap read of a config value; 2.11 and 2.13)."""

    def slow():
        value = config_module
        try:
            for part in key.split("."):
                value = getattr(value, part)
        except AttributeError:
            return default
        return value

    def fallback_to(why: str):
        slow.fast, slow.why = False, why
        return slow

    try:
        from torch.utils._config_module import _UNSET_SENTINEL

        entry = config_module._config[key]
        plain = (
            hasattr(entry, "hide")
            and getattr(entry, "alias", None) is None
            and getattr(entry, "justknob", None) is None
            and getattr(entry, "env_value_force", _UNSET_SENTINEL) is _UNSET_SENTINEL
            and not getattr(entry, "deprecated", False)
            and not getattr(entry, "implies", None)
            and key
            not in (getattr(config_module, "_implications", None) or {})  # values set by others
            and isinstance(entry.default, _IMMUTABLE)
        )
    except (ImportError, AttributeError, KeyError, TypeError) as e:
        return fallback_to(f"{type(e).__name__}: {e}")
    if not plain:
        return fallback_to(
            "entry has alias/justknob/forced env/deprecation/implication or a mutable default"
        )
    env_default = getattr(entry, "env_value_default", _UNSET_SENTINEL)
    fallback = env_default if env_default is not _UNSET_SENTINEL else entry.default
    override = entry.user_override
    if isinstance(override, contextvars.ContextVar):
        get = override.get

        def read():
            if entry.hide:
                return slow()
            value = get()
            return fallback if value is _UNSET_SENTINEL else value
    else:

        def read():
            if entry.hide:
                return slow()
            value = entry.user_override
            return fallback if value is _UNSET_SENTINEL else value

    try:
        same = read() == slow()
    except Exception:  # noqa: BLE001 - any surprise: the plain read
        same = False
    if not same:
        return fallback_to("direct read disagreed with getattr")
    read.fast, read.why = True, ""
    return read


_IMMUTABLE = (int, float, bool, type(None), str, tuple)  # as the config module's own list
