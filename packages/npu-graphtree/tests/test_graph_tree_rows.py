"""One test (or two) per graph-tree catalogue row, each failing when its feature is removed."""

import logging
import threading

import pytest
import torch

import npu_graphtree as G
from npu_graphtree import config


def _train_step_model(dev, seed=0):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1)).to(
        dev
    )


def _grads(model):
    return [p.grad.clone() for p in model.parameters()]


@pytest.mark.feature("GT01")
def test_pending_backward_keeps_saved_memory(h):
    G.register()
    model = _train_step_model(h.dev)
    compiled = torch.compile(model, backend="npu_graphtree")
    for _ in range(3):  # warmup, record, replay (no accumulation across steps: GT13's first fix)
        model.zero_grad(set_to_none=True)
        compiled(h.rand(4, 8)).sum().backward()
    x1, x2 = h.rand(4, 8), h.rand(4, 8)
    model.zero_grad(set_to_none=True)
    l1 = compiled(x1).sum()
    l2 = compiled(x2).sum()  # a new invocation while l1's backward is pending
    l1.backward()
    got = _grads(model)
    model.zero_grad(set_to_none=True)
    model(x1).sum().backward()
    for a, b in zip(got, _grads(model)):
        torch.testing.assert_close(a, b)
    l2.backward()


@pytest.mark.feature("GT01")
def test_memory_held_only_by_autograd_is_never_reused(h):
    """The forward's saved activations are held by the pending grad_fn (C++ references, no
    Python tensor): a later graph recorded in the same path must not be given their memory."""
    G.register()
    model = _train_step_model(h.dev, 1)
    compiled = torch.compile(model, backend="npu_graphtree")
    # same-sized allocations as the forward's activations: the allocator would hand their blocks out
    other = G.graphify(
        lambda a: [torch.tanh(a[0] * 3) + 1, a[0] - 2], [h.rand(4, 8)], [0], name="other"
    )
    big = h.rand(4, 8)
    for _ in range(3):
        model.zero_grad(set_to_none=True)
        compiled(h.rand(4, 8)).sum().backward()
    for _ in range(3):
        model.zero_grad(set_to_none=True)
        x = h.rand(4, 8)
        loss = compiled(x).sum()  # only autograd holds the saved activations now
        ys = other([big])  # warmup / record / replay after a checkpoint of the forward's path
        del ys
        loss.backward()
        got = _grads(model)
        model.zero_grad(set_to_none=True)
        model(x).sum().backward()
        for a, b in zip(got, _grads(model)):
            torch.testing.assert_close(a, b)


@pytest.mark.feature("GT02")
def test_threads_have_their_own_trees_and_replay_correctly(h):
    w = h.rand(16, 16, seed=2)
    f = G.graphify(lambda a: [torch.relu(a[0] @ a[1])], [h.rand(4, 16), w], [1], name="threaded")
    errors, managers = [], set()

    def worker(seed):
        try:
            gen = torch.Generator().manual_seed(seed)
            for _ in range(6):
                G.mark_step_begin()
                x = torch.randn(4, 16, generator=gen).to(h.dev)
                (out,) = f([x, w])
                torch.testing.assert_close(out, torch.relu(x @ w))
            m = G.manager_for(h.dev, 0)
            managers.add(id(m))
            assert m.counters["replays"] >= 3
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(managers) == 3  # one tree (and pool) per thread


@pytest.mark.feature("GT02")
def test_captures_are_serialized_by_the_process_wide_lock(h):
    inside, overlap = threading.Event(), []
    release = threading.Event()

    def slow(a):
        if h.mod.is_current_stream_capturing():
            if inside.is_set():
                overlap.append(True)
            inside.set()
            release.wait(0.3)
            inside.clear()
        return [a[0] + 1]

    f = G.graphify(slow, [h.rand(4)], name="slow")

    errors = []

    def worker():
        try:
            for _ in range(2):
                G.mark_step_begin()
                (out,) = f([torch.ones(4, device=h.dev)])
                torch.testing.assert_close(out, torch.full((4,), 2.0, device=h.dev))
        except BaseException as e:  # noqa: BLE001  (a thread's error must fail the test)
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert not overlap  # the second thread's capture waited for the first


