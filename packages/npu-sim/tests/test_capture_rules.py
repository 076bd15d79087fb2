"""Capture by Ascend's rules (issue 37, catalogue X10): during capture npu-sim refuses what an
NPU under torch_npu refuses -- an op outside the capturable set, a host synchronization or
read, a synchronous host-to-device copy, an op whose output size depends on the data -- with
torch_npu's message and code, and the capture is invalidated (capture_end raises 507903, the
graph never replays); the device's stream budget counts live captured graphs. The rules are
on by default; ``npu_sim.config.capture_rules`` / ``NPU_SIM_CAPTURE_RULES=off`` relax them."""

import pytest
import torch

import npu_sim.capture_rules as rules
import npu_sim.config as sim_config


def _refused(fn):
    """Capture fn; return (the error capture_end raised, the error that invalidated the capture)."""
    g = torch.npu.NPUGraph()
    with pytest.raises(RuntimeError) as info:
        with torch.npu.graph(g):
            fn()
    assert not torch.npu.is_current_stream_capturing()
    with pytest.raises(RuntimeError, match="not captured.*invalidated"):
        g.replay()  # an invalidated capture never replays
    invalidated = g.invalidated
    g.reset()  # its pool goes now, not whenever the traceback holding it is collected
    return str(info.value), str(info.value.__context__), invalidated


@pytest.mark.feature("X10")
def test_an_op_outside_the_capturable_set_raises_torch_npus_aclop_error_and_invalidates_the_capture():
    x = torch.randn(4, 5, device="npu")
    assert not rules.is_capturable("aten::median.dim")
    end, first, g = _refused(lambda: torch.median(x, dim=-1))
    assert (
        "Cannot run aclop operators during NPU graph capture. Current working aclop is aten::median"
        in first
    )
    assert "ERR00007 PTA feature not supported" in first
    assert "error code is 507903" in end and "ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED" in end
    assert "aten::median" in g
    _, first, _ = _refused(lambda: x[x > 0])  # boolean mask indexing runs nonzero first
    assert "Current working aclop is aten::nonzero" in first
    # what the list holds captures, and so do its in-place and out= variants
    y = torch.zeros(4, 5, device="npu")
    g2 = torch.npu.NPUGraph()
    with torch.npu.graph(g2):
        y.add_(x.sigmoid())
    g2.replay()
    torch.testing.assert_close(y.cpu(), x.cpu().sigmoid())
    g2.reset()


@pytest.mark.feature("X10")
@pytest.mark.parametrize(
    "what,call,host",
    [
        ("device synchronize", "aclrtSynchronizeDevice", lambda t: torch.npu.synchronize()),
        (
            "stream synchronize",
            "aclrtSynchronizeStream",
            lambda t: torch.npu.current_stream().synchronize(),
        ),
        (".item()", "aclrtMemcpy", lambda t: t.sum().item()),
        ("to the host", "aclrtMemcpy", lambda t: t.cpu()),
        ("synchronous host-to-device copy", "aclrtMemcpy", lambda t: t.copy_(torch.ones(4))),
        # an output size that depends on the data (the repeat counts): read back to the host
        ("data-dependent output size", "aclrtMemcpy", lambda t: t.repeat_interleave(t.long())),
    ],
)
def test_host_syncs_and_reads_raise_the_runtimes_107030_and_invalidate_the_capture(
    what, call, host
):
    t = torch.ones(4, device="npu")
    end, first, _ = _refused(lambda: host(t + 1))
    assert f"NPU function error: {call}, error code is 107030" in first, first
    assert "ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT" in first and "ERR00100" in first
    assert "507903" in end


@pytest.mark.feature("X10")
def test_rules_off_record_what_npu_sim_can_and_still_refuse_reading_unrun_work():
    x = torch.randn(4, 5, device="npu")
    with sim_config.patch(capture_rules=False):
        g = torch.npu.NPUGraph()
        with torch.npu.graph(g):
            m = torch.median(x, dim=-1).values
        g.replay()
        torch.testing.assert_close(m.cpu(), torch.median(x.cpu(), dim=-1).values)
        g.reset()
        with pytest.raises(
            RuntimeError, match="not allowed while a graph is being captured"
        ) as info:
            with torch.npu.graph(torch.npu.NPUGraph()):
                (x + 1).sum().item()
        assert "107030" not in str(info.value)


def test_the_environment_sets_the_default(run_python):
    out = run_python(
        """
        import torch, npu_sim.config as c
        print(c.capture_rules)
        g = torch.npu.NPUGraph()
        x = torch.randn(3, device="npu")
        with torch.npu.graph(g):
            torch.median(x)
        print("recorded")
    """,
        env={"NPU_SIM_CAPTURE_RULES": "off"},
    )
    assert out.stdout.split() == ["False", "recorded"]


@pytest.mark.feature("X10")
def test_the_capturable_set_is_torch_npus_list_plus_our_ops():
    table = rules.table()
    assert all(op.startswith("aten::") for op in table)
    assert (
        table["aten::mm"].startswith("api:")
        and "npu-sim" in table["aten::_scaled_dot_product_flash_attention_for_cpu"]
    )
    for op in ("aten::nonzero", "aten::_unique2", "aten::masked_select", "aten::median"):
        assert not rules.is_capturable(op) and "not capturable" in rules.uncapturable_reason(op)
    assert rules.is_capturable("aten::add_.Tensor") and rules.is_capturable("aten.mul.out")


@pytest.mark.feature("X10")
def test_live_graphs_and_streams_share_the_devices_stream_budget():
    from npu_sim.npu import budget

    x = torch.ones(4, device="npu")
    with torch.npu.graph(torch.npu.NPUGraph()):  # the default capture stream exists from here
        x + 1
    used = budget.live_graphs(0) + budget.live_streams(0) + 1
    with sim_config.patch(max_streams_per_device=used + 2):
        kept = []
        for _ in range(2):
            g = torch.npu.NPUGraph()
            with torch.npu.graph(g):
                x * 2
            kept.append(g)
        with pytest.raises(
            RuntimeError, match="error code is 207008.*ACL_ERROR_RT_NO_STREAM_RESOURCE"
        ):
            torch.npu.NPUGraph().capture_begin()
        with pytest.raises(RuntimeError, match="207008"):
            torch.npu.Stream()
        kept[0].reset()  # a reset graph gives its stream back
        g = torch.npu.NPUGraph()
        with torch.npu.graph(g):
            x * 3
        g.replay()
        for graph in (g, *kept):
            graph.reset()
