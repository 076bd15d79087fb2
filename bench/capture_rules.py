"""Reduce-overhead under Ascend's capture rules (issue 37 item 4): per model, the share of the
device's operations replayed from a graph, the partitions, graphs alive, splits and calls run
without a graph, on npu-sim with the capture rules on (its default).

    python bench/capture_rules.py [--calls N] [--json PATH]

Per model: torch.compile(model, mode="reduce-overhead"), no_grad, warm calls until the tree
replays, then --calls steady calls counted. "Operations" are what runs on the device: aten ops
through npu-sim's fallback (extern mm/addmm, fallback ops, the tree's input copies) and Triton
kernel launches; "replayed" are the recorded operations graph replays ran
(``npu_sim.launch.device_op_counts``). Goal: 100% wherever the device's rules allow it; what
stays outside is named (the split ops, graph breaks' eager code, the input copies).

Models: the reference set (../shared/bench/README.md: the 1-kernel function, MLP8 at width 256
batch 4, the transformer block of npu_inductor.reference_models), the tiny gpt2 of
npu_inductor.conformance.models, and two with an op an NPU cannot capture in the middle:
``median_middle`` (aten::median inside one compiled graph: Inductor partitions around it) and
``mask_middle`` (boolean-mask indexing: Dynamo breaks the graph there at upstream defaults).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def _models():
    from npu_inductor.reference_models import MLP8, TransformerBlock

    lin = torch.nn.Linear(8, 8)

    def median_middle(x):
        h = torch.relu(lin(x))
        return lin(h - torch.median(h, dim=-1, keepdim=True).values)

    def mask_middle(x):
        h = torch.relu(lin(x))
        return lin(h + h[h > 0.1].sum())

    def gpt2():
        from npu_inductor.conformance import models as M

        spec = M.BY_NAME["gpt2"]
        model = spec.build().to("npu")
        ids = spec.inputs(spec.lengths[0])["input_ids"].to("npu")
        return (lambda i: M.logits(model(input_ids=i))), ids

    torch.manual_seed(0)
    lin.to("npu")
    return {
        "one_kernel": lambda: (
            (lambda a, b: (a + b) * 2.0),
            (torch.randn(1024, device="npu"), torch.randn(1024, device="npu")),
        ),
        "mlp8": lambda: (MLP8().to("npu").eval(), (torch.randn(4, 256, device="npu"),)),
        "transformer_block": lambda: (
            TransformerBlock(64, 4).to("npu").eval(),
            (torch.randn(2, 16, 64, device="npu"),),
        ),
        "gpt2_tiny": lambda: (lambda f, x: (f, (x,)))(*gpt2()),
        "median_middle": lambda: (median_middle, (torch.randn(4, 8, device="npu"),)),
        "mask_middle": lambda: (mask_middle, (torch.randn(4, 8, device="npu"),)),
    }


def run_case(name, make, calls):
    import npu_graphtree
    from npu_graphtree import tree
    from npu_sim.launch import device_op_counts

    torch._dynamo.reset()
    npu_graphtree.reset_trees()
    fn, args = make()
    compiled = torch.compile(fn, mode="reduce-overhead")
    with torch.no_grad():
        for _ in range(3):  # warmup, record, first replay
            compiled(*args)
        eager0, replayed0 = device_op_counts()
        for _ in range(calls):
            compiled(*args)
        eager1, replayed1 = device_op_counts()
    stats = tree.get_manager("npu", 0).stats()
    outside, replayed = eager1 - eager0, replayed1 - replayed0
    total = outside + replayed
    return {
        "model": name,
        "replayed_share": replayed / total if total else 0.0,
        "ops_per_call": total / calls,
        "outside_per_call": outside / calls,
        "partitions": stats.get("partitions", 0),
        "splits": sorted(k.split(".", 1)[1] for k in stats if k.startswith("split.")),
        "graphs_alive": stats["graphs_alive"],
        "graph_budget": stats["graph_budget"],
        "records": stats.get("records", 0),
        "replays": stats.get("replays", 0),
        "eager_calls": stats.get("eager", 0),
        "capture_refused": stats.get("eager.capture_refused", 0),
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=5)
    p.add_argument("--models", default="")
    p.add_argument("--json")
    a = p.parse_args()
    import npu_inductor
    import npu_sim.config

    npu_inductor.enable()
    assert npu_sim.config.capture_rules, (
        "run with the capture rules on (unset NPU_SIM_CAPTURE_RULES)"
    )
    models = _models()
    names = [m for m in a.models.split(",") if m] or list(models)
    rows = [run_case(n, models[n], a.calls) for n in names]
    print(
        "| model | replayed from a graph | device ops / call | outside a graph / call | partitions | split ops "
        "| graphs alive (budget) | calls without a graph |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['model']} | {100 * r['replayed_share']:.1f}% | {r['ops_per_call']:.1f} | "
            f"{r['outside_per_call']:.1f} | {r['partitions']} | {', '.join(r['splits']) or '-'} | "
            f"{r['graphs_alive']} ({r['graph_budget']}) | {r['eager_calls']} |"
        )
    meta = {"torch": torch.__version__, "python": sys.version.split()[0], "calls": a.calls}
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
