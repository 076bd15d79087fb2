"""Warmup, record, replay; static and copied inputs; pool reuse; overwritten outputs; misuse."""

import logging

import pytest
import torch

import npu_graphtree as G


def _mlp(x, w):
    return [torch.relu(x @ w) + 1]


def test_warmup_then_record_then_replay_match_eager(h):
    w = h.rand(8, 8, seed=0)
    f = G.graphify(lambda a: _mlp(*a), [h.rand(4, 8), w], static_input_idxs=[1], name="mlp")
    for _ in range(5):
        h.step()
        x = h.rand(4, 8)
        (out,) = f([x, w])
        torch.testing.assert_close(out, _mlp(x, w)[0])
    c = h.manager().counters
    assert (c["warmups"], c["records"], c["replays"]) == (1, 1, 3)
    node = h.manager().graph_nodes()[0]
    assert node.graph is not None
    if hasattr(node.graph, "replay_count"):  # npu-sim counts replays
        assert node.graph.replay_count == 4  # first run replays too
    assert node.copy_idxs == [0] and node.static_ptrs == {1: w.data_ptr()}


def test_static_input_is_read_in_place_and_copied_input_is_a_copy(h):
    w = h.rand(4, 4, seed=1)
    x = h.rand(2, 4)
    f = G.graphify(lambda a: [a[0] @ a[1]], [x, w], [1])
    for _ in range(2):
        h.step()
        f([x, w])
    node = h.manager().graph_nodes()[0]
    assert node.placeholders[0].data_ptr() != x.data_ptr()  # the dynamic input was copied
    w.mul_(2)  # an in-place change of a static input is seen by the replay
    h.step()
    (out,) = f([x, w])
    torch.testing.assert_close(out, x @ w)
    assert h.manager().counters["records"] == 1


def test_later_node_reuses_memory_of_dead_outputs(h):
    # f's output (256 floats) is larger than its copied input's placeholder (64 floats), which
    # is freed after recording: only the dead output's block fits k's output, on any allocator
    f = G.graphify(lambda a: [a[0].repeat(4)], [h.rand(64)], name="f")  # no intermediates
    g = G.graphify(lambda a: [a[0] + 1], [h.rand(256)], name="g")
    x = h.rand(64)
    for _ in range(3):  # warmup, record, replay of f -> g (g reads f's output)
        h.step()
        (y,) = f([x])
        y_ptr = y.data_ptr()
        (z,) = g([y])
        del y
    torch.testing.assert_close(z, x.repeat(4) + 1)
    # k, recorded after f's output died, is handed f's output block
    h.step()
    (y,) = f([x])
    y_ptr = y.data_ptr()
    del y
    k = G.graphify(lambda a: [a[0].repeat(4)], [x], [0], name="k")  # static: no placeholder
    (w,) = k([x])  # warmup of k in f's path
    del w
    h.step()
    (y,) = f([x])
    del y
    (w,) = k([x])  # recorded as f's child, after a checkpoint that freed f's dead output
    # w lies (partly) in the dead output's block: a live block is never handed out twice.
    # cuda's allocator merges that block with the freed placeholder before it, so w may start
    # there (H200, 2026-12-03: 512 bytes before); npu-sim's starts exactly at y_ptr
    assert y_ptr - w.nbytes < w.data_ptr() < y_ptr + w.nbytes
    torch.testing.assert_close(w, x.repeat(4))
    assert h.manager().counters["checkpoints"] >= 1


def test_output_overwritten_by_a_later_replay_raises_naming_it(h):
    f = G.graphify(lambda a: [a[0].sin()], [h.rand(4)], name="sine")
    x = h.rand(4)
    for _ in range(2):
        h.step()
        f([x])
    h.step()
    (kept,) = f([x])
    h.step()
    f([x])
    with pytest.raises(RuntimeError, match=r"accessing output 0 of 'sine'.*overwritten"):
        kept + 1


def test_cpu_inputs_run_without_capture_and_say_why(h, caplog):
    f = G.graphify(
        lambda a: [a[0] + 1], [torch.ones(3)], device_type=h.dev, device_index=0, name="cpu_in"
    )
    with caplog.at_level(logging.WARNING, logger="npu_graphtree"):
        for _ in range(3):
            h.step()
            (out,) = f([torch.ones(3)])
    torch.testing.assert_close(out, torch.full((3,), 2.0))
    c = h.manager().counters  # counted in the device's tree, said once with the remedy
    assert c["eager.unsupported_inputs"] == 3 and c["warmups"] == 0 and c["records"] == 0, dict(c)
    said = [
        r
        for r in caplog.records
        if r.name == "npu_graphtree" and "CPU tensor inputs" in r.getMessage()
    ]
    assert (
        len(said) == 1
        and "remedy=pass every tensor input on the graph's device" in said[0].getMessage()
    )


def test_mixed_devices_run_without_capture(h):
    f = G.graphify(
        lambda a: [a[0] + a[1].to(h.dev)],
        [h.rand(3), torch.ones(3)],
        device_type=h.dev,
        name="mixed",
    )
    for _ in range(3):
        h.step()
        x = h.rand(3)
        (out,) = f([x, torch.ones(3)])
        torch.testing.assert_close(out, x + 1)
    assert (
        h.manager().counters["eager.unsupported_inputs"] == 3
        and h.manager().counters["records"] == 0
    )


