"""Size-1 tensors and dims on npu (issue 16 item 1): Inductor compiles a size or stride equal
to 1 as a constant (``equal_1_arg_indices``; the signature types it "constexpr") but the call
still passes it. Every launch path (``run``, the wrapper's direct-launch slots; user kernels:
npu-launcher's test_specialized_args) must drop it as Triton's launcher does. With
TRITON_INTERPRET=1 (how a CPU-only user runs Triton) a kernel is an InterpretedFunction
without ``params``, and its descriptor used to lose the argument: "kernel
'triton_poi_fused_full_0' takes grid_x, grid_y, grid_z, stream and 1 kernel arguments
(out_ptr0); got 6 arguments in all". The programs are in specialized_args_cases.py."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch._inductor.utils import fresh_cache

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "npu_lowering_test_specialized_args_cases", HERE / "specialized_args_cases.py"
)
cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cases)


@pytest.fixture
def fresh():
    from npu_lowering.runtime import autotuner

    if autotuner.static_binder() is None:
        pytest.skip("npu-launcher is not installed")
    torch._dynamo.reset()
    autotuner._static_launches.clear()  # kernel objects outlive dynamo resets; bind afresh
    with fresh_cache():
        yield
    torch._dynamo.reset()


@pytest.mark.parametrize("case", list(cases.CASES))
def test_size_one_kernels_run(fresh, case):
    cases.run_case(case)


@pytest.mark.parametrize("case", list(cases.EXTRA))
def test_size_one_launch_paths(fresh, case):
    cases.EXTRA[case]()


def test_every_case_under_triton_interpret(tmp_path):
    """The same programs with TRITON_INTERPRET=1, in a child process (the variable is read
    when Triton modules are imported)."""
    env = {
        **os.environ,
        "TRITON_INTERPRET": "1",
        "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
    }
    proc = subprocess.run(
        [sys.executable, str(HERE / "specialized_args_cases.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(results) == set(cases.CHILD)
    failed = {k: v for k, v in results.items() if v != "ok"}
    assert not failed, failed
