"""Dynamo backend ``"npu_graphtree"``: AOT autograd with our trees around the forward and
backward graphs (no Inductor), as upstream's ``"cudagraphs"`` backend does with its trees.
It is how reduce-overhead runs on npu before the npu lowering exists, and the harness the
tests use for forward/backward generations.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from . import api, tree
from .node import Mode


def _device_of(inputs) -> tuple[str | None, int]:
    devs = {x.device for x in inputs if isinstance(x, torch.Tensor) and x.device.type != "cpu"}
    if len(devs) != 1:
        return None, 0
    d = next(iter(devs))
    return d.type, d.index or 0


def _stack_traces(gm: torch.fx.GraphModule) -> list[str | None]:
    out = [n for n in gm.graph.nodes if n.op == "output"][0]
    args = out.args[0] if isinstance(out.args[0], (tuple, list)) else [out.args[0]]
    return [a.stack_trace if isinstance(a, torch.fx.Node) else None for a in args]


def npu_graphtree_backend(gm: torch.fx.GraphModule, example_inputs, **kwargs: Any):
    from torch._dynamo.backends.common import aot_autograd
    from torch._dynamo.backends.cudagraphs import find_input_mutations
    from torch._dynamo.backends.debugging import boxed_nop
    from torch._inductor.utils import count_tangents, num_fw_fixed_arguments

    compile_id = torch._guards.CompileContext.current_compile_id()
    state = {"device": None}

    def compiler(
        aot_model: torch.fx.GraphModule,
        aot_inputs,
        is_inference: bool = False,
        is_backward: bool = False,
    ):
        interp = boxed_nop(aot_model, aot_inputs)
        dev_type, dev_index = _device_of(aot_inputs)
        if is_backward:
            static = list(range(count_tangents(aot_model)))
            if dev_type is None and state["device"] is not None:
                dev_type, dev_index = state["device"]
        else:
            fixed = num_fw_fixed_arguments(len(example_inputs), len(aot_inputs))
            state["device"] = (dev_type, dev_index) if dev_type else None
            # parameters are static (upstream's get_static_input_idxs): inlined nn modules
            # pass them as graph inputs, AOT's metadata says which
            ctx = torch._guards.TracingContext.try_get()
            if ctx is not None and ctx.fw_metadata is not None:
                static = list(ctx.fw_metadata.static_input_indices)
            else:
                static = list(range(fixed))
        if dev_type is None:
            return tree.notify_backward(interp, lambda: state["device"]) if is_backward else interp
        out = api.graphify(
            interp,
            aot_inputs,
            static,
            device_type=dev_type,
            device_index=dev_index,
            is_backward=is_backward,
            is_inference=is_inference,
            stack_traces=_stack_traces(aot_model),
            mutated_input_idxs=find_input_mutations(aot_model.graph),
            compile_id=compile_id,
            name=f"{'backward' if is_backward else 'forward'}_{compile_id}",
        )
        out._boxed_call = True
        return out

    return aot_autograd(
        fw_compiler=compiler,
        bw_compiler=functools.partial(compiler, is_backward=True),
        inference_compiler=functools.partial(compiler, is_inference=True),
        keep_inference_input_mutations=True,
    )(gm, example_inputs)


def register_backend() -> None:
    from torch._dynamo.backends.registry import _BACKENDS, register_backend as reg

    if "npu_graphtree" not in _BACKENDS:
        reg(name="npu_graphtree", compiler_fn=npu_graphtree_backend)


__all__ = ["npu_graphtree_backend", "register_backend", "Mode"]
