"""One wrapper of upstream's compile_fx runs every component's context, in declared order."""

from __future__ import annotations

import contextlib

import torch

from npu_inductor_core import compile_hooks


def test_contexts_run_around_every_compile_in_declared_order(monkeypatch):
    monkeypatch.setattr(compile_hooks, "_hooks", [])
    seen = []

    def ctx(name):
        @contextlib.contextmanager
        def cm():
            seen.append(f"enter {name}")
            yield
            seen.append(f"exit {name}")

        return lambda model, inputs: (
            cm() if any(isinstance(t, torch.Tensor) for t in inputs) else None
        )

    # "b" registers first but declares it runs inside "a"
    compile_hooks.around_compile_fx("b", ctx("b"), after=("a",))
    compile_hooks.around_compile_fx("a", ctx("a"))
    compile_hooks.around_compile_fx("a", ctx("a-again"))  # idempotent per owner
    assert compile_hooks.owners() == ["a", "b"]

    from torch._inductor import compile_fx as module

    assert getattr(module.compile_fx, "_npu_core", False)  # installed once, by the core package
    torch._dynamo.reset()
    out = torch.compile(lambda x: x * 2 + 1, backend="inductor")(torch.ones(3))
    assert torch.equal(out, torch.full((3,), 3.0))
    assert seen[:2] == ["enter a", "enter b"] and seen[-2:] == ["exit b", "exit a"]


def test_no_component_replaces_compile_fx_itself():
    """The wrapper in place is the core package's, around upstream's function."""
    import npu_inductor

    npu_inductor.enable()
    from torch._inductor import compile_fx as module

    fn = module.compile_fx
    assert getattr(fn, "_npu_core", False)
    inner = fn.__wrapped__
    assert not hasattr(inner, "__wrapped__"), f"{inner} wraps {inner.__wrapped__}: a second wrapper"
    assert {"npu-cache", "npu-autotune"} <= set(compile_hooks.owners())


def test_graph_contexts_run_around_each_graph_the_lazy_backward_too(monkeypatch):
    """A backward graph is compiled at the first backward call, after ``compile_fx`` returned:
    its per-graph context still runs, through the ``inner_compile`` the one wrapper passes."""
    monkeypatch.setattr(compile_hooks, "_hooks", list(compile_hooks._hooks))
    monkeypatch.setattr(compile_hooks, "_graph_hooks", [])
    seen = []
    inside_compile_fx = []

    @contextlib.contextmanager
    def in_compile_fx():
        inside_compile_fx.append(True)
        try:
            yield
        finally:
            inside_compile_fx.pop()

    @contextlib.contextmanager
    def graph_cm(gm):
        seen.append(("graph", bool(inside_compile_fx)))
        yield

    compile_hooks.around_compile_fx("test-scope", lambda model, inputs: in_compile_fx())
    compile_hooks.around_compile_graph("test-graph", lambda gm, inputs: graph_cm(gm))
    compile_hooks.around_compile_graph(
        "test-graph", lambda gm, inputs: None
    )  # idempotent per owner
    assert compile_hooks.graph_owners() == ["test-graph"]

    torch._dynamo.reset()
    x = torch.ones(3, requires_grad=True)
    fn = torch.compile(lambda t: (t.sin() * 2).sum(), backend="inductor")
    with (
        torch._inductor.config.patch(fx_graph_cache=False),
        torch._functorch.config.patch(enable_autograd_cache=False),
    ):
        out = fn(x)
        assert seen == [("graph", True)]  # the forward, inside compile_fx
        out.backward()
    assert seen == [("graph", True), ("graph", False)]  # the backward, lazily, outside it
    assert torch.allclose(x.grad, 2 * x.detach().cos())
