"""Installation paths: the component hook, the Dynamo backend, the reduce-overhead policy."""

import types

import pytest
import torch

import npu_graphtree as G
from npu_graphtree import policy


def test_register_is_idempotent_and_adds_the_backend():
    G.register()
    G.register()
    assert "npu_graphtree" in torch._dynamo.list_backends(exclude_tags=())


def test_backend_trains_like_eager_over_steps(h):
    G.register()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).to(
        h.dev
    )
    ref = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).to(
        h.dev
    )
    ref.load_state_dict(model.state_dict())
    compiled = torch.compile(model, backend="npu_graphtree")
    opt, ref_opt = (
        torch.optim.SGD(model.parameters(), lr=0.1),
        torch.optim.SGD(ref.parameters(), lr=0.1),
    )
    for _ in range(5):
        x = h.rand(4, 8)
        for m, o in ((compiled, opt), (ref, ref_opt)):
            o.zero_grad(set_to_none=True)
            m(x).pow(2).mean().backward()
            o.step()
    for a, b in zip(model.parameters(), ref.parameters()):
        torch.testing.assert_close(a, b)
    c = h.manager().counters
    assert c["replays"] >= 4 and c["eager"] == 0, dict(c)


@pytest.mark.skipif(
    not hasattr(torch._inductor.config, "cudagraph_policy"), reason="torch without cudagraph_policy"
)
@pytest.mark.skipif(
    torch.cuda.is_available(), reason="with cuda the policy is opt-in (use_for_cuda)"
)
def test_policy_installed_without_cuda_and_cpu_reduce_overhead_unchanged(monkeypatch):
    from torch._inductor import config

    G.register()
    assert isinstance(config.cudagraph_policy, policy.GraphTreePolicy)
    seen = []
    original = policy.wrap_compiled_graph
    monkeypatch.setattr(policy, "wrap_compiled_graph", lambda g: seen.append(g) or original(g))

    def f(x):
        return torch.sin(x) * 2

    x = torch.randn(8)
    out = torch.compile(f, mode="reduce-overhead")(x)
    torch.testing.assert_close(out, f(x))
    assert seen and not any(
        getattr(g, "_npu_graphtree_wrapped", False) for g in seen
    )  # cpu: passed through


def _fake_compiled_graph(fn, reason, dev="npu"):
    return types.SimpleNamespace(
        device_types={dev},
        device_idxs={0},
        disabled_cudagraphs_reason=reason,
        current_callable=fn,
        fx_kwargs={"static_input_idxs": [1], "is_backward": False, "is_inference": True},
        mutated_input_idxs=(),
        cudagraph_info=None,
    )


def test_policy_takes_npu_graphs_only_when_the_device_was_the_only_objection(npu_only):
    from torch._inductor import config
    from torch._inductor.cudagraph_utils import check_multiple_devices_or_any_cpu_nodes

    device_only = check_multiple_devices_or_any_cpu_nodes({torch.device("npu", 0): None})
    with config.patch({"triton.cudagraphs": True}):
        assert policy.take(_fake_compiled_graph(None, device_only)) is None  # nothing to wrap
        fn = lambda a: [a[0] @ a[1]]  # noqa: E731
        assert policy.take(_fake_compiled_graph(fn, device_only)) == ("npu", 0)
        assert policy.take(_fake_compiled_graph(fn, "mutated inputs")) is None
        assert policy.take(_fake_compiled_graph(fn, None, dev="cpu")) is None
        assert (
            policy.take(_fake_compiled_graph(fn, None, dev="cuda")) is None
        )  # cuda: only when chosen
    with config.patch({"triton.cudagraphs": False}):
        assert policy.take(_fake_compiled_graph(fn, device_only)) is None  # not reduce-overhead


