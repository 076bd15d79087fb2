"""bench/warm_start.py --mode ascend-compile end to end (issue 17 item 6), without its timings.

The bench's cold child compiles every candidate config of every kernel for Ascend910B2 with
the real compiler up to HIVM (triton-ascend's front end + bishengir, in the Ascend check's
venv, through bench/ascend_compile.py's hook on the npu kernel object's compile); the remote
child, an empty local directory served by Redis (FX graph with its kernel descriptors),
must compile none of it, and every child must compute eager's result. The ratios are the
bench's to report, not asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[3]
BENCH = REPO / "bench" / "warm_start.py"
SETUP = REPO / "packages" / "npu-lowering" / "ascend_check" / "setup.py"


# the bench's children turn keep_static_cubin_raw on (the FX entry carries the kernel descriptors)
@pytest.mark.skipif(
    not hasattr(torch._inductor.config, "keep_static_cubin_raw"),
    reason=f"torch {torch.__version__} has no Inductor flag keep_static_cubin_raw",
)
@pytest.mark.feature("R01")
def test_a_remote_hit_runs_no_ascend_compile(redis_url, tmp_path):
    setup = subprocess.run(
        [sys.executable, str(SETUP), "--quiet"], capture_output=True, text=True, timeout=900
    )
    assert setup.returncode == 0, setup.stderr
    ascend_python = setup.stdout.strip().splitlines()[-1]
    report = tmp_path / "warm.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--mode",
            "ascend-compile",
            "--repeat",
            "1",
            "--workloads",
            "one-kernel",
            "--redis-url",
            redis_url,
            "--ascend-python",
            ascend_python,
            "--ascend-jobs",
            "1",
            "--json",
            str(report),
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    r = json.loads(report.read_text())
    cold, remote = r["runs"]["cold"][0], r["runs"]["remote"][0]
    # cold: each candidate config of the kernel went through the front end and bishengir
    assert cold["ascend"]["hook_installed"] and cold["ascend"]["kernels"] == 1, cold["ascend"]
    assert (
        cold["ascend"]["configs"] >= 2
        and cold["ascend"]["reached_hivm"] == cold["ascend"]["configs"]
    ), cold["ascend"]
    assert not cold["ascend"]["failed"], cold["ascend"]["failed"]
    # remote: nothing was compiled for Ascend (nor locally): the FX graph came from Redis
    assert remote["ascend"]["hook_installed"] and remote["ascend"]["configs"] == 0, remote["ascend"]
    assert r["hits_that_compiled"] == []
    assert remote["fx_remote"].get("hit_remote") == 1, remote["fx_remote"]
    assert r["all_match_eager"]
