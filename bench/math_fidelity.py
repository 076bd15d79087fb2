"""Math-library fidelity of compiled npu kernels against eager (issue 19 item 4).

For each math function Inductor emits, on float32, float16 and bfloat16, compile it on npu
(npu-sim: the kernels run the portable libdevice of ``npu_lowering.runtime.libdevice_portable``,
the same Triton source triton-ascend compiles) and compare with eager on the CPU (npu-sim's
eager is the CPU kernels). Inputs: a grid over the function's domain, magnitudes 10^k, and
edge values (+-0, +-inf, nan, +-smallest normal, +-smallest subnormal, +-max, huge
arguments). Reported per function and dtype: the max ulp distance in the output dtype over
inputs where both results are finite, the count of special-value disagreements (nan vs
number, inf vs finite, sign of a zero), whether ``torch.testing.assert_close`` with its
default tolerances for the dtype passes (equal_nan), and the kernel's math call.

    .venv/bin/python bench/math_fidelity.py [--json out.json] [--only erf,tanh]

Numbers go to the npu-lowering README ("Math library fidelity"); no test asserts them.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import warnings

import torch

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def edges(dtype) -> list[float]:
    fi = torch.finfo(dtype)
    sub = fi.smallest_normal * fi.eps  # the smallest subnormal
    vals = [
        0.0,
        -0.0,
        math.inf,
        -math.inf,
        math.nan,
        fi.tiny,
        -fi.tiny,
        sub,
        -sub,
        fi.max,
        -fi.max,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        2.5,
        -2.5,
        3.5,
        1e4,
        -1e4,
        1e30,
        -1e30,
        88.7,
        -103.9,
        11.1,
        -9.1,
    ]
    return vals


def grid(dtype, lo=-10.0, hi=10.0) -> torch.Tensor:
    mags = [10.0**k for k in range(-38, 39, 2)]
    vals = torch.linspace(lo, hi, 2001).tolist() + mags + [-m for m in mags] + edges(dtype)
    return torch.tensor(vals, dtype=torch.float32).to(dtype)


def unit(dtype):
    return torch.cat([torch.linspace(-1, 1, 2001), torch.tensor(edges(dtype))]).to(dtype)


def positive(dtype):
    return torch.cat([torch.linspace(-0.999, 20, 2001), torch.tensor(edges(dtype))]).to(dtype)


def pairs(dtype):
    e = torch.tensor(edges(dtype))
    a, b = torch.meshgrid(e, e, indexing="ij")
    g = torch.linspace(-8, 8, 41)
    ga, gb = torch.meshgrid(g, g, indexing="ij")
    return (
        torch.cat([a.flatten(), ga.flatten()]).to(dtype),
        torch.cat([b.flatten(), gb.flatten()]).to(dtype),
    )


UNARY = {
    "erf": (torch.erf, grid),
    "erfinv": (torch.erfinv, unit),
    "tanh": (torch.tanh, grid),
    "exp": (torch.exp, grid),
    "exp2": (torch.exp2, grid),
    "expm1": (torch.expm1, grid),
    "log": (torch.log, positive),
    "log1p": (torch.log1p, positive),
    "sin": (torch.sin, grid),
    "cos": (torch.cos, grid),
    "sigmoid": (torch.sigmoid, grid),
    "rsqrt": (torch.rsqrt, positive),
    "round": (torch.round, grid),
    "floor": (torch.floor, grid),
    "trunc": (torch.trunc, grid),
    "ceil": (torch.ceil, grid),
    "signbit": (torch.signbit, grid),
    "isnan": (torch.isnan, grid),
    "isinf": (torch.isinf, grid),
    "lgamma": (torch.lgamma, grid),
    "erfc": (torch.erfc, grid),
    "bessel_j0": (torch.special.bessel_j0, grid),
    "bessel_j1": (torch.special.bessel_j1, grid),
    "i0": (torch.special.i0, grid),
    "i1": (torch.special.i1, grid),
    "erfcx": (torch.special.erfcx, grid),
    "atan": (torch.atan, grid),
    "asinh": (torch.asinh, grid),
}
BINARY = {
    "pow": torch.pow,
    "atan2": torch.atan2,
    "fmod": torch.fmod,
    "remainder": torch.remainder,
}
CALL = re.compile(r"\b(libdevice|tl_math|triton_helpers|tl)\.(\w+)\(")
NOT_MATH = {
    "load",
    "store",
    "full",
    "arange",
    "where",
    "broadcast_to",
    "program_id",
    "num_programs",
    "cdiv",
    "range",
    "minimum",
    "maximum",
    "static_assert",
    "device_assert",
    "zeros",
    "reshape",
}


def ordered(t: torch.Tensor) -> torch.Tensor:
    """Float bits as integers ordered like the floats (-0 and +0 both 0)."""
    bits = {torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}[
        t.dtype
    ]
    i = t.view(bits).to(torch.int64)
    lo = -(2 ** (torch.iinfo(bits).bits - 1))
    return torch.where(i < 0, lo - i, i)


SHOW = 0  # --show: examples of disagreements printed per function and dtype


def examples(args, out, ref) -> list:
    same = (
        (out == ref) | (torch.isnan(out) & torch.isnan(ref))
        if out.dtype != torch.bool
        else out == ref
    )
    if out.dtype != torch.bool:
        same &= torch.signbit(out) == torch.signbit(ref)
    idx = (~same).nonzero().flatten()
    if out.dtype != torch.bool and idx.numel():  # the worst first
        err = (ordered(out) - ordered(ref)).abs()[idx]
        err = torch.where(
            torch.isfinite(out[idx]) & torch.isfinite(ref[idx]), err, torch.iinfo(torch.int64).max
        )
        idx = idx[err.argsort(descending=True)]
    return [
        (tuple(float(a[i]) for a in args), float(out[i]), float(ref[i]))
        for i in idx[:SHOW].tolist()
    ]


def compare(out: torch.Tensor, ref: torch.Tensor) -> dict:
    if out.dtype == torch.bool:
        bad = int((out != ref).sum())
        return {"max_ulp": 0 if bad == 0 else None, "special": bad, "assert_close": bad == 0}
    both = torch.isfinite(out) & torch.isfinite(ref)
    ulp = (ordered(out) - ordered(ref)).abs()[both]
    nan_mismatch = torch.isnan(out) != torch.isnan(ref)
    inf_mismatch = (
        (torch.isinf(out) | torch.isinf(ref))
        & ~(out == ref)
        & ~torch.isnan(out)
        & ~torch.isnan(ref)
    )
    zero_sign = (out == 0) & (ref == 0) & (torch.signbit(out) != torch.signbit(ref))
    try:
        torch.testing.assert_close(out, ref, equal_nan=True)
        close = True
    except AssertionError:
        close = False
    return {
        "max_ulp": int(ulp.max()) if ulp.numel() else 0,
        "special": int((nan_mismatch | inf_mismatch | zero_sign).sum()),
        "assert_close": close,
    }


def measure(name: str, fn, args: tuple) -> dict:
    try:
        ref = fn(*args)
        exact = fn(*(a.double() for a in args)).to(ref.dtype)  # float64 eager, rounded once
    except (RuntimeError, NotImplementedError) as exc:
        return {"skipped": f"eager: {str(exc).splitlines()[0][:80]}"}
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    try:
        out, codes = run_and_get_code(
            torch.compile(fn, dynamic=False), *(a.to("npu") for a in args)
        )
    except Exception as exc:  # noqa: BLE001 (a report, not a test)
        return {"skipped": f"compile: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"}
    kernel = "\n".join(c.split("@triton.jit", 1)[-1] for c in codes)
    calls = sorted({f"{m}.{f}" for m, f in CALL.findall(kernel) if f not in NOT_MATH})
    result = {**compare(out.cpu(), ref), "calls": calls}
    if ref.dtype.is_floating_point:  # the same distance to float64 eager (eager's own error apart)
        result["max_ulp_f64"] = compare(out.cpu(), exact)["max_ulp"]
    if SHOW:
        result["examples"] = examples(args, out.cpu(), ref)
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--only", default="")
    ap.add_argument("--show", type=int, default=0, help="print this many disagreements per case")
    ns = ap.parse_args()
    global SHOW
    SHOW = ns.show
    only = set(filter(None, ns.only.split(",")))
    warnings.simplefilter("ignore")
    results: dict[str, dict[str, dict]] = {}
    for name, (fn, inputs) in UNARY.items():
        if only and name not in only:
            continue
        results[name] = {
            str(d).removeprefix("torch."): measure(name, fn, (inputs(d),)) for d in DTYPES
        }
        print(name, results[name], flush=True)
    for name, fn in BINARY.items():
        if only and name not in only:
            continue
        results[name] = {str(d).removeprefix("torch."): measure(name, fn, pairs(d)) for d in DTYPES}
        print(name, results[name], flush=True)
    print(
        "\n| function | kernel call | fp32 max ulp | fp16 max ulp | bf16 max ulp | fp32 ulp vs float64 | special-value mismatches (32/16/bf16) | assert_close (32/16/bf16) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, per in results.items():
        cells = [per[k] for k in ("float32", "float16", "bfloat16")]
        calls = next((", ".join(c["calls"]) for c in cells if c.get("calls")), "")
        ulps = [("n/a" if "skipped" in c else str(c["max_ulp"])) for c in cells]
        special = "/".join("-" if "skipped" in c else str(c["special"]) for c in cells)
        close = "/".join(
            "-" if "skipped" in c else ("yes" if c["assert_close"] else "NO") for c in cells
        )
        f64 = cells[0].get("max_ulp_f64", "n/a" if "skipped" in cells[0] else "-")
        print(f"| {name} | `{calls}` | {' | '.join(ulps)} | {f64} | {special} | {close} |")
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
