"""Child process of test_fx_cache_restore.py: compile a small npu graph on npu-sim with the
FX graph cache on and print, as JSON, what happened (a new process each run)."""

import json
import sys

import torch

import npu_inductor

npu_inductor.enable()

import triton  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402
from torch._inductor import async_compile  # noqa: E402

import npu_launcher.inductor as launcher_inductor  # noqa: E402
from npu_lowering.runtime import autotuner  # noqa: E402

seen = {"triton_compile": 0, "described": 0, "loaded_from_source": 0}


def counting(key, real):
    def wrapper(*args, **kwargs):
        seen[key] += 1
        return real(*args, **kwargs)

    return wrapper


# entry points resolve attributes at load time, so the wrapped describe_triton is the one used
triton.compile = counting("triton_compile", triton.compile)
launcher_inductor.describe_triton = counting("described", launcher_inductor.describe_triton)
async_compile._load_triton_kernel_from_source = counting(
    "loaded_from_source", async_compile._load_triton_kernel_from_source
)


def model(a, b):
    return torch.softmax(a.sin() + b, -1) * 2, (a * b).sum(0)


torch.manual_seed(0)
a, b = torch.randn(8, 40), torch.randn(8, 40)
fn = torch.compile(model)
outs = fn(a.to("npu"), b.to("npu"))
refs = model(a, b)
ok = all(torch.allclose(o.cpu(), r, atol=1e-5, rtol=1e-5) for o, r in zip(outs, refs))
launches = [entry[-1] for entry in autotuner.LAUNCHES]
objects = [type(l).__module__ for l in autotuner._static_launches.values() if l is not None]
print(
    json.dumps(
        {
            "ok": ok,
            **seen,
            "launches": len(launches),
            "static_launches": sum(map(bool, launches)),
            "launch_object_modules": sorted(set(objects)),
            "fx_hit": counters["inductor"]["fxgraph_cache_hit"],
            "saved": counters["inductor"]["triton_bundler_save_static_autotuner"],
            "restored": counters["inductor"]["triton_bundler_load_static_autotuner"],
        }
    )
)
sys.stdout.flush()