@pytest.mark.feature("GT03")
def test_registry_current_stream_is_the_capture_stream(h):
    registry = pytest.importorskip("torch._dynamo.graph_bytecode_inputs")
    if not hasattr(
        registry, "CURRENT_STREAM_INDEX"
    ):  # torch 2.11: no current-stream entry to keep in sync
        pytest.skip("this torch's Dynamo registry has no CURRENT_STREAM_INDEX")
    from torch._dynamo.graph_bytecode_inputs import (
        CURRENT_STREAM_INDEX,
        get_external_object_by_index,
        set_external_object_by_index,
    )

    default = h.mod.current_stream()
    set_external_object_by_index(CURRENT_STREAM_INDEX, default)
    seen = []

    def model(a):
        seen.append((get_external_object_by_index(CURRENT_STREAM_INDEX), h.mod.current_stream()))
        return [a[0] * 2]

    f = G.graphify(model, [h.rand(4)], name="streams")
    for _ in range(2):  # warmup, record
        h.step()
        f([h.rand(4)])
    tree_stream = h.manager().stream
    assert len(seen) == 2
    for registered, current in seen:
        assert current == tree_stream != default
        assert registered == current


@pytest.mark.feature("GT04")
def test_user_visible_outputs_are_cloned_before_a_new_generation(h, monkeypatch):
    config.cudagraph_trees_generation_cloning = (
        "user_visible"  # undone by the fresh_trees fixture's patch
    )
    f = G.graphify(lambda a: [a[0] * 10], [h.rand(4)], name="tens")
    for _ in range(2):
        h.step()
        f([h.rand(4)])
    h.step()
    x1 = h.rand(4)
    (kept,) = f([x1])
    ptr = kept.data_ptr()
    h.step()
    (new,) = f([h.rand(4)])  # replays into the same block
    torch.testing.assert_close(kept, x1 * 10)  # the user's tensor kept its values
    assert new.data_ptr() == ptr != kept.data_ptr()


@pytest.mark.feature("GT05")
def test_a_function_can_ask_for_more_warmup(h):
    calls = {"n": 0}

    def lazy(a):
        calls["n"] += 1
        if calls["n"] < 3:  # lazy initialisation that reads device memory on the host
            _ = a[0].sum().item()
            G.mark_warmup_incomplete()
        return [a[0] + 1]

    f = G.graphify(lazy, [h.rand(4)], name="lazy")
    for _ in range(5):
        h.step()
        x = h.rand(4)
        (out,) = f([x])
        torch.testing.assert_close(out, x + 1)
    c = h.manager().counters
    assert (c["warmups"], c["records"], c["replays"]) == (3, 1, 1)


class Scale:  # an opaque object the graph reads (like a process group or a custom class)
    def __init__(self, k):
        self.k = k


@pytest.mark.feature("GT06")
def test_opaque_object_inputs_are_static(h):
    f = G.graphify(lambda a: [a[0] * a[1].k], [h.rand(4), Scale(2.0)], name="opaque")
    s2, s3 = Scale(2.0), Scale(3.0)
    for _ in range(3):
        h.step()
        x = h.rand(4)
        (out,) = f([x, s2])
        torch.testing.assert_close(out, x * 2)
    assert h.manager().counters["records"] == 1
    for _ in range(2):
        h.step()
        x = h.rand(4)
        (out,) = f([x, s3])  # another object: another graph, not the first one's baked value
        torch.testing.assert_close(out, x * 3)
    assert h.manager().counters["records"] == 2


