"""Estimated NPU time of compiled models against an eager estimate (issue 39 item 4).

Per model (the reference set of ../shared/bench/README.md: the 1-kernel function, MLP8 at
width 256, the demo's transformer block; and the tiny transformers models of
npu_inductor.conformance.models), inference under torch.no_grad(), per SoC family (910B2 and
950, each in a process of its own: npu-sim's SoC is fixed when the device starts):

- eager: the model run on npu tensors with each ATen op priced as one aclnn op (its launch,
  its tensors' bytes, its MACs from torch's FLOP counter): npu_inductor_core.estimated_run;
- compiled: torch.compile's default mode; after the compiling call, one call with its
  Triton kernels priced from their work records (not run) and its remaining ATen ops
  (extern kernels, graph-break code) priced as aclnn ops.

Both are the cost model's figures (npu_inductor_core.cost_model; constants, sources and what
it ignores: the core README's "Cost model"), not measurements. Each compile starts from an
empty Inductor cache, so the kernels are what the current code generates.

    .venv/bin/python bench/estimate.py [--json bench/estimate.json] [--only mlp8,gpt2]
        [--socs Ascend910B2,Ascend950]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOCS = ("Ascend910B2", "Ascend950")
ATOL = RTOL = 1e-4
# a Triton kernel launch in the Python wrapper: a direct-launch slot or upstream's kernel.run
LAUNCH = re.compile(r"^\s*(?:_npu_dl\[\d+\]|\w+\.run)\(", re.M)


def reference_models() -> dict:
    """name -> build() -> (callable on npu, kwargs of npu tensors)."""
    import torch

    from npu_inductor.reference_models import MLP8, TransformerBlock

    def one_kernel():
        return (lambda a, b: (a + b) * 2.0), {
            "a": torch.randn(1024, device="npu"),
            "b": torch.randn(1024, device="npu"),
        }

    def mlp8():  # the bench README's MLP8: width 256, 8 layers, batch 4
        return MLP8(256, 8).eval().to("npu"), {"input": torch.randn(4, 256, device="npu")}

    def block():  # the demo's transformer block
        return TransformerBlock(64, 4).eval().to("npu"), {"x": torch.randn(2, 16, 64, device="npu")}

    return {"1-kernel function": one_kernel, "mlp8": mlp8, "transformer_block": block}


def transformers_models() -> dict:
    from npu_inductor.conformance import models as M

    def make(spec):
        def build():
            inputs = spec.inputs(spec.lengths[0])
            if spec.kind != "encoder-decoder":  # its labels make the decoder's inputs
                inputs.pop("labels", None)  # inference
            return spec.build().to("npu"), {k: v.to("npu") for k, v in inputs.items()}

        return build

    return {spec.name: make(spec) for spec in M.SPECS}


def _first_tensor(out):
    for attr in ("logits", "last_hidden_state"):
        if hasattr(out, attr):
            return getattr(out, attr)
    return out if hasattr(out, "shape") else out[0]


def measure(name: str, build) -> dict:
    """One model's row, in this process's SoC."""
    import torch
    from npu_inductor_core import cost_model
    from npu_inductor_core.device import device
    from npu_inductor_core.estimated_run import estimate_call
    from torch._inductor.utils import run_and_get_code

    torch.manual_seed(0)
    model, inputs = build()
    torch._dynamo.reset()
    with torch.no_grad():
        ref = _first_tensor(model(**inputs))
        eager = estimate_call(lambda: model(**inputs))
        compiled = torch.compile(model)
        out, sources = run_and_get_code(lambda: _first_tensor(compiled(**inputs)))
        comp = estimate_call(lambda: compiled(**inputs))
    dev = device(0)
    costs = cost_model.costs_for(dev)
    return {
        "model": name,
        "soc": dev.soc,
        "family": dev.family,
        "eager_us": round(eager.seconds * 1e6, 1),
        "compiled_us": round(comp.seconds * 1e6, 1),
        "eager_over_compiled": round(eager.seconds / comp.seconds, 2) if comp.seconds else None,
        "eager_aclnn_ops": eager.aten_ops,
        "kernels": comp.kernels,
        "compiled_aclnn_ops": comp.aten_ops,
        "kernel_launch_sites": sum(len(LAUNCH.findall(s)) for s in sources),
        "unpriced_kernels": len(comp.unpriced),
        "unpriced_names": sorted(set(comp.unpriced)),
        "matches_eager": bool(torch.allclose(out.cpu(), ref.cpu(), atol=ATOL, rtol=RTOL)),
        "model_kernel_launch_us": costs.kernel_launch_s * 1e6,
        "model_aclnn_launch_us": costs.aclnn_launch_s * 1e6,
    }


def child(only: list[str] | None) -> int:
    """Measures every selected model in this process; one JSON line per model."""
    import torch  # noqa: F401  (the backend and npu-sim autoload with torch)
    from npu_inductor import enable

    enable()
    models = {**reference_models(), **transformers_models()}
    for name, build in models.items():
        if only and not any(o in name for o in only):
            continue
        try:
            row = measure(name, build)
        except Exception as exc:  # a model that fails is a row, not the end of the run
            row = {"model": name, "error": f"{type(exc).__name__}: {exc}"[:500]}
        print("ROW " + json.dumps(row), flush=True)
    return 0


def run_soc(soc: str, only: str | None) -> list[dict]:
    with tempfile.TemporaryDirectory() as cache:
        env = {
            **os.environ,
            "NPU_SIM_SOC": soc,
            "TORCHINDUCTOR_CACHE_DIR": cache,  # what the current code compiles, not a cache hit
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
        }
        cmd = [sys.executable, __file__, "--child"] + (["--only", only] if only else [])
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    rows = [json.loads(line[4:]) for line in proc.stdout.splitlines() if line.startswith("ROW ")]
    if proc.returncode != 0:
        rows.append({"model": "(process)", "soc": soc, "error": proc.stderr[-2000:]})
    for r in rows:
        r.setdefault("soc", soc)
    return rows


# Published host enqueue times on a 910B2 (triton-ascend issue 1675: a tiny @triton.jit kernel
# through triton-ascend 3.2.2's C launcher, legacy and optimized, and eager torch.add), used
# in place of the model's assumed launch costs to show how far the ratio rests on them
PUBLISHED_LAUNCH = {
    "source": "https://github.com/triton-lang/triton-ascend/issues/1675",
    "triton_legacy_us": 23.654,
    "triton_optimized_us": 8.599,
    "eager_op_us": 12.142,
}


def with_published_launch(row: dict) -> dict:
    """eager / compiled with the model's launch costs replaced by the published ones."""
    if "error" in row:
        return {}
    k, a = row["model_kernel_launch_us"], row["model_aclnn_launch_us"]
    eager_op = PUBLISHED_LAUNCH["eager_op_us"]
    eager = row["eager_us"] + row["eager_aclnn_ops"] * (eager_op - a)
    out = {}
    for name in ("triton_legacy_us", "triton_optimized_us"):
        compiled = (
            row["compiled_us"]
            + row["kernels"] * (PUBLISHED_LAUNCH[name] - k)
            + row["compiled_aclnn_ops"] * (eager_op - a)
        )
        out[name.replace("_us", "")] = round(eager / compiled, 2)
    return out


