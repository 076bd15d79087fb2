"""The reference models and the tiny transformers models under ``mode="reduce-overhead"`` on
npu-sim with Ascend's capture rules on (issue 37 item 3, catalogue X10): each matches eager,
its graphs are captured and replayed, and no call ran without a graph (a refusal would be
``eager.capture_refused``). Upstream defaults, no_grad, tiny shapes."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # configs only, never the hub
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ATOL, RTOL = 1e-4, 1e-4  # fp32; compiled kernels reassociate sums


def _fresh():
    import npu_inductor
    import npu_sim.config

    import npu_graphtree

    npu_inductor.enable()
    assert npu_sim.config.capture_rules, "the capture rules are on by default"
    torch._dynamo.reset()
    npu_graphtree.reset_trees()


def _stats():
    from npu_graphtree import tree

    return tree.get_manager("npu", 0).stats()


def _check(run, calls=3):
    """Calls 1..calls of a compiled model against eager; then the tree's view of them."""
    with torch.no_grad():
        for i in range(calls):
            got, want = run(i)
            torch.testing.assert_close(got, want, atol=ATOL, rtol=RTOL)
    stats = _stats()
    assert stats.get("eager", 0) == 0, stats  # no call without a graph, refused or otherwise
    assert stats["records"] >= 1 and stats["replays"] >= 1, stats
    assert stats["graphs_alive"] <= stats["graph_budget"], stats
    return stats


def _reference(name):
    from npu_inductor.reference_models import MLP8, TransformerBlock

    torch.manual_seed(0)
    if name == "one_kernel":
        model, x = (lambda a: (a + a) * 2.0), torch.randn(64)
    elif name == "mlp8":
        model, x = MLP8(dim=16, layers=2), torch.randn(4, 16)
    else:
        model, x = TransformerBlock(64, 4), torch.randn(2, 16, 64)  # test_user_conditions' size
    if isinstance(model, torch.nn.Module):
        model = model.to("npu").eval()
    return model, x.to("npu")


@pytest.mark.feature("X10")
@pytest.mark.parametrize("name", ["one_kernel", "mlp8", "transformer_block"])
def test_reference_models_replay_under_the_capture_rules(name):
    _fresh()
    model, x = _reference(name)
    compiled = torch.compile(model, mode="reduce-overhead")
    _check(lambda i: (compiled(x + i).cpu(), model(x + i).cpu()))


@pytest.mark.parametrize("arch", ["gpt2", "llama", "bert", "vit"])
def test_tiny_transformers_models_replay_under_the_capture_rules(arch):
    pytest.importorskip("transformers")
    from npu_inductor.conformance import models as M

    _fresh()
    spec = M.BY_NAME[arch]
    model = spec.build().to("npu")
    inputs = {
        k: v for k, v in M.to_device(spec.inputs(spec.lengths[0]), "npu").items() if k != "labels"
    }
    compiled = torch.compile(model, mode="reduce-overhead")
    _check(lambda i: (M.logits(compiled(**inputs)).cpu(), M.logits(model(**inputs)).cpu()))
