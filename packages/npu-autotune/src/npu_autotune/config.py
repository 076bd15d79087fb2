"""npu-autotune's own settings (upstream Inductor flags keep their meaning; these only add
what upstream has no flag for): a torch config module (``install_config_module``). A bad value
is rejected when it is set (``patch()`` too), naming the range; the user settings'
defaults come from ``NPU_AUTOTUNE_ON_SIM`` / ``NPU_AUTOTUNE_MULTIBUFFER``, read when this module
is first imported (a bad one raises then); the GEMM and watchdog keys are set here only.

    import npu_autotune.config as c
    c.autotune_on_sim = True      # benchmark configs of every kernel on npu-sim
    with c.patch(multibuffer=False): ...

None of these changes generated code: they steer the autotuner when a kernel is loaded and
run, in the process that runs it (after the FX graph cache), so they are not in the FX graph
cache key and a cache hit honours them. Two keys are internal, not user settings:
``tuning_worker_device`` (the parent's message to a benchmark worker process, through the
worker's environment) and ``test_compile_faults`` (test-only fault injection read inside
compile worker processes, which a patch in the parent cannot reach).
"""

from typing import Optional

from npu_inductor_core import env_config as _env

# Internal (set by our own processes and tests, not a user setting; README "Internal keys").
# The device index a benchmark worker was started for (subproc.py sets $NPU_AUTOTUNE_TUNING_DEVICE
# in the worker's environment, which sees that device as npu:0); None in every other process.
tuning_worker_device: Optional[str] = _env.text("NPU_AUTOTUNE_TUNING_DEVICE", internal=True)

# Test only: a folder whose "crash" / "hang" files make compile workers fail (compile_pool.py);
# read in the compile worker processes, which inherit $NPU_AUTOTUNE_TEST_COMPILE_FAULTS.
test_compile_faults: Optional[str] = _env.text("NPU_AUTOTUNE_TEST_COMPILE_FAULTS", internal=True)

# on npu-sim, benchmark every kernel with several configs (default: only those whose tuning was asked for)
autotune_on_sim: bool = _env.flag("NPU_AUTOTUNE_ON_SIM", False)

# how npu-sim answers a benchmark: "estimate" (the Ascend cost model's estimate of NPU time: the
# same decisions on any machine and load) or "interpreter" (time Triton's interpreter on this CPU)
sim_timing: str = _env.text("NPU_AUTOTUNE_SIM_TIMING", "estimate")

# multibuffer (double-buffering) variants of each config: None = where kernels compile for Ascend, True/False = always/never
multibuffer: Optional[bool] = _env.flag("NPU_AUTOTUNE_MULTIBUFFER", None)

# a compile error that reports a UB overflow drops the config (and logs it); False raises
drop_ub_overflow: bool = True

# compile watchdog: report npu kernel compiles pending this many seconds, every as many seconds (0 = off; upstream's flag wins)
compile_worker_watchdog_interval_seconds: float = 60.0

# the cap on profiled GEMM candidates (eq. of nvgemm_max_profiling_configs): max-autotune profiles at most this many npu GEMM
# template candidates per GEMM (the first ones of the list: the default tile, then decode
# supplements, then the rest); None or 0 = all
gemm_max_profiling_configs: Optional[int] = None

# supplement GEMM candidates (eq. of nvgemm_supplement_configs): for decode shapes (M <= 32) add Cube tiles with a
# short M and long N/K edges (gemm_templates.DECODE_TILES)
gemm_supplement_configs: bool = True

# swap-A/B GEMM candidates (eq. of nvgemm's swap A/B): for mm/addmm with M * gemm_swap_ab_ratio <= N, add template
# candidates that compute the transposed product C^T = B^T A^T (gemm_swap_ab.py)
gemm_swap_ab: bool = True
gemm_swap_ab_ratio: int = 8

_env.install(
    __name__,
    {
        "autotune_on_sim": (_env.is_bool, "True or False", "NPU_AUTOTUNE_ON_SIM"),
        "sim_timing": (
            lambda v: v in ("estimate", "interpreter"),
            "'estimate' or 'interpreter'",
            "NPU_AUTOTUNE_SIM_TIMING",
        ),
        "multibuffer": (
            lambda v: v is None or isinstance(v, bool),
            "None, True or False",
            "NPU_AUTOTUNE_MULTIBUFFER",
        ),
        "drop_ub_overflow": (_env.is_bool, "True or False", None),
        "gemm_max_profiling_configs": (
            lambda v: v is None or _env.is_int(v),
            "None or an int >= 0 (0/None = all)",
            None,
        ),
        "gemm_supplement_configs": (_env.is_bool, "True or False", None),
        "gemm_swap_ab": (_env.is_bool, "True or False", None),
        "gemm_swap_ab_ratio": (lambda v: _env.is_int(v, 1), "an int >= 1", None),
        "compile_worker_watchdog_interval_seconds": (
            _env.is_number,
            "a number >= 0 (0 = off)",
            None,
        ),
    },
)


def validate_inductor_meta(meta: dict) -> None:
    """Upstream knobs that reach the npu autotuner through ``inductor_meta``: a value outside
    its range is an error naming it, not a silent fallback."""
    radius = meta.get("coordinate_descent_search_radius", 1)
    if meta.get("coordinate_descent_tuning") and (not isinstance(radius, int) or radius < 1):
        raise ValueError(f"coordinate_descent_search_radius must be an int >= 1, got {radius!r}")


def validate_bench_settings(warmup, rep) -> None:
    if not isinstance(warmup, (int, float)) or warmup < 0:
        raise ValueError(
            f"inductor_default_autotune_warmup must be >= 0 (milliseconds), got {warmup!r}"
        )
    if not isinstance(rep, (int, float)) or rep <= 0:
        raise ValueError(f"inductor_default_autotune_rep must be > 0 (milliseconds), got {rep!r}")
