"""mode="reduce-overhead" on npu through Inductor (B03): Inductor's compiled npu graphs are
captured once and replayed from this package's tree of private pools."""

import importlib.util

import pytest
import torch

pytestmark = pytest.mark.skipif(importlib.util.find_spec("npu_lowering") is None,
                                reason="needs npu-lowering (Inductor codegen for npu)")


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
    npu_model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)).to("npu")
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
    assert manager is not None and manager.counters["replays"] >= 2  # calls 3 and 4 replayed the graph
