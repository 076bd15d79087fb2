"""One npu compile in a fresh process, for the tests: ``python npu_compile.py SPEC_JSON``.

SPEC: {"fn": name in FUNCTIONS, "mode": torch.compile's mode, "inductor" / "dynamo" / "functorch": {flag: value},
"train": backward too, "save_artifacts": torch.compiler.save_cache_artifacts() at the end
(written to the file "artifacts_file" names, if any; "load_artifacts" loads that file first),
"cpu": also compile a cpu function under the same flags, "calls": [shapes...],
"miscompile": every value a kernel stores is off by one (a faulty compiler's binary),
"fixed_timings": autotuning benchmarks every choice but picks the first that ran,
"ascend": kernels generated and compiled as on Ascend (npu-launcher's test stand-ins:
triton-ascend-shaped compiles; CANN's runtime from NPU_LAUNCHER_CANN_LIBS)}.
Prints one JSON line: results checked against eager, Inductor/Dynamo counters, upstream's
cache_stats, npu_cache.stats(), the classes create_cache returned, how often
compile_fx_inner ran, and how many kernel configs were compiled: described by npu-launcher
(the compile of npu-sim kernels) or built by triton.compile.
"""

import dataclasses
import json
import re
import sys

import torch

import npu_inductor

spec = json.loads(sys.argv[1])
npu_inductor.enable()

import npu_cache  # noqa: E402
from torch._dynamo.utils import counters  # noqa: E402
from torch._inductor import compile_fx, config, remote_cache  # noqa: E402


def pointwise(x):
    return torch.sin(x) * 2 + 1


def with_constant(x):
    # AOT lifts the literal into a tensor constant of the graph (_tensor_constant0), on npu
    y = x * torch.tensor([0.5, -1.0, 2.0, 3.0], device=x.device) + 1
    return torch.softmax(y, dim=-1) * y.sum(-1, keepdim=True).cos()


def two_kernels(x):
    y = torch.softmax(x, dim=-1)
    return (y * x).sum(-1) + torch.cos(x).mean()


class Holder:
    pass


HOLDER = Holder()


def unserializable_guard(x):
    # ``type(HOLDER) is Holder`` installs a CLASS_MATCH guard, which a package cannot hold
    return x * 2 + 1 if type(HOLDER) is Holder else x


def matmul(x):
    # an [m, k] x [k, m] GEMM with a fused epilogue: with max_autotune_gemm, an npu template
    return torch.nn.functional.gelu(x @ x.t()) + 1


_MLP = {}


def mlp(x):
    # a decode-shaped MLP block (few rows): linear, GELU, linear, residual; the weights are made
    # once per process from a fixed seed, one copy per device (the eager reference runs on cpu)
    if not _MLP:
        g = torch.Generator().manual_seed(0)
        w = [
            torch.randn(128, 32, generator=g) / 8,
            torch.randn(128, generator=g),
            torch.randn(32, 128, generator=g) / 16,
            torch.randn(32, generator=g),
        ]
        _MLP.update(cpu=w, npu=[t.to("npu") for t in w])
    w1, b1, w2, b2 = _MLP[x.device.type]
    F = torch.nn.functional
    return x + F.linear(F.gelu(F.linear(x, w1, b1)), w2, b2)


FUNCTIONS = {
    "matmul": matmul,
    "mlp": mlp,
    "unserializable_guard": unserializable_guard,
    "pointwise": pointwise,
    "with_constant": with_constant,
    "two_kernels": two_kernels,
}

created = []
upstream_create = remote_cache.create_cache


def note_created(cache):
    if cache is not None:
        created.append(type(cache).__name__)
    return cache


# record what create_cache hands out, in every module that calls it by name
for mod_name in npu_cache._compat._CREATE_CACHE_USERS:
    mod = sys.modules[mod_name]
    current = mod.create_cache
    mod.create_cache = (lambda f: lambda *a, **k: note_created(f(*a, **k)))(current)

inner_calls = []  # per compile_fx_inner call: the graph's get_attr (tensor constant) count
real_inner = compile_fx._compile_fx_inner


def counting_inner(gm, *a, **k):
    inner_calls.append(sum(n.op == "get_attr" for n in gm.graph.nodes))
    return real_inner(gm, *a, **k)


compile_fx._compile_fx_inner = counting_inner

# kernel compiles: npu-launcher's describe_triton (found as npu-lowering finds it, by entry
# point; patched on its module before any compile binds it) and triton.compile
import importlib.metadata  # noqa: E402
import triton  # noqa: E402
import triton.compiler  # noqa: E402

compiled_kernels = {"described": 0, "triton_compile": 0}
described_names = []  # kernel name and config of each describe, for the tests' messages
describe_ep = next(
    ep
    for ep in importlib.metadata.entry_points(group="npu_inductor.kernel_launcher")
    if ep.name == "describe_triton"
)
real_describe = describe_ep.load()