HEADER = (
    "| model | SoC | eager est. (us) | compiled est. (us) | eager / compiled "
    "| aclnn ops eager | kernels + aclnn ops compiled | unpriced kernels "
    "| eager / compiled, published launch: legacy / optimized |"
)


def print_row(row: dict) -> None:
    if "error" in row:
        print(f"| {row['model']} | {row['soc']} | error: {row['error'][:120]} ||||||||", flush=True)
        return
    print(
        f"| {row['model']} | {row['soc']} | {row['eager_us']} | {row['compiled_us']} "
        f"| {row['eager_over_compiled']} | {row['eager_aclnn_ops']} "
        f"| {row['kernels']} + {row['compiled_aclnn_ops']} | {row['unpriced_kernels']} "
        f"| {row['published_launch']['triton_legacy']} "
        f"/ {row['published_launch']['triton_optimized']} |",
        flush=True,
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=ROOT / "bench/estimate.json")
    ap.add_argument("--only", help="comma-separated model names (substrings)")
    ap.add_argument("--socs", default=",".join(SOCS), help="npu-sim SoCs, one process each")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.only.split(",") if args.only else None)
    import torch

    print(HEADER)
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    for soc in args.socs.split(","):
        for row in run_soc(soc, args.only):
            row["published_launch"] = with_published_launch(row)
            print_row(row)
            rows.append(row)
    out = {
        "bench": "estimate",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} {platform.machine()} ({platform.processor() or 'cpu'})",
        "torch": torch.__version__,
        "device": "npu-sim",
        "published_launch": PUBLISHED_LAUNCH,
        "rows": rows,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1))
    print(f"wrote {args.json}")
    return 0 if all("error" not in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
