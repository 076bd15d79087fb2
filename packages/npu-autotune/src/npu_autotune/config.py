"""npu-autotune's own settings (upstream Inductor flags keep their meaning; these only add
what upstream has no flag for). A bad value is rejected when it is set, naming the range.

    import npu_autotune.config as c
    c.autotune_on_sim = True      # benchmark configs of every kernel on npu-sim
"""

from __future__ import annotations

import os
import sys
import types


def _env_bool(name: str, default: bool | None) -> bool | None:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value not in ("0", "1"):
        raise ValueError(f"${name} must be 0 or 1, got {value!r}")
    return value == "1"


def _env_seconds(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise ValueError(f"${name} must be a number of seconds >= 0, got {value!r}")
    return seconds


# name -> (check, description of the allowed values)
_RULES = {
    # npu-sim interprets kernels on the CPU: their timings say little about an NPU, so by
    # default only kernels whose tuning was asked for (max_autotune, max_autotune_pointwise,
    # coordinate_descent_tuning, incremental_autotune) are benchmarked there; True benchmarks
    # every kernel with more than one config, as on hardware
    "autotune_on_sim": (lambda v: isinstance(v, bool), "True or False"),
    # multibuffer (double-buffering) variants of each config: None = only where kernels
    # compile for Ascend, True/False = always/never
    "multibuffer": (lambda v: v is None or isinstance(v, bool), "None, True or False"),
    # a compile error that reports a UB overflow drops the config (and logs it); False raises
    "drop_ub_overflow": (lambda v: isinstance(v, bool), "True or False"),
    # Y03: report npu kernel compiles still pending after this many seconds, every as many
    # seconds (0 = off); upstream's flag of the same name wins where torch has it
    "compile_worker_watchdog_interval_seconds": (
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0, "a number >= 0 (0 = off)"),
}

autotune_on_sim: bool = bool(_env_bool("NPU_AUTOTUNE_ON_SIM", False))
multibuffer: bool | None = _env_bool("NPU_AUTOTUNE_MULTIBUFFER", None)
drop_ub_overflow: bool = True
compile_worker_watchdog_interval_seconds: float = _env_seconds("NPU_AUTOTUNE_COMPILE_WORKER_WATCHDOG_INTERVAL_SECONDS", 60.0)


def check(name: str, value) -> None:
    if name not in _RULES:
        raise AttributeError(f"npu_autotune.config has no setting {name!r}; settings: {', '.join(sorted(_RULES))}")
    ok, allowed = _RULES[name]
    if not ok(value):
        raise ValueError(f"npu_autotune.config.{name} must be {allowed}, got {value!r}")


class _ConfigModule(types.ModuleType):
    def __setattr__(self, name, value):
        if not name.startswith("_"):
            check(name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _ConfigModule


def validate_inductor_meta(meta: dict) -> None:
    """Upstream knobs that reach the npu autotuner through ``inductor_meta``: a value outside
    its range is an error naming it, not a silent fallback."""
    radius = meta.get("coordinate_descent_search_radius", 1)
    if meta.get("coordinate_descent_tuning") and (not isinstance(radius, int) or radius < 1):
        raise ValueError(f"coordinate_descent_search_radius must be an int >= 1, got {radius!r}")


def validate_bench_settings(warmup, rep) -> None:
    if not isinstance(warmup, (int, float)) or warmup < 0:
        raise ValueError(f"inductor_default_autotune_warmup must be >= 0 (milliseconds), got {warmup!r}")
    if not isinstance(rep, (int, float)) or rep <= 0:
        raise ValueError(f"inductor_default_autotune_rep must be > 0 (milliseconds), got {rep!r}")
