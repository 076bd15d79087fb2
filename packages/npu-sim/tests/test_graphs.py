"""Graph capture by recording (catalogue X02): capture records without executing, memory
handed out during capture is poisoned until replay, host sync during capture raises."""

import functools
import gc
import math

import pytest
import torch


def _capture(fn):
    g = torch.npu.NPUGraph()
    with torch.npu.graph(g):
        out = fn()
    return g, out


@pytest.mark.feature("X02")
def test_capture_records_instead_of_executing_and_poisons_outputs():
    x = torch.arange(8.0, device="npu")
    counter = torch.zeros(1, device="npu")
    g, (y, n) = _capture(lambda: ((x * 2).sin(), torch.arange(3, device="npu") + 1))
    counter_after = counter
    with torch.npu.graph(torch.npu.NPUGraph()):
        counter_after.add_(1)  # recorded, not run
    assert counter.cpu().item() == 0.0
    assert all(math.isnan(v) for v in y.cpu().tolist())  # floats read NaN before replay
    assert n.cpu().tolist() == [-1, -1, -1]  # integers read the 0xFF byte pattern
    assert g.recorded_ops and all(name.startswith("aten::") for name in g.recorded_ops)
    g.replay()
    assert torch.allclose(y.cpu(), (torch.arange(8.0) * 2).sin())
    assert n.cpu().tolist() == [1, 2, 3]


@pytest.mark.feature("X02")
def test_replay_runs_on_the_same_storages_with_new_inputs():
    static_in = torch.randn(16, device="npu")
    g, out = _capture(lambda: torch.relu(static_in @ torch.ones(16, 4, device="npu")))
    ptr = out.data_ptr()
    for _ in range(2):
        static_in.copy_(torch.randn(16))
        g.replay()
        assert out.data_ptr() == ptr
        assert torch.allclose(out.cpu(), torch.relu(static_in.cpu() @ torch.ones(16, 4)), atol=1e-5)
    assert g.replay_count == 2


@pytest.mark.feature("X02")
@pytest.mark.parametrize(
    "host_sync",
    [
        lambda t: torch.npu.synchronize(),
        lambda t: t.sum().item(),
        lambda t: t.cpu(),
        lambda t: torch.npu.current_stream().synchronize(),
    ],
)
def test_host_sync_or_read_during_capture_raises(host_sync):
    t = torch.ones(4, device="npu")
    g = torch.npu.NPUGraph()
    with pytest.raises(
        RuntimeError
    ) as info:  # the capture rules (on by default): the device's 507903
        with torch.npu.graph(g):
            host_sync(t + 1)
    assert "not allowed while a graph is being captured" in str(info.value.__context__)
    assert not torch.npu.is_current_stream_capturing()
    g.reset()  # an invalidated capture keeps its pool until reset, as on the device


def test_allocations_during_capture_come_from_the_graphs_pool_and_reset_frees_them():
    import npu_sim._runtime as rt

    gc.collect()  # refused captures of earlier tests: their tracebacks hold pool tensors until collected
    torch.npu.empty_cache()
    reserved = torch.npu.memory_reserved()
    static_in = torch.randn(1024, device="npu")
    g, out = _capture(
        functools.partial(torch.mul, static_in, 3)
    )  # no closure over the name deleted below
    assert out.data_ptr() in rt.ext()._pool_live_allocations(0, g.pool())
    del out
    g.reset()  # drops the graph's pool: its memory returns to the system
    del static_in
    torch.npu.empty_cache()
    assert torch.npu.memory_reserved() == reserved


def test_graphs_share_a_pool_handle():
    pool = torch.npu.graph_pool_handle()
    x = torch.ones(4, device="npu")
    g1, g2 = torch.npu.NPUGraph(), torch.npu.NPUGraph()
    with torch.npu.graph(g1, pool=pool):
        a = x + 1
    with torch.npu.graph(g2, pool=pool):
        b = a * 2
    assert g1.pool() == g2.pool() == pool
    g1.replay()
    g2.replay()
    assert b.cpu().tolist() == [4.0] * 4


def test_random_ops_draw_new_values_each_replay():
    torch.npu.manual_seed(0)
    g, r = _capture(lambda: torch.rand(6, device="npu"))
    g.replay()
    first = r.cpu().clone()
    g.replay()
    assert not torch.equal(first, r.cpu())  # the generator advances across replays


def test_capture_misuse_is_reported():
    g = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError, match="not captured"):
        g.replay()
    g.capture_begin()
    with pytest.raises(RuntimeError, match="already capturing"):
        torch.npu.NPUGraph().capture_begin()
    g.capture_end()
    with pytest.raises(RuntimeError, match="already captured"):
        g.capture_begin()
    with pytest.raises(ValueError, match="capture_error_mode"):
        torch.npu.NPUGraph().capture_begin(capture_error_mode="loose")
