"""No silent slow path (issue 24 item 4): every call that runs without a graph, and every step
a pending backward keeps from starting, is counted in the tree's counters and said once per
function and kind with the reason and the remedy."""

import logging

import pytest
import torch

import npu_graphtree as G


def _said(caplog, text):
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "npu_graphtree" and text in r.getMessage()
    ]


@pytest.mark.feature("GT09")
def test_rerecord_limit_fallback_is_counted_per_call_and_said_once_with_the_remedy(
    h, inductor_patch, caplog
):
    inductor_patch({"triton.cudagraph_unexpected_rerecord_limit": 1})
    with caplog.at_level(logging.WARNING, logger="npu_graphtree"):
        h.read_moving_pool_outputs(steps=12)
    c = h.manager().counters
    assert c["eager.rerecord_limit"] >= 3 and c["eager"] == c["eager.rerecord_limit"], dict(c)
    said = _said(caplog, "kind=rerecord_limit")
    assert len(said) == 1 and "function=consumer" in said[0]
    assert "cudagraph_unexpected_rerecord_limit" in said[0].split("remedy=")[1]


@pytest.mark.feature("GT01")
def test_steps_kept_from_starting_by_a_pending_backward_are_counted_and_said_once(h, caplog):
    G.register()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).to(
        h.dev
    )
    compiled = torch.compile(model, backend="npu_graphtree")
    for _ in range(3):  # warmup, record, replay with the backward run each step
        compiled(h.rand(4, 8)).sum().backward()
    assert h.manager().counters["pending_backward"] == 0
    with (
        caplog.at_level(logging.WARNING, logger="npu_graphtree"),
        pytest.warns(UserWarning, match="wait for backward"),
    ):
        held = [
            compiled(h.rand(4, 8)).sum() for _ in range(4)
        ]  # each a new invocation, none backwarded yet
    for loss in held:
        loss.backward()
    assert h.manager().counters["pending_backward"] >= 3
    said = _said(caplog, "event=pending_backward")
    assert len(said) == 1 and "torch.no_grad()" in said[0].split("remedy=")[1]


@pytest.mark.feature("GT11")
def test_sizes_not_captured_are_counted_in_the_tree(h, inductor_patch, caplog):
    inductor_patch({"triton.cudagraph_capture_sizes": (4,)})
    f = G.graphify(lambda a: [a[0][: a[1]] * 2], [h.rand(8), 4], name="sized")
    with caplog.at_level(logging.WARNING, logger="npu_graphtree"):
        for n in (4, 4, 4, 3, 3, 5):
            h.step()
            x = h.rand(8)
            (out,) = f([x, n])
            torch.testing.assert_close(out, x[:n] * 2)
    c = h.manager().counters
    assert c["eager.size_not_captured"] == 3 and c["records"] == 1, dict(c)
    said = _said(caplog, "kind=size_not_captured")
    assert (
        len(said) == 1 and "cudagraph_capture_sizes" in said[0].split("remedy=")[1]
    )  # once per function and kind


def test_inputs_on_another_device_after_recording_still_run_without_capture(h, caplog):
    """The device check runs only when no recorded graph matches (a replay proves its inputs):
    a host tensor arriving after the graph was recorded is still refused, counted and said."""
    f = G.graphify(lambda a: [a[0] * 2 + a[1]], [h.rand(4), h.rand(4)], [1], name="late_cpu")
    w = h.rand(4)
    for _ in range(3):
        h.step()
        x = h.rand(4)
        torch.testing.assert_close(f([x, w])[0], x * 2 + w)
    assert h.manager().counters["replays"] == 1
    with caplog.at_level(logging.WARNING, logger="npu_graphtree"):
        h.step()
        x = torch.ones(4)
        with pytest.raises(
            RuntimeError
        ):  # eager's own error for mixed devices, not a capture of host memory
            f([x, w])
    c = h.manager().counters
    assert c["eager.unsupported_inputs"] == 1 and c["records"] == 1 and c["replays"] == 1, dict(c)
    assert len(_said(caplog, "kind=unsupported_inputs")) == 1