def test_policy_wraps_an_npu_graph_into_a_tree(npu_only):
    h = npu_only
    from torch._inductor import config
    from torch._inductor.cudagraph_utils import check_multiple_devices_or_any_cpu_nodes

    graph = _fake_compiled_graph(
        lambda a: [torch.relu(a[0] @ a[1])],
        check_multiple_devices_or_any_cpu_nodes({torch.device("npu", 0): None}),
    )
    with config.patch({"triton.cudagraphs": True}):
        assert policy.wrap_compiled_graph(graph)
        assert not policy.wrap_compiled_graph(graph)  # once
    w = h.rand(8, 8)
    for _ in range(4):
        h.step()
        x = h.rand(2, 8)
        (out,) = graph.current_callable([x, w])
        torch.testing.assert_close(out, torch.relu(x @ w))
    c = h.manager().counters
    assert (c["warmups"], c["records"], c["replays"]) == (1, 1, 2)
    assert h.manager().graph_nodes()[0].fn.mode.name == "INFERENCE"


@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a cuda device (run on the GPU machine)"
)
def test_cuda_adapter_runs_the_same_tree():
    x = torch.randn(4, 8, device="cuda")
    w = torch.randn(8, 8, device="cuda")
    f = G.graphify(lambda a: [torch.relu(a[0] @ a[1])], [x, w], [1], name="cuda_mlp")
    for _ in range(4):
        G.mark_step_begin()
        x = torch.randn(4, 8, device="cuda")
        (out,) = f([x, w])
        torch.testing.assert_close(out, torch.relu(x @ w))
    m = G.manager_for("cuda", 0)
    assert m.adapter.provider == "cuda" and m.counters["replays"] == 2
    assert m.adapter.native_access_errors()  # torch's own storage-access errors on cuda
    G.mark_step_begin()
    (kept,) = f([x, w])
    G.mark_step_begin()
    f([x, w])
    with pytest.raises(RuntimeError, match="cuda_mlp"):
        kept + 1


@pytest.fixture
def hook_restored(monkeypatch, inductor_patch):
    """Whatever a test installs (policy, cuda choice) is undone afterwards."""
    from torch._inductor import config
    from torch._inductor.output_code import CompiledFxGraph

    monkeypatch.setattr(
        CompiledFxGraph, "post_compile", CompiledFxGraph.post_compile
    )  # restored on exit
    if _has_policy():
        inductor_patch({"cudagraph_policy": config.cudagraph_policy})  # restored on exit
    monkeypatch.setattr(policy, "_state", dict(policy._state))
    return monkeypatch


def _mlp(dev):
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 8)).to(
        dev
    )


@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="needs a cuda device (run on the GPU machine)"
)
def test_reduce_overhead_on_cuda_uses_our_trees_when_chosen(hook_restored):
    """mode="reduce-overhead" on cuda with ``use_for_cuda(True)``: Inductor's cuda graphs go to
    our tree (the policy), not upstream's."""
    from torch._inductor import cudagraph_trees

    policy._state["installed"] = None
    how = policy.use_for_cuda(True)
    assert how == "policy"
    model = _mlp("cuda")
    compiled = torch.compile(model, mode="reduce-overhead")
    x = torch.randn(4, 16, device="cuda")
    with torch.no_grad():
        ref = model(x)
        outs = [compiled(x).clone() for _ in range(4)]
    for out in outs:
        torch.testing.assert_close(out, ref)
    m = G.manager_for("cuda", 0)
    assert m is not None and m.counters["records"] == 1 and m.counters["replays"] >= 2, dict(
        m.counters
    )
    assert (
        cudagraph_trees.get_manager(0, create_if_none_exists=False) is None
    )  # upstream made no tree


def _has_policy() -> bool:
    return hasattr(torch._inductor.config, "cudagraph_policy")


def test_adapter_finds_the_sim_provider_without_importing_it(npu_only):
    from npu_graphtree.adapter import get_adapter

    a = get_adapter("npu")
    assert a.provider == "npu-sim" and hasattr(a.C, "_npu_beginAllocateCurrentThreadToPool")
    assert not a.begin_increfs_pool and not a.native_access_errors()
