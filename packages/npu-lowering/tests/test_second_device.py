"""Compiled kernels on npu:1 (npu-sim with two devices): each kernel launches on the device of
its tensors. Upstream's autotuner hands the kernel object the device as a bare index, which the
launch read as device 0 ("tensor is on npu:1, the kernel runs on npu:0")."""

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import torch
    assert torch.npu.device_count() == 2
    for dev in ("npu:1", "npu:0"):
        torch._dynamo.reset()
        x = torch.randn(8, 5, device=dev)
        out = torch.compile(lambda a: (a.sin() + 1).sum(-1))(x)
        assert out.device == torch.device(dev), out.device
        torch.testing.assert_close(out.cpu(), (x.cpu().sin() + 1).sum(-1))
    print("OK")
""")


def test_a_compiled_function_runs_on_the_second_device():
    env = {**os.environ, "NPU_SIM_DEVICE_COUNT": "2"}
    env.pop("ASCEND_RT_VISIBLE_DEVICES", None)
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0 and "OK" in proc.stdout, proc.stderr[-3000:]
