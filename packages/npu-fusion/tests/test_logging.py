"""``TORCH_LOGS=+npu_fusion`` shows each refused fusion with the rule and its numbers."""

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import torch
    import dataclasses
    import npu_fusion, npu_lowering, npu_sim
    from npu_fusion import ub_rule
    from torch._inductor.utils import fresh_cache

    npu_sim.start()
    npu_lowering.register()
    npu_fusion.register()

    def pair(a):
        b = a.sin() + 1
        return b, b.cos() * 2

    real = ub_rule._device  # the rule plans on an npu with 64 bytes of UB
    ub_rule._device = lambda index=0: dataclasses.replace(real(index), ub_bytes=64)
    with fresh_cache():
        torch.compile(pair)(torch.randn(8, 8, device="npu"))
""")


def _run(torch_logs: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "TORCH_LOGS"}
    if torch_logs is not None:
        env["TORCH_LOGS"] = torch_logs
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=600, env=env
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stderr


def test_torch_logs_shows_refusals_with_rule_and_numbers():
    from npu_fusion import ub_rule
    from npu_inductor_core import ub_model

    logged = _run("+npu_fusion")
    family = ub_rule.soc_family()  # the child's npu-sim SoC is this process's
    nbytes = ub_model.estimate_buffers({"l": {4: 1}, "v": {4: 2}}, 64, True, family)
    assert (
        "refused vertical fusion op0 + op1: rule ub_footprint: "
        f"1 loaded x2 + 2 kept buffers x 64 elems = {nbytes} B (ub_model, {family}) > UB 64 B"
    ) in logged
    assert "refused" not in _run(None)


def test_the_log_is_named_in_torchs_registry():
    from torch._logging._internal import log_registry

    import npu_fusion

    npu_fusion.register()
    assert log_registry.is_log("npu_fusion")