def test_host_outputs_disable_capture(h, caplog):
    f = G.graphify(lambda a: [a[0].sum().cpu()], [h.rand(3)], name="to_host")
    with caplog.at_level(logging.WARNING, logger="npu_graphtree"):
        for _ in range(4):
            h.step()
            x = h.rand(3)
            (out,) = f([x])  # a capture would raise (host read) or compute from poisoned memory
            torch.testing.assert_close(out, x.sum().cpu())
    assert h.manager().counters["records"] == 0 and "outputs on ['cpu']" in caplog.text


def test_mutated_copied_input_runs_without_capture_and_stays_correct(h, caplog):
    def bump(a):
        a[0].add_(1)
        return [a[0] * 2]

    f = G.graphify(bump, [h.rand(3)], mutated_input_idxs=[0], name="bump")
    with caplog.at_level(logging.WARNING, logger="npu_graphtree"):
        for _ in range(3):
            h.step()
            x = torch.zeros(3, device=h.dev)
            (out,) = f([x])
            torch.testing.assert_close(
                x, torch.ones(3, device=h.dev)
            )  # the caller's tensor was written
            torch.testing.assert_close(out, torch.full((3,), 2.0, device=h.dev))
    assert h.manager().counters["records"] == 0 and "mutated inputs [0]" in caplog.text


def test_mutated_static_input_is_captured_and_written_in_place(h):
    buf = torch.zeros(3, device=h.dev)

    def bump(a):
        a[1].add_(a[0])
        return [a[1] * 1]

    f = G.graphify(
        bump, [h.rand(3), buf], static_input_idxs=[1], mutated_input_idxs=[1], name="acc"
    )
    one = torch.ones(3, device=h.dev)
    for _ in range(4):
        h.step()
        f([one, buf])
    torch.testing.assert_close(buf, torch.full((3,), 4.0, device=h.dev))
    assert h.manager().counters["replays"] == 2


def test_config_reads_follow_upstream_patches():
    """The tree reads Inductor config entries directly (cheap); a ``config.patch`` must still be
    seen, exactly as ``getattr`` sees it."""
    from torch._inductor import config as inductor_config

    from npu_graphtree import upstream_config

    read = upstream_config._reader("cudagraph_unexpected_rerecord_limit", 128)
    assert read() == inductor_config.triton.cudagraph_unexpected_rerecord_limit
    with inductor_config.patch({"triton.cudagraph_unexpected_rerecord_limit": 7}):
        assert read() == 7 and upstream_config.Snapshot(0).rerecord_limit == 7
    assert read() == inductor_config.triton.cudagraph_unexpected_rerecord_limit
    if hasattr(torch._inductor.config, "cudagraph_policy"):  # torch 2.13: the direct read is in use
        assert read.fast, read.why


def test_outputs_viewing_a_copied_input_are_tracked_outputs(h):
    """An output that views a copied input views its placeholder: pool memory this graph owns
    from then on (tracked, invalidated like any output), never our placeholder object."""
    f = G.graphify(lambda a: [a[0].t(), a[0] * 2, a[0][0]], [h.rand(3, 4)], name="views_of_input")
    for _ in range(4):
        h.step()
        x = h.rand(3, 4)
        t, y, row = f([x])
        torch.testing.assert_close(t, x.t())
        torch.testing.assert_close(y, x * 2)
        torch.testing.assert_close(row, x[0])
        assert row.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()
    assert h.manager().counters["replays"] == 2
    h.step()
    (t, _, _) = f([h.rand(3, 4)])
    h.step()
    f([h.rand(3, 4)])
    with pytest.raises(RuntimeError, match="views_of_input"):
        t + 1


def test_several_trees_with_copied_inputs_keep_the_pool_consistent(h, monkeypatch):
    """Roots and children recorded after one another, each copying inputs into placeholders:
    every checkpoint restore leaves the pool as the tree says (slow asserts), and dropping
    the trees frees each block once."""
    import gc

    from npu_graphtree import config

    config.slow_asserts = True  # undone by the fresh_trees fixture's patch
    fwd = G.graphify(lambda a: [a[0] * 2], [h.rand(4)], name="fwd")
    bwd = G.graphify(lambda a: [a[0] * a[1]], [h.rand(4), h.rand(4)], is_backward=True, name="bwd")
    other = G.graphify(lambda a: [a[0] - a[1]], [h.rand(4), h.rand(4)], name="other")
    inf = G.graphify(lambda a: [a[0] * 4], [h.rand(4)], is_inference=True, name="inf")
    for i in range(6):
        h.step()
        x, k = h.rand(4), h.rand(4)
        (y,) = fwd([x])
        if i < 3:  # bwd (a copied input k) becomes fwd's child first ...
            (g,) = bwd([y, k])
            torch.testing.assert_close(g, x * 2 * k)
        else:  # ... then another child is recorded under fwd: a restore to fwd's checkpoint
            (g,) = other([y, k])
            torch.testing.assert_close(g, x * 2 - k)
        h.step()
        z = h.rand(4)
        (w,) = inf([z])
        torch.testing.assert_close(w, z * 4)
    c = h.manager().counters
    assert c["records"] == 4 and c["replays"] >= 8 and c["eager"] == 0, dict(c)
    del y, g, w
    G.reset_trees()
    gc.collect()
    torch.testing.assert_close(
        h.rand(4) * 0, torch.zeros(4, device=h.dev)
    )  # the device still works