@pytest.mark.feature("GT07")
def test_generator_inputs_record_and_replay(h):
    def noisy(a):
        return [a[0] + torch.rand(a[0].shape, device=a[0].device, generator=a[1])]

    g1, g2 = torch.Generator(device=h.dev), torch.Generator(device=h.dev)
    f = G.graphify(noisy, [h.rand(4), g1], name="noisy")
    x = torch.zeros(4, device=h.dev)
    outs = []
    for i in range(4):
        h.step()
        g1.manual_seed(i)
        (out,) = f([x, g1])
        g1.manual_seed(i)
        torch.testing.assert_close(out, torch.rand(4, device=h.dev, generator=g1))
        outs.append(out.clone())
    assert not torch.equal(outs[2], outs[3])  # replays draw fresh numbers
    h.step()
    g2.manual_seed(123)
    (out,) = f([x, g2])  # another generator is honoured, not the recorded one
    g2.manual_seed(123)
    torch.testing.assert_close(out, torch.rand(4, device=h.dev, generator=g2))
    assert h.manager().counters["replays"] >= 2


@pytest.mark.feature("GT08")
def test_self_overlapping_inputs_are_copied_by_storage(h):
    f = G.graphify(
        lambda a: [a[0] * 2], [torch.ones(1, 8, device=h.dev).expand(4, 8)], name="expanded"
    )
    for i in range(4):
        h.step()
        row = torch.arange(8.0, device=h.dev) + i
        x = row.expand(4, 8)  # stride 0: every row is the same memory
        (out,) = f([x])
        torch.testing.assert_close(out, x * 2)
    assert h.manager().counters["replays"] == 2


@pytest.mark.feature("GT09")
def test_static_input_moves_rerecord_freely_other_mismatches_hit_the_limit(
    h, inductor_patch, caplog
):
    inductor_patch({"triton.cudagraph_unexpected_rerecord_limit": 1})
    f = G.graphify(lambda a: [a[0] @ a[1]], [h.rand(2, 4), h.rand(4, 4)], [1], name="weights")
    keep = []  # keep old weights alive so each new one has a new address
    for _ in range(6):  # a new weight tensor each time: free re-records, always captured
        h.step()
        x, w = h.rand(2, 4), h.rand(4, 4)
        keep.append(w)
        (out,) = f([x, w])
        torch.testing.assert_close(out, x @ w)
    assert h.manager().counters["eager"] == 0 and h.manager().counters["records"] == 5

    with caplog.at_level(logging.WARNING, logger="npu_graphtree"):
        h.read_moving_pool_outputs(steps=8)
    assert h.manager().counters["eager"] > 0
    assert "re-record limit (1) exceeded" in caplog.text and "MANAGED_INPUT_MOVED" in caplog.text


@pytest.mark.feature("GT10")
def test_kernel_free_functions_are_not_captured_but_use_the_pool(h):
    f = G.graphify(
        lambda a: [a[0].t(), torch.empty(16, device=h.dev)], [h.rand(4, 4)], [0], name="views"
    )
    x = h.rand(4, 4)
    ptrs = []
    for i in range(3):
        h.step()
        t, e = f([x])
        torch.testing.assert_close(t, x.t())
        if i == 1:  # the recording allocated it from the tree's pool
            assert e.data_ptr() in h.manager().adapter.live_blocks(0, h.manager().pool)
        ptrs.append(e.data_ptr())
        del t, e
    (node,) = h.manager().graph_nodes()
    assert node.graph is None and node.kernel_free
    assert ptrs[1] == ptrs[2] and h.manager().counters["replays"] == 1


@pytest.mark.feature("GT11")
def test_only_listed_sizes_are_captured(h, inductor_patch):
    inductor_patch({"triton.cudagraph_capture_sizes": (4,)})

    def head(a):
        return [a[1][: a[0]] * 2]

    f = G.graphify(head, [4, h.rand(8)], name="head")
    for n in (4, 4, 4, 5, 5, 5):
        h.step()
        x = h.rand(8)
        (out,) = f([n, x])
        torch.testing.assert_close(out, x[:n] * 2)
    c = h.manager().counters
    assert (c["records"], c["replays"]) == (1, 1) and f.stats["eager"] == 3


