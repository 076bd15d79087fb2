"""Ascend: a config bishengir rejects for the unified buffer is dropped (the kernel compiles
with the next one, a kernel with none left raises naming it), and each config compiles with
the multi-buffer setting it was tiled for (runtime/ub_fit.py, mixed into the npu kernel
object through ascend_route.AscendRouteMixin). Upstream's own precompile loop runs here; the
compile is a stand-in raising what triton-ascend's linalg_to_bin raises when bishengir fails
(a CalledProcessError with bishengir's stderr). The last test runs the real bishengir behind npu-launcher's
Ascend stand-in (ub_fit_child.py).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from torch._inductor.runtime.triton_heuristics import CachingAutotuner, NoTritonConfigsError
from triton import Config

from npu_inductor_core import tiles as tiling
from npu_lowering.runtime.ascend_route import AscendRouteMixin
from npu_lowering.runtime.autotuner import NpuCachingAutotuner
from npu_lowering.runtime.ub_fit import UbFitMixin, ub_overflow

# bishengir-compile 1.2.0's words (Ascend910B2, a 32768-element f32 block of x + y)
BISHENGIR_OVERFLOW = (
    b'loc("kernel.ttadapter.mlir":2:3): error: ub overflow, requires 2097152 bits while 1572864 '
    b"bits available! (possible reason: tiling basic block is too large or block number is more "
    b"than what user expect due to multi-buffer feature is enabled and some ops need extra local "
    b"buffer.)\n[ERROR] Failed to run BiShengIR pipeline\n"
)


class _Compiles:
    """The compile below the mixin: configs with XBLOCK > ``limit`` fail as bishengir does."""

    limit = 1024
    _precompile_worker = CachingAutotuner._precompile_worker  # upstream's loop over the configs

    def _precompile_config(self, cfg):
        if cfg.kwargs["XBLOCK"] > self.limit:
            raise subprocess.CalledProcessError(
                1,
                ["bishengir-compile", "kernel.ttadapter.mlir"],
                output=b"",
                stderr=BISHENGIR_OVERFLOW,
            )
        if cfg.kwargs["XBLOCK"] < 0:
            raise RuntimeError("some other compile error")
        return ("compiled", cfg.kwargs["XBLOCK"])

    def _create_compile_options(self, cfg, compile_meta):
        return {"num_warps": 1, "num_stages": cfg.num_stages, "debug": False}


class _Kernel(UbFitMixin, _Compiles):
    def __init__(self, configs, flavour="ascend"):
        self.configs, self.compile_results, self.launchers = configs, [], []
        self.inductor_meta = {"kernel_name": "npu_kernel_demo", "npu_flavour": flavour}
        self.triton_meta = {"device": 0}


def cfg(xblock, stages=1):
    return Config({"XBLOCK": xblock}, num_warps=1, num_stages=stages)


def test_the_mixin_is_part_of_the_npu_kernel_object():
    assert issubclass(AscendRouteMixin, UbFitMixin) and issubclass(NpuCachingAutotuner, UbFitMixin)


def test_ub_overflow_is_read_from_the_compilers_stderr():
    exc = subprocess.CalledProcessError(1, ["bishengir-compile"], stderr=BISHENGIR_OVERFLOW)
    assert "ub overflow" not in str(exc)  # only the stderr says it
    assert ub_overflow(exc) == (2097152, 1572864)
    try:
        try:
            raise exc
        except subprocess.CalledProcessError as inner:
            raise RuntimeError("triton.compile failed") from inner
    except RuntimeError as wrapped:
        assert ub_overflow(wrapped) == (2097152, 1572864)
    assert ub_overflow(RuntimeError("some other compile error")) is None


def test_an_overflowing_config_is_dropped_and_the_kernel_compiles_with_the_next(caplog):
    k = _Kernel([cfg(4096), cfg(1024), cfg(256)])
    with caplog.at_level(logging.WARNING, logger="npu_lowering.runtime.ub_fit"):
        k._precompile_worker()
    assert k.compile_results == [("compiled", 1024), ("compiled", 256)]
    msgs = [r.getMessage() for r in caplog.records]
    assert any(
        "npu_kernel_demo" in m and "dropped" in m and "2097152 bits" in m and "4096" in m
        for m in msgs
    ), msgs


def test_a_kernel_with_no_config_left_raises_naming_it():
    k = _Kernel([cfg(4096), cfg(2048)])
    with pytest.raises(
        NoTritonConfigsError, match=r"npu kernel npu_kernel_demo: no config fits the unified buffer"
    ):
        k._precompile_worker()


def test_other_compile_errors_and_other_flavours_are_not_touched():
    with pytest.raises(RuntimeError, match="some other compile error"):
        _Kernel([cfg(-1), cfg(256)])._precompile_worker()
    with pytest.raises(subprocess.CalledProcessError):  # not Ascend: upstream's behaviour
        _Kernel([cfg(4096), cfg(256)], flavour="interpreter")._precompile_worker()


@pytest.mark.parametrize("stages, multibuffer", [(1, False), (2, True)])
def test_each_config_compiles_with_the_multibuffer_setting_it_was_tiled_for(stages, multibuffer):
    """triton-ascend's default (multibuffer on, A2/A3) never applies: a single-buffered config
    compiles single-buffered, a multi-buffer variant (num_stages=2) double-buffered."""
    options = _Kernel([])._create_compile_options(cfg(256, stages), {})
    assert options["multibuffer"] is multibuffer and options["num_stages"] == 1
    assert "multibuffer" not in _Kernel([], flavour="interpreter")._create_compile_options(
        cfg(256, stages), {}
    )
    assert tiling.compile_options(cfg(256, stages)) == {"multibuffer": multibuffer, "num_stages": 1}


def _softmax_with_real_bishengir(tmp_path, mode: str) -> dict:
    here = Path(__file__).resolve().parent
    setup = subprocess.run(
        [sys.executable, str(here.parent / "ascend_check" / "setup.py"), "--quiet"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert setup.returncode == 0, setup.stderr
    ascend_python = setup.stdout.strip().splitlines()[-1]
    env = {
        **__import__("os").environ,
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
        "TRITON_CACHE_DIR": str(tmp_path / "triton"),
    }
    proc = subprocess.run(
        [sys.executable, str(here / "ub_fit_child.py"), ascend_python, mode],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "error" not in out, out["error"] + proc.stderr[-4000:]
    assert out["max_error"] < 1e-5
    return out


@pytest.mark.feature("X07")
def test_with_the_real_bishengir_every_config_the_heuristics_emit_compiles(tmp_path):
    """The same softmax as users get it: every config was shrunk to fit the UB estimate, and
    bishengir accepts every one (none dropped)."""
    out = _softmax_with_real_bishengir(tmp_path, "fitted")
    assert out["verdicts"] and all(ok for _b, _mb, ok in out["verdicts"]), out["verdicts"]
    assert {blocks["XBLOCK"] for blocks, _mb, _ok in out["verdicts"]} <= {1, 2, 4, 8, 16}
    assert not any("dropped: ub overflow" in m for m in out["log"]), out["log"]


def test_with_the_real_bishengir_the_overflowing_config_is_dropped_and_the_kernel_runs(tmp_path):
    """A softmax over rows of 300 on a 910B, its configs as the tiling emits them before the
    UB estimate shrinks them: the first (32 rows of 512 f32) overflows the UB in bishengir
    (1837824 of 1572864 bits); it is dropped with a logged reason and the kernel compiles
    and runs with the others (npu-sim runs what the stand-in compiled)."""
    out = _softmax_with_real_bishengir(tmp_path, "raw")
    rejected = {blocks["XBLOCK"] for blocks, _mb, ok in out["verdicts"] if not ok}
    assert rejected == {32}, out["verdicts"]  # (single- and, with npu-autotune, multi-buffered)
    assert any(ok for _b, _mb, ok in out["verdicts"])
    assert any(
        "dropped: ub overflow, requires 1837824 bits" in m and "XBLOCK: 32" in m for m in out["log"]
    ), out["log"]
