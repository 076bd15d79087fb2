"""GM bytes the LLM workloads' kernels move when they run, ours next to upstream's plan and the
minimum (issue 38, deliverable 2).

``bench/fusion.py --llm`` reports Inductor's compile-time count, which takes a combo kernel's
on-chip intermediates as stored and a gathered table as read whole. Here each workload of
bench/llm_workloads.py runs in npu-sim (Triton's interpreter) and every load, store and atomic
its kernels execute is counted (bench/gm_traffic.py): inference (no_grad) and, for the
workloads with a training direction, the forward and the backward of a training step
separately. Minimum, inference: each input read once (a gathered table: the rows read), each
output written once (llm_workloads.minimum_gm_bytes). Minimum, backward: the output gradients
and the forward's inputs read once (the cos/sin cache: the rows read), the input gradients
written once; a backward that stores nothing in the forward and recomputes from the inputs
reaches it.

    .venv/bin/python bench/fusion_llm_traffic.py [--tokens 1,16,256] [--dtypes bfloat16]
        [--only qk_norm_rope] [--json bench/fusion_llm_traffic.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import gm_traffic  # noqa: E402
import llm_workloads as W  # noqa: E402
from fusion import VARIANTS, _counted  # noqa: E402


def _tensors(xs) -> list[torch.Tensor]:
    return [x for x in (xs if isinstance(xs, (tuple, list)) else (xs,)) if torch.is_tensor(x)]


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def backward_minimum(w: W.Workload, args: tuple, outs, grads) -> int:
    """Output gradients and forward inputs read once (a gathered table: its rows read), the
    differentiated inputs' gradients written once."""
    read = sum(_nbytes(g) for g in grads)
    for i, a in enumerate(args):
        if not torch.is_tensor(a):
            continue
        if w.gather and i == w.gather[0]:
            read += _nbytes(a[0]) * args[w.gather[1]].unique().numel()
        else:
            read += _nbytes(a)
    written = sum(_nbytes(a) for a in args if torch.is_tensor(a) and a.requires_grad)
    return read + written


def inference(w: W.Workload, args: tuple, variant: dict) -> dict:
    compiled = torch.compile(w.fn, dynamic=False)
    with torch.no_grad():
        counts, out = _counted(lambda: compiled(*args), variant)
        with gm_traffic.counting() as moved:
            compiled(*args)
    return {
        "kernels": counts["kernels"],
        "moved": moved.total,
        "minimum": W.minimum_gm_bytes(args, out, w.gather),
    }


def training(w: W.Workload, args: tuple, variant: dict) -> dict:
    targs = W.trainable(w, args)
    compiled = torch.compile(w.fn, dynamic=False)
    g = torch.Generator().manual_seed(1)
    state = {}

    def step():
        outs = [o for o in _tensors(compiled(*targs)) if o.requires_grad]
        grads = state.setdefault(
            "grads",
            [torch.randn(o.shape, generator=g).to(o.device, o.dtype) for o in outs],
        )
        torch.autograd.backward(outs, grads)
        return outs

    counts, _ = _counted(step, variant)
    for a in targs:
        if torch.is_tensor(a):
            a.grad = None
    with gm_traffic.counting() as forward:
        outs = [o for o in _tensors(compiled(*targs)) if o.requires_grad]
    with gm_traffic.counting() as backward:
        torch.autograd.backward(outs, state["grads"])
    return {
        "kernels": counts["kernels"],
        "forward_moved": forward.total,
        "backward_moved": backward.total,
        "backward_minimum": backward_minimum(w, targs, outs, state["grads"]),
    }


def rows(tokens: list[int], dtypes: list[str], only: str | None, done=None) -> list[dict]:
    """Each workload's row per dtype and token count; ``done(rows)`` after each (the JSON is
    written as rows finish: the interpreter takes minutes a row at 256 tokens)."""
    out = []
    for w, dtype, t, args in W.cases(tokens, dtypes, only):
        row = {"workload": w.name, "tokens": t, "dtype": dtype}
        for name, variant in VARIANTS.items():
            row[name] = {"inference": inference(w, args, variant)}
            if w.trains:
                row[name]["training"] = training(w, args, variant)
        out.append(row)
        print_row(row)
        if done:
            done(out)
    return out


def print_row(row: dict) -> None:
    p, u = row["policy"], row["upstream"]
    pi, ui = p["inference"], u["inference"]
    m = pi["minimum"]
    line = (
        f"| {row['workload']} | {row['tokens']} | {pi['moved']:,} ({pi['moved'] / m:.2f}x) "
        f"| {ui['moved']:,} ({ui['moved'] / m:.2f}x) | {m:,} |"
    )
    if "training" in p:
        pt, ut = p["training"], u["training"]
        bm = pt["backward_minimum"]
        line += (
            f" {pt['backward_moved']:,} ({pt['backward_moved'] / bm:.2f}x)"
            f" | {ut['backward_moved']:,} ({ut['backward_moved'] / bm:.2f}x) | {bm:,} |"
        )
    else:
        line += " - | - | - |"
    print(line, flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", default="1,16,256")
    ap.add_argument("--dtypes", default="bfloat16")
    ap.add_argument("--only")
    ap.add_argument("--json", type=Path, default=ROOT / "bench/fusion_llm_traffic.json")
    a = ap.parse_args(argv)
    import npu_inductor

    npu_inductor.enable()
    print(
        "| workload | tokens | inference, ours | upstream's plan | minimum |"
        " backward, ours | upstream's plan | minimum |"
    )
    print("|---|---|---|---|---|---|---|---|")

    def write(result):
        a.json.write_text(
            json.dumps(
                {
                    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                        timespec="minutes"
                    ),
                    "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
                    "torch": torch.__version__,
                    "rows": result,
                },
                indent=1,
            )
        )

    rows([int(t) for t in a.tokens.split(",")], a.dtypes.split(","), a.only, write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
