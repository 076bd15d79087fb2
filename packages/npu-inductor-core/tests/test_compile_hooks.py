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

        return lambda model, inputs: cm() if any(isinstance(t, torch.Tensor) for t in inputs) else None

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
