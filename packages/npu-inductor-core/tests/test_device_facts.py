"""Device facts: one reader for every component (issue 18 item 1)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from npu_inductor_core import device as D


def test_the_ub_is_what_the_compiler_plans():
    # 910B-class parts: torch_npu reports 192 KiB, bishengir plans all of it
    assert D.plannable_ub(192 * 1024, 221) == 192 * 1024
    # the 950 family reports 256 KiB; bishengir-compile-a5 plans 2031616 bits = 248 KiB
    assert D.plannable_ub(256 * 1024, 260) == 248 * 1024 == 2031616 // 8
    # no ub_size attribute: derived from the SoC version, as torch_npu does
    assert D.plannable_ub(None, 260) == 248 * 1024
    assert D.plannable_ub(None, None) == 192 * 1024
    # a part reporting less than the family's plan keeps its own figure
    assert D.plannable_ub(128 * 1024, 221) == 128 * 1024


def test_a_kernel_is_tiled_for_the_facts_it_recorded():
    facts = D.Device(ub_bytes=8 * 1024, vector_cores=4)
    meta = {D.FACTS_KEY: facts.record()}
    assert D.device_for(meta) == facts
    assert D.device_for({}) == D.device(0)  # nothing recorded: this process's device
    # a 950's kernel keeps its family (UB calibration, L0C, cost row) wherever it is tuned
    a5 = D.Device(ub_bytes=D.UB_950, cube_cores=32, soc="Ascend950PR_9599", soc_version=D.SOC_950)
    got = D.device_for({D.FACTS_KEY: a5.record()})
    assert (
        got == D.Device(**{**a5.__dict__, "l0c_bytes": D.L0C_BYTES["950"]}) and got.family == "950"
    )


def _child(code: str, **env) -> str:
    import os

    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


def test_facts_come_from_the_device_and_are_read_once_it_exists():
    pytest.importorskip("npu_sim")
    out = _child(
        """
        from npu_inductor_core.device import device
        before = device(0)
        import npu_sim
        npu_sim.start()  # device "npu" exists from here on
        after = device(0)
        print(before.flavour, after.flavour, after.soc, after.ub_bytes, after.vector_cores, after.cube_cores)
    """,
        NPU_SIM_SOC="Ascend950",
        TORCH_DEVICE_BACKEND_AUTOLOAD="0",
    )
    # autoload off, so `import torch` does not start npu-sim: no device yet: the defaults, not cached; then the simulated 950 with the UB bishengir plans
    assert out.split() == ["none", "sim", "Ascend950", str(248 * 1024), "64", "32"]
