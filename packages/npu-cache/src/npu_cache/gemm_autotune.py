"""Remote GEMM autotune cache: best GEMM configs shared through the signed local +
Redis cache, queried for shapes this machine never profiled.

Upstream's ``config.remote_gemm_autotune_cache`` (read at every call) switches it; upstream's
own OSS ``gen_best_config`` raises NotImplementedError. Keys: the device fingerprint (SoC,
cube/vector cores: configs tuned on one part do not transfer to another), the op, M/N/K
*buckets*, the three dtypes and both layouts. A bucket is the next power of two (at least 16,
the cube tile), so M=300 and M=500 share the M=512 entry: a config tuned for a neighbouring
shape is a good start, and the exact shape it was tuned on travels with it.

``best_config(key, tune_locally)`` is the query API a GEMM template lowering calls: a hit
returns the stored config without tuning; a miss (or the flag off, or a dead Redis) runs
``tune_locally()`` -> (config, time_us) and publishes the result. A stored entry is only
replaced by a faster one (``publish``), so several machines tuning the same bucket converge
on the best they found (last writer wins between two concurrent faster results).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from . import failed_compile
from .cache import SignedCache
from .counters import Counters

LAYOUTS = ("row", "col")  # row-major (K contiguous for A / N contiguous for B) or transposed
OPS = ("mm", "addmm", "bmm", "baddbmm", "int_mm")


def bucket(size: int) -> int:
    """The M/N/K bucket of ``size``: the next power of two, at least 16."""
    if not isinstance(size, int) or isinstance(size, bool) or size <= 0:
        raise ValueError(f"GEMM size must be a positive int, got {size!r}")
    return max(16, 1 << (size - 1).bit_length())


@dataclass(frozen=True)
class GemmKey:
    device: str  # device fingerprint, e.g. from device_fingerprint()
    m: int
    n: int
    k: int
    dtype_a: str  # torch dtype names without "torch.", e.g. "float16"
    dtype_b: str
    dtype_out: str
    layout_a: str = "row"
    layout_b: str = "row"
    op: str = "mm"
    batch: int = 1

    def __post_init__(self) -> None:
        if not self.device:
            raise ValueError(
                "GemmKey.device: a device fingerprint is required (device_fingerprint())"
            )
        for name in ("layout_a", "layout_b"):
            if getattr(self, name) not in LAYOUTS:
                raise ValueError(f"GemmKey.{name}={getattr(self, name)!r}: one of {LAYOUTS}")
        if self.op not in OPS:
            raise ValueError(f"GemmKey.op={self.op!r}: one of {OPS}")
        for name in ("dtype_a", "dtype_b", "dtype_out"):
            value = getattr(self, name)
            if not isinstance(value, str) or value.startswith("torch.") or not value:
                raise ValueError(f"GemmKey.{name}={value!r}: a dtype name such as 'float16'")
        for name in ("m", "n", "k", "batch"):
            bucket(getattr(self, name))  # validates

    def cache_key(self) -> str:
        """Bucketed: every shape in the same buckets maps to one entry."""
        fields = asdict(self)
        for name in ("m", "n", "k", "batch"):
            fields[name] = bucket(fields[name])
        return "gemm/v1/" + json.dumps(fields, sort_keys=True, separators=(",", ":"))


def device_fingerprint() -> str:
    """SoC name and core counts of the current npu (device module must be up)."""
    import torch
    from npu_inductor_core.device import device

    facts = device(torch.npu.current_device())
    return f"{facts.soc}/cube{facts.cube_cores}/vector{facts.vector_cores}"


def _enabled() -> bool:
    from torch._inductor import config

    return bool(config.remote_gemm_autotune_cache)


class GemmAutotuneCache:
    def __init__(self, cache: SignedCache | None = None):
        self.cache = cache or SignedCache("gemm-autotune")
        self.counters = Counters()

    def query(self, key: GemmKey) -> dict | None:
        """The stored entry {"config", "time_us", "tuned_shape"} for ``key``'s buckets, or None."""
        if not _enabled():
            self.counters.add("flag_off")
            return None
        payload = self.cache.get(key.cache_key())
        if payload is None:
            self.counters.add("miss")
            return None
        self.counters.add("hit")
        return json.loads(payload)

    def publish(self, key: GemmKey, config: Mapping[str, Any], time_us: float) -> bool:
        """Store ``config`` unless the entry already holds a faster one. True when written."""
        if not _enabled():
            self.counters.add("flag_off")
            return False
        if not (isinstance(time_us, (int, float)) and time_us > 0):
            raise ValueError(f"time_us must be a positive number, got {time_us!r}")
        current = self.cache.get(key.cache_key())
        if current is not None and json.loads(current)["time_us"] <= time_us:
            self.counters.add("kept_faster")
            return False
        entry = {
            "config": dict(config),
            "time_us": float(time_us),
            "tuned_shape": [key.batch, key.m, key.n, key.k],
        }
        payload = json.dumps(entry, sort_keys=True).encode()

        def write():
            self.cache.put(key.cache_key(), payload)
            self.counters.add("published")

        # shared once the graph compiles: a failed compile's measurements are not shared
        failed_compile.defer(write)
        return True

    def best_config(
        self, key: GemmKey, tune_locally: Callable[[], tuple[Mapping[str, Any], float]]
    ) -> dict:
        """A shared best config for ``key``; on a miss, tune locally and share the result."""
        found = self.query(key)
        if found is not None:
            return found["config"]
        self.counters.add("tuned_locally")
        config, time_us = tune_locally()
        self.publish(key, config, time_us)
        return dict(config)

    def stats(self) -> dict:
        return {**self.counters.snapshot(), "cache": self.cache.stats()}


_lock = threading.Lock()
_default: GemmAutotuneCache | None = None


def current() -> GemmAutotuneCache | None:
    """The process's GEMM autotune cache if something opened it (stats must not open it)."""
    return _default


def open_gemm_autotune_cache() -> GemmAutotuneCache:
    """The process's GEMM autotune cache (entry point ``npu_inductor.caches: gemm_autotune``)."""
    global _default
    with _lock:
        if _default is None:
            _default = GemmAutotuneCache()
        return _default
