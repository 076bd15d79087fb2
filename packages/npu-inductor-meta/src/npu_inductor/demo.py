"""``npu-inductor demo``: compile a small transformer block on npu, check it against eager,
and report compile time, per-call time, the number of generated kernels, and the estimated
NPU time of the compiled block against an eager estimate.

On a machine without an NPU this runs on npu-sim (kernels in Triton's interpreter, so
per-call times are the interpreter's, not a device's). The estimates are the Ascend cost
model's (npu_inductor_core.cost_model, README "Cost model"): the compiled call with its
kernels priced, not run; eager as one aclnn op per ATen op (its launch and GM traffic).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

from .components import ComponentError, enable


def _block(dim: int, heads: int):
    from .reference_models import TransformerBlock

    return TransformerBlock(dim, heads).eval()


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=16)
    parser.add_argument("--calls", type=int, default=5, help="timed calls after the first")


def _run(args: argparse.Namespace):
    try:
        loaded = enable()
    except ComponentError as exc:
        return 1, {"error": str(exc)}, f"npu-inductor demo: {exc}"
    import torch
    from torch._inductor import metrics

    if torch._C._get_privateuse1_backend_name() != "npu":
        msg = "no device 'npu': install npu-inductor[sim] (simulated) or torch_npu"
        return 1, {"error": msg}, f"npu-inductor demo: {msg}"
    torch.manual_seed(0)
    eager = _block(args.dim, args.heads)
    model = copy.deepcopy(eager).to("npu")
    x = torch.randn(args.batch, args.seq, args.dim)
    torch._dynamo.reset()
    metrics.reset()
    compiled = torch.compile(model)
    xn = x.to("npu")
    with torch.no_grad():
        start = time.perf_counter()
        out = compiled(xn)
        compile_s = time.perf_counter() - start
        times = []
        for _ in range(args.calls):
            start = time.perf_counter()
            compiled(xn)
            times.append(time.perf_counter() - start)
        ref = eager(x)
        estimate = _estimate(model, compiled, xn)
    err = (out.cpu() - ref).abs().max().item()
    ok = bool(torch.allclose(out.cpu(), ref, atol=1e-4, rtol=1e-4))
    data = {
        "device": str(out.device),
        "provider": torch.npu.__name__.split(".")[0],
        "components": loaded,
        "shape": [args.batch, args.seq, args.dim],
        "compile_s": round(compile_s, 3),
        "per_call_ms": round(statistics.median(times) * 1e3, 3) if times else None,
        "generated_kernels": metrics.generated_kernel_count,
        "max_abs_error": err,
        "matches_eager": ok,
        "estimate": estimate,
    }
    text = "\n".join(
        [
            f"transformer block {args.batch}x{args.seq}x{args.dim} on {data['device']} ({data['provider']})",
            f"compile (first call)  {data['compile_s']:.2f} s",
            f"per call (median of {args.calls})  {data['per_call_ms']} ms",
            f"generated kernels     {data['generated_kernels']}",
            f"max |compiled - eager|  {err:.2e}  -> {'matches eager' if ok else 'MISMATCH'}",
            f"estimated NPU time ({estimate['family']}) compiled {estimate['compiled_us']} us"
            f" vs eager {estimate['eager_us']} us (compiled: {estimate['kernels']} kernels,"
            f" {estimate['compiled_aclnn_ops']} aclnn ops; eager: {estimate['eager_aclnn_ops']}"
            " aclnn ops)",
            f"  ({CAVEAT})",
        ]
    )
    return (0 if ok else 1), data, text


CAVEAT = (
    "a cost-model estimate, not a measurement: assumed launch costs, no L2 cache,"
    " pipes taken as overlapped"
)


def _estimate(model, compiled, xn) -> dict:
    """The estimated NPU time of one call, compiled (after its compiling call: kernels priced,
    not run) and eager (each ATen op priced as one aclnn op)."""
    from npu_inductor_core.device import device
    from npu_inductor_core.estimated_run import estimate_call

    comp = estimate_call(lambda: compiled(xn))
    eager = estimate_call(lambda: model(xn))
    return {
        "soc": device(xn.device.index or 0).soc,
        "family": device(xn.device.index or 0).family,
        "compiled_us": round(comp.seconds * 1e6, 1),
        "eager_us": round(eager.seconds * 1e6, 1),
        "kernels": comp.kernels,
        "compiled_aclnn_ops": comp.aten_ops,
        "eager_aclnn_ops": eager.aten_ops,
        "unpriced_kernels": comp.unpriced,
        "caveat": CAVEAT,
    }


class _Demo:
    help = (
        "compile a transformer block on npu, check it against eager, report times and kernel count"
    )
    configure = staticmethod(_configure)
    run = staticmethod(_run)


COMMAND = _Demo()
