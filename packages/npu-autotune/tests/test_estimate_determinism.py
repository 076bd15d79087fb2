"""Compiles on npu-sim are deterministic: every decision upstream takes by timing (here:
max-autotune's choices, every kernel's config with autotuning on for all kernels, coordinate
descent, benchmark fusion and epilogue fusion) uses
the Ascend cost model's estimate, so the same model compiles to the same code in two
processes, one of them beside a CPU hog, and nothing times Triton's interpreter."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent(
    """
    import json, re, sys
    import torch
    import npu_autotune, npu_lowering, npu_sim
    npu_sim.start(); npu_lowering.register(); npu_autotune.register()
    import npu_autotune.config as ac
    from torch._dynamo.utils import counters
    from torch._inductor import config as inductor
    from torch._inductor.utils import run_and_get_code

    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 16), torch.nn.Softmax(-1)
    ).to("npu")
    x = torch.randn(8, 32, device="npu")
    timed = dict(  # upstream's other decisions by timing, on beside max-autotune's
        coordinate_descent_tuning=True, benchmark_fusion=True, benchmark_epilogue_fusion=True
    )
    with ac.patch(autotune_on_sim=True), inductor.patch(timed), torch.no_grad():
        out, codes = run_and_get_code(
            torch.compile(model, mode="max-autotune-no-cudagraphs"), x
        )
        torch.testing.assert_close(out.cpu(), model(x).cpu(), rtol=1e-3, atol=1e-4)
    # kernel names carry a hash of the source: the sources are compared, not their names
    code = re.sub(r"npu_kernel_[0-9a-f]+|/tmp\\S+", "_", "\\n".join(codes))
    decided = {**counters["npu_autotune"], "coordesc": counters["inductor"]["coordesc_tuning_bench"]}
    json.dump({"code": code, "counters": decided}, sys.stdout)
    """
)


def _compile(tmp_path, name: str) -> dict:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / name)}  # a cold compile
    proc = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _hog():
    """A process that keeps one core busy (the machine's load the second compile runs under)."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


@pytest.mark.feature("X15")
def test_the_same_model_compiles_to_the_same_code_under_different_load(tmp_path):
    quiet = _compile(tmp_path, "quiet")
    hogs = [_hog()]
    try:
        loaded = _compile(tmp_path, "loaded")
    finally:
        for h in hogs:
            h.kill()
    for run in (quiet, loaded):
        # decisions were made (candidates compared), by estimates, and nothing was timed
        assert run["counters"].get("bench.estimates", 0) > 0, run["counters"]
        assert run["counters"].get("bench.timed_runs", 0) == 0, run["counters"]
        assert run["counters"]["coordesc"] > 0, run["counters"]  # coordinate descent ran
    assert quiet["code"] == loaded["code"]
