"""Caching-allocator statistics and control (torch_npu's names)."""

from __future__ import annotations

from typing import Any

from .._runtime import ext
from .device import _index


def memory_stats(device: Any = None) -> dict[str, int]:
    return dict(ext()._memory_stats(_index(device)))


def memory_allocated(device: Any = None) -> int:
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device: Any = None) -> int:
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device: Any = None) -> int:
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device: Any = None) -> int:
    return memory_stats(device)["reserved_bytes.all.peak"]


memory_cached = memory_reserved
max_memory_cached = max_memory_reserved


def reset_peak_memory_stats(device: Any = None) -> None:
    ext()._reset_peak_memory_stats(_index(device))


reset_max_memory_allocated = reset_peak_memory_stats


def empty_cache() -> None:
    """Return cached blocks of the default pools to the system (private pools keep theirs)."""
    ext()._empty_cache()


def mem_get_info(device: Any = None) -> tuple[int, int]:
    from .device import get_device_properties

    total = get_device_properties(device).total_memory
    return total - memory_reserved(device), total
