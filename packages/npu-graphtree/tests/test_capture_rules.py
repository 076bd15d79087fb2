"""Graph trees under Ascend's capture rules (issue 37, catalogue X10), on npu-sim with the rules
on (its default): ops the device cannot capture in the middle of a model run between replays
(Dynamo's graph breaks at upstream defaults; Inductor's graph partitions inside a compiled
graph), each split said once and counted; a decode loop over more batch sizes than the graph
budget keeps within it by evicting the least recently replayed graph, and still replays; a
function the device refuses runs without a graph, said and counted, never silently."""

import importlib.util
import logging

import pytest
import torch

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("npu_lowering") is None,
    reason="needs npu-lowering (Inductor codegen for npu)",
)


def _setup():
    import npu_lowering
    import npu_sim

    import npu_graphtree

    npu_sim.start()
    npu_lowering.register()
    npu_graphtree.register()
    import npu_sim.config as sim_config

    assert sim_config.capture_rules, "the capture rules are on by default"
    torch._dynamo.reset()
    npu_graphtree.reset_trees()
    return npu_graphtree


def _manager():
    from npu_graphtree import tree

    return tree.get_manager("npu", 0, create=False)


class MaskedMiddle(torch.nn.Module):
    """Linear -> an op an NPU cannot capture -> linear."""

    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind
        self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)

    def forward(self, x):
        h = torch.relu(self.a(x))
        if self.kind == "mask":
            s = h[h > 0.1].sum()  # boolean mask indexing: data-dependent size
        elif self.kind == "nonzero":
            s = torch.nonzero(h).sum().to(h.dtype)
        elif self.kind == "unique":
            s = torch.unique(h.round()).sum()
        else:  # an .item()-driven branch
            s = h.sum() if h.sum().item() > 0 else -h.sum()
        return self.b(h + s)


@pytest.mark.feature("X10")
@pytest.mark.parametrize("kind", ["mask", "nonzero", "unique", "item"])
def test_an_uncapturable_op_in_the_middle_runs_between_replays_of_the_parts_around_it(kind):
    gt = _setup()
    torch.manual_seed(0)
    model = MaskedMiddle(kind).to("npu")
    compiled = torch.compile(model, mode="reduce-overhead")
    xs = [torch.randn(4, 8, device="npu") for _ in range(4)]
    with torch.no_grad():
        for x in xs:
            torch.testing.assert_close(compiled(x).cpu(), model(x).cpu(), atol=1e-5, rtol=1e-5)
    stats = _manager().stats()
    assert stats.get("eager.capture_refused", 0) == 0 and stats.get("eager", 0) == 0, stats
    assert stats["records"] >= 2 and stats["replays"] >= 2, stats  # the parts around it replay
    assert gt is not None


@pytest.mark.feature("X10")
def test_inductor_partitions_a_compiled_graph_around_an_uncapturable_fallback(caplog):
    """aten::median (an Inductor fallback, not capturable on an NPU) inside one compiled graph:
    Inductor's graph partition (upstream default graph_partition=True) keeps it out of the
    partitions, the tree captures the partitions, the split is said once and counted."""
    _setup()
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8).to("npu")

    def f(x):
        h = torch.relu(lin(x))
        return lin(h - torch.median(h, dim=-1, keepdim=True).values)

    compiled = torch.compile(f, mode="reduce-overhead")
    with caplog.at_level(logging.INFO, logger="npu_graphtree"), torch.no_grad():
        for _ in range(4):
            x = torch.randn(4, 8, device="npu")
            torch.testing.assert_close(compiled(x).cpu(), f(x).cpu(), atol=1e-5, rtol=1e-5)
    stats = _manager().stats()
    assert stats["splits"] == 1 and stats["split.aten::median.dim"] == 1, stats
    assert stats["partitions"] >= 2 and stats["replays"] >= 4 and stats.get("eager", 0) == 0, stats
    said = [
        r
        for r in caplog.records
        if r.name == "npu_graphtree" and "event=partition_split" in r.getMessage()
    ]
    assert len(said) == 1 and "aten::median.dim" in said[0].getMessage()


@pytest.mark.feature("X10")
def test_a_decode_loop_over_more_batch_sizes_than_the_budget_stays_within_it_and_replays(caplog):
    gt = _setup()
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 8).to("npu")
    compiled = torch.compile(lambda x: torch.relu(lin(x)) * 2, mode="reduce-overhead")
    budget, sizes = 3, [1, 2, 3, 4, 5, 6]
    with (
        gt.config.patch(max_live_graphs=budget),
        caplog.at_level(logging.INFO, logger="npu_graphtree"),
        torch.no_grad(),
    ):
        for _ in range(2):
            for n in sizes:
                for _ in range(3):  # a few decode steps per batch size
                    x = torch.randn(n, 8, device="npu")
                    torch.testing.assert_close(compiled(x).cpu(), (torch.relu(lin(x)) * 2).cpu())
                    assert _manager().live_graphs() <= budget
        stats = _manager().stats()
    assert stats["evictions"] > 0 and stats["replays"] >= len(sizes), stats
    assert stats.get("eager", 0) == 0 and stats["graphs_alive"] <= budget, stats
    evicted = [
        r for r in caplog.records if r.name == "npu_graphtree" and "event=evict" in r.getMessage()
    ]
    assert (
        evicted
        and evicted[0].levelno == logging.WARNING
        and "max_live_graphs" in evicted[0].getMessage()
    )


@pytest.mark.feature("X10")
def test_a_function_the_device_refuses_runs_without_a_graph_said_once_and_counted(caplog):
    """The Dynamo backend "npu_graphtree" (no Inductor, so no partition): a host read inside is
    refused by the device at capture; the function then runs eagerly, counted, said once with
    the device's error."""
    gt = _setup()

    def f(x):
        y = x * 2
        return y + float(torch.ops.aten.median(y))  # a host read of device data, and an aclop

    compiled = torch.compile(f, backend="npu_graphtree")
    x = torch.randn(6, device="npu")
    with caplog.at_level(logging.WARNING, logger="npu_graphtree"), torch.no_grad():
        outs = [compiled(x).cpu() for _ in range(4)]
    for out in outs:
        torch.testing.assert_close(out, f(x).cpu())
    stats = _manager().stats()
    assert stats["eager.capture_refused"] >= 1, stats
    said = [
        r
        for r in caplog.records
        if r.name == "npu_graphtree" and "kind=capture_refused" in r.getMessage()
    ]
    assert len(said) == 1 and "during NPU graph capture" in said[0].getMessage()
    assert gt is not None
