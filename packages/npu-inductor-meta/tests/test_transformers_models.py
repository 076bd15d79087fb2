"""Real models (issue 16 item 8): tiny random-weight ``transformers`` models built from configs
(npu_inductor.conformance.models: decoder LMs, an encoder, an encoder-decoder, a vision
transformer, a CNN), compiled on npu vs eager on npu.

Per architecture:
- training step (static shapes): forward with labels, backward, one SGD step; logits (the
  inference output), loss, every gradient and every updated parameter compiled vs eager;
- dynamic lengths: inference under no_grad at two sequence lengths (batch sizes for vision
  models) through one ``dynamic=True`` compile, both against eager, with no recompile;
and a training step at two lengths through one dynamic compile (GPT-2; it found a tiled
reduction launched without its YBLOCK: npu-lowering's test_tiled_reductions.py).
"""

from __future__ import annotations

import copy
import os

import pytest

pytest.importorskip("transformers")
os.environ["HF_HUB_OFFLINE"] = "1"  # configs only, never the hub
os.environ["TRANSFORMERS_OFFLINE"] = "1"

from npu_inductor.conformance import models as M  # noqa: E402

XFAIL: dict[str, str] = {}  # architecture -> reason, for a known failure (none today)
ATOL, RTOL = 1e-4, 1e-4  # fp32; compiled kernels reassociate sums


def _params(spec):
    marks = [pytest.mark.xfail(reason=XFAIL[spec.name], strict=False)] if spec.name in XFAIL else []
    return pytest.param(spec, id=spec.name, marks=marks)


def _step(model, inputs, lr=0.1):
    """Forward with labels, backward, one SGD step; returns (loss, logits, grads, params after)."""
    import torch

    call = model
    model = getattr(model, "_orig_mod", model)  # a compiled module's parameters, unprefixed
    model.zero_grad(set_to_none=True)
    out = call(**inputs)
    out.loss.backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= lr * p.grad
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    return out.loss.detach(), M.logits(out).detach(), grads, params


def _close(actual, expected, what):
    import torch

    torch.testing.assert_close(
        actual.cpu(), expected.cpu(), atol=ATOL, rtol=RTOL, msg=lambda m: f"{what}: {m}"
    )


def _counting_compile(model, graphs, dynamic):
    import torch

    def inductor(gm, example_inputs):  # Inductor itself; counts graphs to see recompiles
        from torch._inductor.compile_fx import compile_fx

        graphs.append(gm)
        return compile_fx(gm, example_inputs)

    torch._dynamo.reset()
    return torch.compile(model, backend=inductor, dynamic=dynamic)


def _compare_steps(spec, eager, compiled, inputs, what):
    e_loss, e_logits, e_grads, e_params = _step(eager, inputs)
    c_loss, c_logits, c_grads, c_params = _step(compiled, inputs)
    _close(c_logits, e_logits, f"{spec.name} logits, {what}")
    _close(c_loss, e_loss, f"{spec.name} loss, {what}")
    assert c_grads.keys() == e_grads.keys(), f"{spec.name}: parameters with gradients differ"
    for name in e_grads:
        _close(c_grads[name], e_grads[name], f"{spec.name} grad {name}, {what}")
    for name in e_params:
        _close(c_params[name], e_params[name], f"{spec.name} param {name} after SGD, {what}")


@pytest.mark.parametrize("spec", [_params(s) for s in M.SPECS])
def test_model_training_step(npu, spec):
    """Forward with labels (logits = inference output, loss), backward, SGD step: compiled vs eager."""
    base = spec.build()
    eager, model = copy.deepcopy(base).to(npu), copy.deepcopy(base).to(npu)
    graphs = []
    compiled = _counting_compile(model, graphs, dynamic=False)
    _compare_steps(
        spec, eager, compiled, M.to_device(spec.inputs(spec.lengths[0]), npu), "training step"
    )
    assert graphs, "nothing was compiled"


@pytest.mark.parametrize("spec", [_params(s) for s in M.SPECS])
def test_model_dynamic_lengths(npu, spec):
    """Inference (no_grad) at two sequence lengths (batch sizes for vision models) through one
    dynamic compile: both match eager and the second length does not recompile."""
    import torch

    model = spec.build().to(npu)
    graphs = []
    compiled = _counting_compile(model, graphs, dynamic=True)
    with torch.no_grad():
        # an eager call first: transformers' loss sets config.problem_type on the first call with
        # labels, and Dynamo guards on it (a recompile on cpu as well, not a shape one)
        model(**M.to_device(spec.inputs(spec.lengths[0]), npu))
        for i, length in enumerate(spec.lengths):
            inputs = M.to_device(spec.inputs(length), npu)
            _close(
                M.logits(compiled(**inputs)),
                M.logits(model(**inputs)),
                f"{spec.name} logits, length {length}",
            )
            if i == 0:
                first = len(graphs)
                assert first >= 1, "nothing was compiled"
    assert len(graphs) == first, f"{spec.name}: the second length recompiled ({len(graphs)} graphs)"


def test_model_training_dynamic_lengths(npu):
    """A training step at two sequence lengths through one dynamic compile (GPT-2)."""
    spec = M.BY_NAME["gpt2"]
    base = spec.build()
    eager, model = copy.deepcopy(base).to(npu), copy.deepcopy(base).to(npu)
    graphs = []
    compiled = _counting_compile(model, graphs, dynamic=True)
    for length in spec.lengths:
        _compare_steps(
            spec, eager, compiled, M.to_device(spec.inputs(length), npu), f"length {length}"
        )