def counting_describe(fn, triton_meta, config_kwargs, *a, **k):
    compiled_kernels["described"] += 1
    described_names.append(f"{getattr(fn, '__name__', fn)} {config_kwargs}")
    desc = real_describe(fn, triton_meta, config_kwargs, *a, **k)
    if spec.get("miscompile"):  # every value the kernel stores is off by one
        source = re.sub(
            r"tl\.store\((.*), (tmp\d+), ", r"tl.store(\1, \2 + 1.0, ", desc.binary.decode()
        )
        desc = dataclasses.replace(desc, binary=source.encode())
    return desc


setattr(sys.modules[describe_ep.module], describe_ep.attr, counting_describe)
real_triton_compile = triton.compiler.compile


def counting_triton_compile(*a, **k):
    compiled_kernels["triton_compile"] += 1
    return real_triton_compile(*a, **k)


triton.compile = triton.compiler.compile = counting_triton_compile
if spec.get("ascend"):
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "npu-launcher" / "tests"))
    import fake_triton_ascend  # noqa: E402
    import npu_lowering.kernel  # noqa: E402

    npu_lowering.kernel.flavour = lambda: "ascend"
    fake_triton_ascend.install_compile()  # wraps the counting compile

if spec.get("fixed_timings"):
    # every candidate is still compiled and benchmarked, but the winner is the first choice
    # whatever the (noisy, interpreter-run) timings were: two machines then agree on it
    from torch._inductor.select_algorithm import AlgorithmSelectorCache

    real_benchmark_choices = AlgorithmSelectorCache.benchmark_choices.__func__

    def fixed_benchmark_choices(cls, choices, *a, **k):
        timings = real_benchmark_choices(cls, choices, *a, **k)
        return {
            c: (1.0 + i if timings[c] != float("inf") else timings[c])
            for i, c in enumerate(choices)
        }

    AlgorithmSelectorCache.benchmark_choices = classmethod(fixed_benchmark_choices)
fn = FUNCTIONS[spec.get("fn", "pointwise")]
loaded = None
if spec.get("load_artifacts"):  # what another machine saved: the user carries the bytes over
    with open(spec["artifacts_file"], "rb") as f:
        loaded = torch.compiler.load_cache_artifacts(f.read()) is not None
results = []
saved = None
error = None
with (
    config.patch(spec.get("inductor", {})),
    torch._dynamo.config.patch(spec.get("dynamo", {})),
    torch._functorch.config.patch(spec.get("functorch", {})),
):
    compiled = torch.compile(fn, dynamic=spec.get("dynamic"), mode=spec.get("mode"))
    for shape in spec.get("calls", [[4]]):
        torch.manual_seed(len(results))
        x = torch.randn(*shape)
        xn = x.to("npu").requires_grad_(bool(spec.get("train")))
        try:
            out = compiled(xn)
            if spec.get("train"):  # forward and backward compiled; gradients checked too
                out.sum().backward()
        except Exception as exc:  # reported, for tests that expect an error (strict_precompile)
            error = f"{type(exc).__name__}: {exc}"
            break
        xr = x.clone().requires_grad_(bool(spec.get("train")))
        ref = fn(xr)
        good = out.device.type == "npu" and torch.allclose(
            out.detach().cpu(), ref.detach(), atol=1e-5, rtol=1e-5
        )
        if spec.get("train"):
            ref.sum().backward()
            good = good and torch.allclose(xn.grad.cpu(), xr.grad, atol=1e-5, rtol=1e-5)
        results.append(bool(good))
    if spec.get(
        "save_artifacts"
    ):  # how a precompile package reaches the Dynamo cache (caching_precompile)
        artifacts = torch.compiler.save_cache_artifacts()
        saved = artifacts is not None
        if saved and spec.get("artifacts_file"):
            with open(spec["artifacts_file"], "wb") as f:
                f.write(artifacts[0])
    if spec.get("cpu"):
        xc = torch.randn(4)
        results.append(
            bool(torch.allclose(torch.compile(lambda x: torch.cos(x) - 1)(xc), torch.cos(xc) - 1))
        )
flushed = npu_cache.flush(10)
print(
    json.dumps(
        {
            "ok": results,
            "error": error,
            "compiled_kernels": compiled_kernels,
            "described_names": described_names,
            "ascend_compiles": sys.modules["fake_triton_ascend"].COMPILES
            if spec.get("ascend")
            else None,
            "saved": saved,
            "loaded": loaded,
            "flushed": flushed,
            "inner_calls": len(inner_calls),
            "graph_constants": inner_calls,
            "created": created,
            "inductor": dict(counters["inductor"]),
            "dynamo": {k: dict(v) for k, v in counters.items() if k != "inductor"},
            "cache_stats": {k: vars(v) for k, v in remote_cache.cache_stats._stats.items()},
            "npu_cache": npu_cache.stats(),
        },
        default=str,
    )
)
