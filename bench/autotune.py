"""Autotune time and chosen-config kernel time: npu-autotune vs upstream Inductor's autotuner.

Cases: a pointwise kernel (sin(x) * y + 1), a reduction (row sum) and a softmax, each compiled
with ``max_autotune_pointwise`` so both sides tune several configs.

On cuda (``--device cuda``, e.g. through the `device` tool on the H200): upstream Inductor as
shipped, against a proxy mode of our package: the same upstream codegen, but the kernels'
``triton_heuristics`` decorators are npu-autotune's (our tile generator's candidates under
the Ascend UB/core model, our kernel-object mixin over upstream's CachingAutotuner), so the
tuning machinery and the configs are ours while the kernels compile for the GPU. The proxy
is scoped to this process (compile_threads=1 so kernels load here; the patch is undone after).

On npu-sim (``--device npu``, tiny shapes): npu-autotune with tuning on
(max_autotune_pointwise) against no tuning (the default config) -- interpreter timings, a
smoke run of the same code path, not a speed claim.

Reports autotune time (precompile + benchmarking, summed over the case's kernel objects) and
the tuned compiled function's time, with ours/upstream ratios. Prints a table; writes JSON
to $OUT/autotune.json (or --json PATH). Not a timed test.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import time

import torch

from results_io import result_header, time_call, write_json

CASES = {
    "pointwise": (
        lambda x: torch.sin(x) * x + 1,
        lambda dev, big: (torch.randn((1 << 24) if big else 4096, device=dev),),
    ),
    "reduction": (
        lambda x: x.sum(dim=-1),
        lambda dev, big: (torch.randn(*((4096, 4096) if big else (8, 512)), device=dev),),
    ),
    "softmax": (
        lambda x: torch.softmax(x, dim=-1),
        lambda dev, big: (torch.randn(*((8192, 1024) if big else (8, 256)), device=dev),),
    ),
}


def _kernel_objects(cls):
    import warnings

    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # isinstance on some gc-tracked proxies warns
        objs = gc.get_objects()
    for o in objs:
        try:
            if isinstance(o, cls):
                out.append(o)
        except ReferenceError:
            pass
    return out


@contextlib.contextmanager
def proxy_heuristics():
    """Upstream's triton_heuristics decorators replaced by npu-autotune's, for this process."""
    from torch._inductor.runtime import triton_heuristics as th

    from npu_autotune.autotuner import KernelTuning
    from npu_autotune.heuristics import decorators
    from npu_inductor_core import decorators as decorators_core

    tuning = KernelTuning()

    class ProxyAutotuner(th.CachingAutotuner):
        """npu-autotune's tuning part on upstream's kernel object (cuda: upstream launch path)."""

        simulated = False

        @classmethod
        def adopt(cls, kernel):
            return cls(**decorators_core.adopted_arguments(kernel))

    def through_tuning(hook, method):
        def call(self, *args, **kwargs):
            return getattr(tuning, hook)(
                self, getattr(super(ProxyAutotuner, self), method), *args, **kwargs
            )

        return call

    for hook, method in (
        ("precompile", "precompile"),
        ("precompile_worker", "_precompile_worker"),
        ("precompile_config", "_precompile_config"),
        ("create_compile_options", "_create_compile_options"),
        ("bench", "bench"),
        ("coordinate_descent_tuning", "coordinate_descent_tuning"),
        ("benchmark_all_configs", "benchmark_all_configs"),
        ("run", "run"),
    ):
        setattr(ProxyAutotuner, method, through_tuning(hook, method))

    saved = {n: getattr(th, n) for n in ("pointwise", "reduction", "persistent_reduction")}
    ours = decorators(lambda: ProxyAutotuner)
    for n in saved:
        setattr(th, n, ours[n])
    try:
        yield ProxyAutotuner
    finally:
        for n, f in saved.items():
            setattr(th, n, f)


def run_case(name, device, big, mode):
    """mode: 'upstream' | 'ours' (cuda proxy) | 'tuned' | 'untuned' (npu-sim)."""
    from torch._inductor import config
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    from torch._inductor.utils import fresh_cache

    fn, make = CASES[name]
    args = make(device, big)
    torch._dynamo.reset()
    flags = {
        "max_autotune_pointwise": mode != "untuned",
        "compile_threads": 1,
        "force_disable_caches": True,
    }
    before = {id(o) for o in _kernel_objects(CachingAutotuner)}
    ctx = proxy_heuristics() if mode == "ours" else contextlib.nullcontext()
    with fresh_cache(), config.patch(flags), ctx:
        compiled = torch.compile(fn)
        t0 = time.perf_counter()
        out = compiled(*args)  # compile + autotune
        first_call_s = time.perf_counter() - t0
        kernels = [k for k in _kernel_objects(CachingAutotuner) if id(k) not in before]
        ms = time_call(compiled, args, device, warmup=50, rep=200)
    ref = fn(*[a.cpu() for a in args])
    torch.testing.assert_close(out.cpu(), ref, atol=1e-3, rtol=1e-3)
    tune_ms = sum((k.autotune_time_taken_ns or k.precompile_time_taken_ns) for k in kernels) / 1e6
    configs = sorted(
        {
            str(
                getattr(k, "configs", None)
                and [c.kwargs for c in k.configs]
                or [l.config.kwargs for l in k.launchers]
            )
            for k in kernels
        }
    )
    return {
        "case": name,
        "mode": mode,
        "autotune_ms": tune_ms,
        "kernel_ms": ms,
        "first_call_s": first_call_s,
        "kernel_objects": len(kernels),
        "chosen": configs,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--device", choices=["cuda", "npu"], default="cuda" if torch.cuda.is_available() else "npu"
    )
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "autotune.json"))
    ap.add_argument("--cases", default=",".join(CASES))
    opts = ap.parse_args()
    if opts.device == "npu":
        import npu_inductor

        npu_inductor.enable()
        modes, big = ("tuned", "untuned"), False
    else:
        if not torch.cuda.is_available():
            print("no cuda device", file=sys.stderr)
            return 2
        modes, big = ("upstream", "ours"), True
    rows = []
    for name in opts.cases.split(","):
        for mode in modes:
            rows.append(run_case(name, opts.device, big, mode))
    base, other = modes
    print(
        f"{'case':<10} {'mode':<9} {'autotune ms':>12} {'kernel ms':>10} {'first call s':>13}  chosen"
    )
    for r in rows:
        print(
            f"{r['case']:<10} {r['mode']:<9} {r['autotune_ms']:>12.2f} {r['kernel_ms']:>10.4f} "
            f"{r['first_call_s']:>13.2f}  {r['chosen']}"
        )
    ratios = {}
    for name in opts.cases.split(","):
        a = next(r for r in rows if r["case"] == name and r["mode"] == base)
        b = next(r for r in rows if r["case"] == name and r["mode"] == other)
        # ours / upstream on cuda; tuned / untuned on npu-sim
        num, den = (b, a) if opts.device == "cuda" else (a, b)
        # untuned kernels have no autotune time to compare with
        tune = num["autotune_ms"] / den["autotune_ms"] if den["autotune_ms"] > 0 else None
        ratios[name] = {
            "autotune_time": tune,
            "kernel_time": num["kernel_ms"] / max(den["kernel_ms"], 1e-9),
        }
        shown = "n/a" if tune is None else f"{tune:.2f}x"
        print(
            f"{name:<10} ratio ({num['mode']}/{den['mode']}): autotune time {shown}, "
            f"kernel time {ratios[name]['kernel_time']:.2f}x"
        )
    result = {**result_header("autotune", opts.device), "rows": rows, "ratios": ratios}
    write_json(opts.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
