"""Upstream scheduler bug (npu-lowering README "Upstream bug: a pending template fusion fused with a
node already taken"), on CUDA with stock Inductor: GEMM1 has several Triton choices (a pending,
benchmarked epilogue fusion with GELU), GEMM2 one choice (takes the same GELU as prologue at once);
the synchronous branch of _evaluate_pending_template_fusions then fuses the stale pair.

    python tools/upstream_repros/stale_template_pair_cuda.py [crash|fixed]   # on a CUDA machine

Run 2026-12-05 on an H100 with torch 2.11.0+cu130 (stock Inductor, npu-inductor not loaded):
"crash" raises ``KeyError: SchedulerNode(name='op1')`` in ``fuse_two_nodes``; "fixed" (the
proposed upstream fix: skip a pair whose node is no longer itself) compiles and matches eager.
GEMM2's single choice stands for a device whose templates give that GEMM one config."""

import sys
import traceback
import torch
from torch._inductor import config, select_algorithm
from torch._inductor.scheduler import Scheduler

print("torch", torch.__version__, torch.cuda.get_device_name())
variant = sys.argv[1] if len(sys.argv) > 1 else "crash"
Scheduler.benchmark_codegened_module = lambda self, mod, *a, **k: (1e-6, "")  # fused always wins
calls = {"n": 0}
orig_call = select_algorithm.AlgorithmSelectorCache.__call__


def one_choice_for_second_gemm(self, name, choices, *args, **kwargs):
    calls["n"] += 1
    print(f"  select_algorithm call {calls['n']}: {name} with {len(choices)} choices")
    if calls["n"] >= 2:
        choices = choices[:1]  # a device whose templates give this GEMM one config
    return orig_call(self, name, choices, *args, **kwargs)


select_algorithm.AlgorithmSelectorCache.__call__ = one_choice_for_second_gemm
if variant == "fixed":  # the proposed upstream fix: skip a pair whose node is no longer itself
    upstream_fuse_if_speedup = Scheduler.fuse_if_speedup

    def fuse_if_speedup(self, node1, node2, *args, **kwargs):
        if self.get_fused_node(node1) is not node1 or self.get_fused_node(node2) is not node2:
            print("  stale pair skipped:", node1.get_name(), node2.get_name())
            return False
        return upstream_fuse_if_speedup(self, node1, node2, *args, **kwargs)

    Scheduler.fuse_if_speedup = fuse_if_speedup
torch.manual_seed(0)
mlp = torch.nn.Sequential(
    torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64)
).cuda()
flags = {
    "max_autotune": True,
    "max_autotune_gemm_backends": "TRITON",
    "compile_threads": 1,
    "benchmark_epilogue_fusion": True,
    "prologue_fusion": True,
    "force_disable_caches": True,
}
x = torch.randn(32, 64, device="cuda")
try:
    with config.patch(flags), torch.no_grad():
        out = torch.compile(mlp)(x)
    print("no crash; max diff", (out - mlp(x)).abs().max().item())
except Exception as e:
    traceback.print_exc(limit=-8)
    print("CRASH:", type(e).__name__, str(e)[:300])