@pytest.mark.feature("GT12")
def test_stack_trace_length_mismatch_warns_and_cleans_every_output(h, caplog):
    f = G.graphify(
        lambda a: [a[0] + 1, a[0] + 2],
        [h.rand(4)],
        stack_traces=["File model.py, line 1"],
        name="pair",
    )
    for _ in range(2):
        h.step()
        f([h.rand(4)])
    h.step()
    a, b = f([h.rand(4)])
    with caplog.at_level(logging.WARNING, logger="npu_graphtree"):
        h.step()
        f([h.rand(4)])
    assert "stack_trace_mismatch" in caplog.text
    with pytest.raises(RuntimeError, match="output 0 of 'pair'.*model.py, line 1"):
        a.sum()
    with pytest.raises(RuntimeError, match="output 1 of 'pair'.*no stack trace"):
        b.sum()


@pytest.mark.feature("GT13")
def test_overwritten_gradients_get_the_accumulation_message(h):
    f = G.graphify(lambda a: [a[0] * 2], [h.rand(4)], is_backward=True, name="grad_fn")
    for _ in range(2):
        h.step()
        f([h.rand(4)])
    h.step()
    (grad,) = f([h.rand(4)])
    h.step()
    f([h.rand(4)])
    with pytest.raises(RuntimeError) as info:
        grad + 1
    msg = str(info.value)
    assert "gradient" in msg and "grad_fn" in msg
    assert "preallocate zeroed .grad" in msg and "set .grad to None" in msg


@pytest.mark.feature("GT14")
def test_compile_id_and_mode_flow_into_timings(h, monkeypatch):
    from torch._guards import CompileId

    config.time_replays = True  # undone by the fresh_trees fixture's patch
    cid = CompileId(frame_id=7, frame_compile_id=1)
    fwd = G.graphify(lambda a: [a[0] * 2], [h.rand(4)], compile_id=cid, name="fwd")
    bwd = G.graphify(
        lambda a: [a[0] * 3], [h.rand(4)], compile_id=cid, is_backward=True, name="bwd"
    )
    inf = G.graphify(
        lambda a: [a[0] * 4], [h.rand(4)], compile_id=cid, is_inference=True, name="inf"
    )
    for _ in range(3):
        h.step()
        (y,) = fwd([h.rand(4)])
        bwd([y])
        h.step()
        inf([h.rand(4)])
    seen = {(t.phase, t.mode, t.compile_id) for t in G.timings()}
    for phase in ("warmup", "record", "replay"):
        for mode in ("FORWARD", "BACKWARD", "INFERENCE"):
            assert (phase, mode, str(cid)) in seen, (phase, mode)
    assert all(t.seconds >= 0 for t in G.timings())


@pytest.mark.feature("GT15")
def test_recording_fires_the_dynamo_callback_with_the_compile_id(h):
    from torch._dynamo.callback import CallbackTrigger, callback_handler
    from torch._guards import CompileId

    fired = []
    cb = callback_handler.register_start_callback(
        lambda args: fired.append((args.callback_trigger, args.compile_id))
    )
    try:
        cid = CompileId(frame_id=3, frame_compile_id=0)
        f = G.graphify(lambda a: [a[0] + 1], [h.rand(4)], compile_id=cid, name="cb")
        for _ in range(3):
            h.step()
            f([h.rand(4)])
    finally:
        callback_handler.remove_start_callback(cb)
    assert fired == [(CallbackTrigger.CUDAGRAPH_RECORDING, str(cid))]  # once: the recording


@pytest.mark.feature("GT16")
def test_structured_logs_carry_the_context(h, caplog):
    from torch._guards import CompileId

    cid = CompileId(frame_id=5, frame_compile_id=2)
    f = G.graphify(lambda a: [a[0] + 1], [h.rand(2, 3)], compile_id=cid, name="logged")
    with caplog.at_level(logging.DEBUG, logger="npu_graphtree"):
        for _ in range(3):
            h.step()
            f([h.rand(2, 3)])
    records = {r.graphtree["event"]: r.graphtree for r in caplog.records if hasattr(r, "graphtree")}
    assert {"warmup", "record", "replay"} <= set(records)
    for ev in ("warmup", "record", "replay"):
        data = records[ev]
        assert (
            data["compile_id"] == str(cid)
            and data["function"] == "logged"
            and data["mode"] == "FORWARD"
        )
        assert data["inputs"] == "[0:(2, 3)/(3, 1)/float32]"
        assert data["path"].startswith("logged#") and isinstance(data["generation"], int)
