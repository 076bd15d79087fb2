"""mode="reduce-overhead" on npu through Inductor (B03): Inductor's compiled npu graphs are
captured once and replayed from this package's tree of private pools."""

import importlib.util

import pytest
import torch

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("npu_lowering") is None,
    reason="needs npu-lowering (Inductor codegen for npu)",
)


@pytest.mark.feature("B03")
def test_reduce_overhead_captures_inductor_npu_graphs_and_replays_them():
    import npu_lowering
    import npu_sim

    import npu_graphtree

    npu_sim.start()

    npu_lowering.register()
    npu_graphtree.register()
    torch._dynamo.reset()
    npu_graphtree.reset_trees()
    npu_graphtree.clear_timings()
    torch.manual_seed(0)
    npu_model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)
    ).to("npu")
    compiled = torch.compile(npu_model, mode="reduce-overhead")
    x = torch.randn(4, 16, device="npu")
    with torch.no_grad():
        outs = [compiled(x).cpu() for _ in range(4)]
        ref = npu_model.cpu()(x.cpu())
    for out in outs:
        torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    phases = [t.phase for t in npu_graphtree.timings()]
    assert phases.count("warmup") == 1 and phases.count("record") == 1, phases
    manager = npu_graphtree.tree.get_manager("npu", 0, create=False)
    assert (
        manager is not None and manager.counters["replays"] >= 2
    )  # calls 3 and 4 replayed the graph


def test_inference_with_grad_enabled_is_said_once_and_counted(caplog):
    """Issue 24 item 4: a reduce-overhead forward whose outputs never reach a backward (inference
    with grad on) is logged once with the remedy and counted per call; a step that runs its
    backward, or a no_grad step, is not."""
    import logging

    import npu_lowering
    import npu_sim

    import npu_graphtree

    npu_sim.start()
    npu_lowering.register()
    npu_graphtree.register()
    torch._dynamo.reset()
    npu_graphtree.reset_trees()
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8).to("npu")
    compiled = torch.compile(lambda x: torch.relu(lin(x)), mode="reduce-overhead")
    x = torch.randn(2, 8, device="npu")

    def steps(n, backward=False):
        for _ in range(n):
            torch.compiler.cudagraph_mark_step_begin()
            y = compiled(x)
            if backward:
                y.sum().backward()

    def count():
        return npu_graphtree.tree.get_manager("npu", 0, create=False).counters[
            "forward_without_backward"
        ]

    with caplog.at_level(logging.WARNING, logger="npu_graphtree"):
        steps(4, backward=True)
        assert count() == 0
        steps(4)  # grad on, no backward
        assert count() >= 3
        with torch.no_grad():
            before = count()
            steps(3)
    assert count() <= before + 1  # only the last grad-on step, ended by the first no_grad one
    warned = [
        r
        for r in caplog.records
        if r.name == "npu_graphtree" and "forward_without_backward" in r.getMessage()
    ]
    assert len(warned) == 1 and "torch.no_grad()" in warned[0].getMessage()
