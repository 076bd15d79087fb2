"""The tile generator: candidates under the UB and the core count; UB overflow drops configs."""

import logging

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor import config
from triton import Config

from npu_autotune import kernel_facts
from npu_inductor_core import tiles

SIG2 = {"signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32"}}
SIG3 = {"signature": {"in_ptr0": "*fp32", "in_ptr1": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32"}}


def test_candidates_fit_the_ub_and_spread_over_the_cores():
    dev = tiles.Device(ub_bytes=192 * 1024, vector_cores=48)
    numel = 1 << 20
    configs = tiles.pointwise({"x": numel}, SIG3, dev)
    budget = 192 * 1024 // 3 // 4
    assert configs[0].kwargs["XBLOCK"] == budget  # default: the largest block the UB allows
    assert all(c.num_warps == 1 and c.kwargs["XBLOCK"] <= budget for c in configs)
    programs = sorted(-(-numel // c.kwargs["XBLOCK"]) for c in configs)
    assert 48 in programs or any(p >= 48 for p in programs)  # one candidate covers every core
    small = tiles.Device(ub_bytes=16 * 1024, vector_cores=48)
    assert all(
        c.kwargs["XBLOCK"] <= 16 * 1024 // 3 // 4
        for c in tiles.pointwise({"x": numel}, SIG3, small)
    )
    # fewer cores -> the spread candidates use fewer programs
    n = 1 << 16
    many = tiles.pointwise({"x": n}, SIG3, tiles.Device(vector_cores=48))
    few = tiles.pointwise({"x": n}, SIG3, tiles.Device(vector_cores=8))
    assert (
        max(-(-n // c.kwargs["XBLOCK"]) for c in few)
        == 8
        < max(-(-n // c.kwargs["XBLOCK"]) for c in many)
    )


def test_innermost_block_is_32_bytes_and_reductions_fit():
    dev = tiles.Device()
    assert all(c.kwargs["XBLOCK"] >= 8 for c in tiles.pointwise({"x": 3}, SIG2, dev))
    half = {"signature": {"in_ptr0": "*fp16", "out_ptr0": "*fp16"}}
    assert min(c.kwargs["XBLOCK"] for c in tiles.pointwise({"x": 3}, half, dev)) == 16
    for persistent in (True, False):
        for c in tiles.reduction(
            {"x": 4096, "r0_": 1024}, SIG2, dev, persistent=persistent, exhaustive=True
        ):
            assert tiles.fits_ub(c, SIG2, dev, 1024 if persistent else None)
            assert ("R0_BLOCK" in c.kwargs) is (not persistent)


def test_multibuffer_variants_halve_the_budget():
    dev = tiles.Device()
    plain = tiles.pointwise({"x": 1 << 20}, SIG2, dev)
    both = tiles.pointwise({"x": 1 << 20}, SIG2, dev, multibuffer=True)
    mb = [c for c in both if tiles.is_multibuffer(c)]
    assert mb and len(both) > len(plain)
    assert max(c.kwargs["XBLOCK"] for c in mb) == max(c.kwargs["XBLOCK"] for c in plain) // 2
    assert all(tiles.fits_ub(c, SIG2, dev) for c in both)
    assert not tiles.fits_ub(Config({"XBLOCK": 1 << 15}, num_warps=1, num_stages=2), SIG2, dev)


def test_multibuffer_setting_reaches_kernels(fresh, kernels):
    import npu_autotune.config as npu_config

    x = torch.randn(512, device="npu")
    old, npu_config.multibuffer = npu_config.multibuffer, True
    try:
        with config.patch(max_autotune_pointwise=True):
            torch.testing.assert_close(torch.compile(torch.cos)(x).cpu(), torch.cos(x.cpu()))
    finally:
        npu_config.multibuffer = old
    assert any(stages == 2 for _, _, stages in fresh), (
        fresh
    )  # a multibuffer variant was benchmarked


def test_overflowing_configs_are_never_launched(fresh, kernels, caplog):
    from npu_lowering.runtime.heuristics import NpuCachingAutotuner

    x = torch.randn(256, device="npu")
    with config.patch(max_autotune_pointwise=True):
        torch.compile(torch.exp)(x)
    (k,) = kernels()
    huge = Config({"XBLOCK": 1 << 20}, num_warps=1, num_stages=1)
    k.configs = [huge, tiles.make({"XBLOCK": 64}), tiles.make({"XBLOCK": 128})]
    k._npu_tuned = False
    fresh.clear()
    with caplog.at_level(logging.WARNING, logger="npu_autotune.autotuner"):
        k.run(x, torch.empty_like(x), 256, stream=0)
    assert {kw["XBLOCK"] for _, kw, _ in fresh} == {64, 128}  # the overflowing one never ran
    assert counters["npu_autotune"]["ub_dropped"] == 1
    assert "exceeds the unified buffer" in caplog.text
    k.configs = [huge]
    k._npu_tuned = False
    with pytest.raises(Exception, match="no config fits the unified buffer"):
        k.run(x, torch.empty_like(x), 256, stream=0)
    assert isinstance(k, NpuCachingAutotuner)


def test_compile_error_reporting_ub_overflow_drops_the_config(fresh, kernels, monkeypatch, caplog):
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    from triton.runtime.errors import OutOfResources

    x = torch.randn(256, device="npu")
    torch.compile(torch.exp)(x)
    (k,) = kernels()

    def compile_fails(self, cfg):
        raise RuntimeError(
            "MLIRCompilationError: ub overflow, requires 1703936 bits while 1572864 bits available"
        )

    monkeypatch.setattr(CachingAutotuner, "_precompile_config", compile_fails)
    from npu_autotune import autotuner

    monkeypatch.setattr(
        autotuner, "simulated", lambda kernel: False
    )  # the tuning compiles as on Ascend
    with caplog.at_level(logging.WARNING, logger="npu_autotune.autotuner"):
        with pytest.raises(OutOfResources):
            k._precompile_config(k.configs[0])
    assert "UB overflow" in caplog.text and "1703936" in caplog.text
    assert counters["npu_autotune"]["ub_overflow_dropped"] == 1

    def other_error(self, cfg):
        raise RuntimeError("some other compile error")

    monkeypatch.setattr(CachingAutotuner, "_precompile_config", other_error)
    with pytest.raises(RuntimeError, match="some other"):
        k._precompile_config(k.configs[0])


def test_ub_overflow_message_parsing():
    assert tiles.ub_overflow(
        RuntimeError("ub overflow, requires 1703936 bits while 1572864 bits available")
    ) == (1703936, 1572864)
    assert tiles.ub_overflow(RuntimeError("UB overflow requires 99 bits")) == (99, None)
    assert tiles.ub_overflow(RuntimeError("out of memory")) is None
    # triton-ascend's linalg_to_bin: subprocess.run(check=True) of bishengir, the words in stderr
    import subprocess

    failed = subprocess.CalledProcessError(
        1,
        ["bishengir-compile"],
        stderr=b"error: ub overflow, requires 2097152 "
        b"bits while 1572864 bits available! (possible reason: ...)",
    )
    assert tiles.ub_overflow(failed) == (2097152, 1572864)


def test_kernels_carry_the_device_facts_a_compile_worker_tiles_for(fresh, kernels, monkeypatch):
    # a compile worker opens no device (its own lookup gives the 910B defaults): kernels carry
    # the compiling process's UB size and core count, and the tile generator uses those
    from npu_inductor_core import tiles as tiling

    small = tiling.Device(ub_bytes=8 * 1024, vector_cores=4)
    monkeypatch.setattr(tiling, "device", lambda index=0: small)
    x = torch.randn(4096, device="npu")
    with config.patch(max_autotune_pointwise=True):
        torch.testing.assert_close(torch.compile(lambda a: a.cos() + 1)(x).cpu(), x.cpu().cos() + 1)
    ran = kernels()
    assert ran
    monkeypatch.setattr(tiles, "device", lambda index=0: tiles.Device())  # as in a worker
    for k in ran:
        assert k.inductor_meta[tiles.FACTS_KEY] == tiles.Device(8 * 1024, 4).record()
        assert kernel_facts.device_of(k) == tiles.Device(8 * 1024, 4)
        assert all(
            tiles.fits_ub(c, k.triton_meta, tiles.Device(8 * 1024, 4), None) for c in k.configs
        )


# --- multi-buffer variants against Ascend's compiler (bishengir, in the Ascend check's venv) ---

REPO = __import__("pathlib").Path(__file__).resolve().parents[3]
ASCEND_CHECK = REPO / "packages" / "npu-lowering" / "ascend_check"
X_PLUS_Y = """
import triton
import triton.language as tl
from npu_lowering.runtime import heuristics as triton_heuristics
from torch._inductor.runtime.hints import DeviceProperties


@triton_heuristics.fixed_config(
    config=CONFIG, filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'in_ptr1': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32',
                               'XBLOCK': 'constexpr'},
                 'device': DeviceProperties(type='npu', index=0, multi_processor_count=48, cc='Ascend910B2', major=0,
                                            regs_per_multiprocessor=None, max_threads_per_multi_processor=None,
                                            max_threads_per_block=1024, warp_size=32),
                 'constants': {}, 'configs': []},
    inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'NAME', 'mutated_arg_names': []},
)
@triton.jit
def NAME(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xsubs = tl.cdiv(xnumel, XBLOCK)
    xsubs_per_program = tl.cdiv(xsubs, tl.num_programs(0))
    xsub_start = tl.program_id(0) * xsubs_per_program
    for xsub in tl.range(xsub_start, tl.minimum(xsub_start + xsubs_per_program, xsubs)):
        xindex = xsub * XBLOCK + tl.arange(0, XBLOCK)[:]
        xmask = xindex < xnumel
        tmp0 = tl.load(in_ptr0 + xindex, xmask)
        tmp1 = tl.load(in_ptr1 + xindex, xmask)
        tl.store(out_ptr0 + xindex, tmp0 + tmp1, xmask)
"""


def test_a_block_that_fits_only_single_buffered_is_emitted_single_buffered(tmp_path):
    """The generator's largest block for x + y on a 910B (3 pointers: 16384 f32) comes only
    single-buffered; its multi-buffer variants are half as large. bishengir agrees: 16384
    compiles single-buffered and 8192 double-buffered, each with --enable-auto-multi-buffer set
    to match (npu-lowering's compile options follow num_stages), while the reverse choice,
    16384 double-buffered, does not fit (bishengir retries it single-buffered)."""
    import json
    import subprocess
    import sys

    dev = tiles.Device()
    both = tiles.pointwise({"x": 1 << 20}, SIG3, dev, multibuffer=True)
    single = max(c.kwargs["XBLOCK"] for c in both if not tiles.is_multibuffer(c))
    double = max(c.kwargs["XBLOCK"] for c in both if tiles.is_multibuffer(c))
    assert (single, double) == (16384, 8192)
    assert not any(
        tiles.is_multibuffer(c) and c.kwargs["XBLOCK"] == single for c in both
    )  # never the reverse

    setup = subprocess.run(
        [sys.executable, str(ASCEND_CHECK / "setup.py"), "--quiet"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert setup.returncode == 0, setup.stderr
    python = setup.stdout.strip().splitlines()[-1]
    cases = {
        "npu_kernel_sb_single": (single, 1),
        "npu_kernel_mb_double": (double, 2),
        "npu_kernel_reverse": (single, 2),
    }
    for name, (xblock, stages) in cases.items():
        src = X_PLUS_Y.replace("NAME", name).replace(
            "CONFIG", f"{{'XBLOCK': {xblock}, 'num_stages': {stages}}}"
        )
        (tmp_path / f"{name}.py").write_text(src)
    proc = subprocess.run(
        [
            python,
            str(ASCEND_CHECK / "check.py"),
            str(tmp_path),
            "--targets",
            "910B2",
            "--json",
            str(tmp_path / "r.json"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads((tmp_path / "r.json").read_text())
    got = {r["name"]: r["configs"][0]["targets"]["910B2"] for r in report["results"]}
    for name, (_xblock, stages) in cases.items():
        t = got[name]
        assert t["ok"], (name, t, proc.stdout)
        assert f"--enable-auto-multi-buffer={stages == 2}" in t["command"], t["command"]
    assert not got["npu_kernel_sb_single"]["retried_without_multibuffer"]
    assert not got["npu_kernel_mb_double"]["retried_without_multibuffer"]
    assert (
        got["npu_kernel_mb_double"]["ub_bytes"] <= got["npu_kernel_mb_double"]["ub_available_bytes"]
    )
    assert got["npu_kernel_reverse"]["retried_without_multibuffer"]  # did not fit double-buffered


def test_a_reduction_over_two_axes_gets_a_block_per_axis():
    dev = tiles.Device()
    hints = {"x": 8, "r0_": 64, "r1_": 8}
    for c in tiles.reduction(hints, SIG2, dev, exhaustive=True):
        # the innermost axis first, as upstream unravels a reduction block
        assert c.kwargs["R1_BLOCK"] == 8 and c.kwargs["R0_BLOCK"] >= 1
    assert tiles.reduction_blocks(hints, 32) == {"R0_BLOCK": 4, "R1_BLOCK": 8}
    assert tiles.reduction_blocks({"x": 8, "r0_": 100}, 32) == {"R0_BLOCK": 32}
    # a persistent block holds both axes whole
    assert tiles.persistent_rnumel(hints, {"XBLOCK": 1}) == 512
    for c in tiles.reduction(hints, SIG2, dev, persistent=True):
        assert "R0_BLOCK" not in c.kwargs and tiles.fits_ub(c, SIG2, dev, 512)
