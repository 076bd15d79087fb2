"""Max-autotune GEMM candidates: npu-autotune's candidate set vs upstream Inductor's.

Cases: reference GEMM shapes (the MLP8 block's two linears, a decode GEMM with M << N, a
square GEMM) and the reference transformer block (npu_inductor.reference_models), compiled
with ``mode="max-autotune-no-cudagraphs"`` (graph replay would only blur the kernel times);
GEMM backends TRITON only on both sides, so what is compared is the template candidate sets
(ATen / cuBLAS would otherwise decide).

Both sides run the same upstream ``tuned_mm``/``tuned_addmm``/``tuned_bmm`` and select_algorithm;
only the tile lists differ (upstream's template-heuristic registry entries):

- ``--device cuda`` (the `device` tool, H200): "upstream" is Inductor as shipped (CUDA's tile
  lists); "ours" is the proxy mode the other benches use: npu-autotune's npu entries (Cube
  tiles, decode supplements M02, swap-A/B candidates M03, the profiling cap M01) registered for
  cuda in this process, kernels compiled for the GPU. It measures our candidate set and its
  tuning cost, with one-warp tiles meant for a Cube core, not an NPU's speed.
- ``--device npu`` (npu-sim): "ours" is npu as shipped; "upstream" is CUDA's tile lists
  registered for npu (what upstream would try), kernels in Triton's interpreter: the counts and
  the tuning wall time are meaningful, kernel times are the interpreter's.

Per case and side: candidates compiled (choices benchmarked, summed over the case's GEMMs),
autotune wall time (select_algorithm's precompile + benchmarking, as upstream logs them), the chosen
kernels' time (the compiled function, best config), which templates won. Prints a table;
writes JSON to $OUT/max_autotune.json (or --json PATH). Not a timed test.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time

import torch

from results_io import result_header, time_call, write_json


def gemm(m, k, n):
    def make(dev, dtype):
        g = torch.Generator().manual_seed(0)
        return (
            torch.randn(m, k, generator=g).to(dev, dtype),
            torch.randn(k, n, generator=g).to(dev, dtype),
        )

    return (lambda a, b: a @ b), make


def block(dim, heads, batch, seq):
    def make(dev, dtype):
        from npu_inductor.reference_models import TransformerBlock

        torch.manual_seed(0)
        model = TransformerBlock(dim, heads).eval().to(dev, dtype)
        return (model, (torch.randn(batch, seq, dim).to(dev, dtype),))

    return make


# name: (M, K, N) on cuda, on npu-sim
GEMMS = {
    "mlp8_fc1": ((4, 256, 1024), (4, 64, 128)),
    "mlp8_fc2": ((4, 1024, 256), (4, 128, 64)),
    "decode": ((8, 4096, 4096), (8, 128, 256)),
    "square": ((2048, 2048, 2048), (64, 64, 64)),
}
BLOCK = {"cuda": (256, 4, 4, 128), "npu": (32, 2, 1, 8)}  # dim, heads, batch, seq


@contextlib.contextmanager
def tile_lists(source: str, target: str):
    """Register ``source``'s GEMM template heuristics for device ``target`` in this process
    (the registry is upstream's; entries restored afterwards)."""
    from torch._inductor.template_heuristics import registry

    saved = dict(registry._TEMPLATE_HEURISTIC_REGISTRY)
    for (tmpl, dev, op), cls in saved.items():
        if dev == source:
            registry._TEMPLATE_HEURISTIC_REGISTRY[(tmpl, target, op)] = cls
    registry._HEURISTIC_CACHE.clear()
    import npu_autotune.config as npu_config

    # upstream's lists have no swap-A/B template (npu's choices class offers it on npu)
    off = npu_config.patch(gemm_swap_ab=False) if source == "cuda" else contextlib.nullcontext()
    try:
        with off:
            yield
    finally:
        registry._TEMPLATE_HEURISTIC_REGISTRY.clear()
        registry._TEMPLATE_HEURISTIC_REGISTRY.update(saved)
        registry._HEURISTIC_CACHE.clear()


@contextlib.contextmanager
def swap_templates_on(device: str):
    """The proxy on cuda: offer npu-autotune's swap-A/B template next to upstream's mm
    template (on npu, npu-lowering's choices class does so)."""
    from torch._inductor.choices import InductorChoices
    from torch._inductor.virtualized import V

    from npu_autotune import gemm_swap_ab

    class ProxyChoices(InductorChoices):
        def get_template_configs(self, kernel_inputs, templates, op_name, kwarg_overrides=None):
            extra = [
                t
                for t in gemm_swap_ab.extra_templates(kernel_inputs, templates, op_name)
                if t not in templates
            ]
            return super().get_template_configs(
                kernel_inputs, [*templates, *extra], op_name, kwarg_overrides
            )

    if device != "cuda":
        yield
        return
    old = V.choices
    V.set_choices_handler(ProxyChoices())
    try:
        yield
    finally:
        V.set_choices_handler(old)


@contextlib.contextmanager
def record_autotunes(log):
    """(op, candidates, wall s, winner) of every select_algorithm autotune, from the figures
    upstream logs ("AUTOTUNE ... benchmarking takes X seconds and Y seconds precompiling"):
    with epilogue benchmarking the timing happens later than the selection call, in the
    scheduler, so a wall clock around the call would miss it."""
    from torch._inductor.select_algorithm import AlgorithmSelectorCache

    real = AlgorithmSelectorCache.log_results

    def logged(
        name, input_nodes, timings, elapse, precompile_elapse, prescreening_elapse=None, *a, **k
    ):
        if timings:
            best = min(timings, key=timings.get)
            log.append(
                {
                    "op": name,
                    "candidates": len(timings),
                    "wall_s": elapse + precompile_elapse + (prescreening_elapse or 0.0),
                    "winner": best.name.rsplit("_", 1)[0],
                }
            )
        return real(
            name, input_nodes, timings, elapse, precompile_elapse, prescreening_elapse, *a, **k
        )

    AlgorithmSelectorCache.log_results = staticmethod(logged)
    try:
        yield
    finally:
        AlgorithmSelectorCache.log_results = staticmethod(real)


def run_case(name, device, side, dtype):
    from torch._inductor import config
    from torch._inductor.utils import fresh_cache

    if name == "block":
        model, args = block(*BLOCK[device])(device, dtype)
        fn = model
    else:
        fn, make = gemm(*GEMMS[name][0 if device == "cuda" else 1])
        args = make(device, dtype)
    native = (side == "upstream") == (device == "cuda")
    lists = (
        contextlib.nullcontext()
        if native
        else tile_lists("npu" if device == "cuda" else "cuda", device)
    )
    swap = swap_templates_on(device) if side == "ours" else contextlib.nullcontext()
    log = []
    torch._dynamo.reset()
    flags = {
        "max_autotune_gemm_backends": "TRITON",
        "compile_threads": 1,
        "force_disable_caches": True,
        "triton.cudagraphs": False,
    }
    with torch.no_grad(), fresh_cache(), config.patch(flags), lists, swap, record_autotunes(log):
        compiled = torch.compile(fn, mode="max-autotune-no-cudagraphs")
        t0 = time.perf_counter()
        out = compiled(*args)
        first_call_s = time.perf_counter() - t0
        ms = time_call(compiled, args, device, warmup=25, rep=100)
        ref = fn(*args) if name != "block" else None
    if ref is not None:
        torch.testing.assert_close(out.float(), ref.float(), atol=5e-2, rtol=5e-2)
    return {
        "case": name,
        "side": side,
        "gemms_tuned": len(log),
        "candidates": sum(r["candidates"] for r in log),
        "autotune_s": sum(r["wall_s"] for r in log),
        "kernel_ms": ms,
        "first_call_s": first_call_s,
        "winners": [r["winner"] for r in log],
        "tuned": log,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--device", choices=["cuda", "npu"], default="cuda" if torch.cuda.is_available() else "npu"
    )
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "."), "max_autotune.json"))
    ap.add_argument("--cases", default=",".join([*GEMMS, "block"]))
    opts = ap.parse_args()
    import npu_inductor

    if opts.device == "npu":
        npu_inductor.enable()
        dtype = torch.float32  # the interpreter's fastest
    else:
        if not torch.cuda.is_available():
            print("no cuda device", file=sys.stderr)
            return 2
        import npu_autotune  # the proxy needs only its registrations (no npu device)

        npu_autotune._register_gemm_templates()
        dtype = torch.float16
    rows = []
    for name in opts.cases.split(","):
        for side in ("upstream", "ours"):
            rows.append(run_case(name, opts.device, side, dtype))
    print(
        f"{'case':<10} {'side':<9} {'gemms':>5} {'candidates':>10} {'autotune s':>10} {'kernel ms':>10}  winners"
    )
    for r in rows:
        print(
            f"{r['case']:<10} {r['side']:<9} {r['gemms_tuned']:>5} {r['candidates']:>10} {r['autotune_s']:>10.2f} "
            f"{r['kernel_ms']:>10.4f}  {','.join(sorted(set(r['winners'])))}"
        )
    ratios = {}
    for name in opts.cases.split(","):
        up = next(r for r in rows if r["case"] == name and r["side"] == "upstream")
        us = next(r for r in rows if r["case"] == name and r["side"] == "ours")
        ratios[name] = {
            "candidates": us["candidates"] / max(up["candidates"], 1),
            "autotune_time": us["autotune_s"] / up["autotune_s"] if up["autotune_s"] else None,
            "kernel_time": us["kernel_ms"] / max(up["kernel_ms"], 1e-9),
        }
        r = ratios[name]
        tune = "n/a" if r["autotune_time"] is None else f"{r['autotune_time']:.2f}x"
        print(
            f"{name:<10} ours/upstream: candidates {r['candidates']:.2f}x, autotune time {tune}, "
            f"kernel time {r['kernel_time']:.2f}x"
        )
    result = {
        **result_header("max_autotune", opts.device),
        "dtype": str(dtype),
        "rows": rows,
        "ratios": ratios,
    }
    write_json(opts.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
