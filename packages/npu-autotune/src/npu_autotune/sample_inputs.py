"""triton.autotune_with_sample_inputs for npu graphs.

With ``triton.autotune_at_compile_time``, the wrapper runs every kernel once at compile time
so it is tuned before the graph first runs. User-written kernels are then tuned on random
example tensors unless ``triton.autotune_with_sample_inputs`` asks for the graph's real
inputs. Upstream collects those only in ``GraphLowering.codegen_with_cpp_wrapper`` (cuda,
xpu); npu graphs use the Python wrapper. This module is the npu equivalent: the real inputs are recorded
where ``compile_fx`` sees them (``compile_context``, run around every compile through
npu-inductor-core's ``compile_hooks``) and collected before an npu graph's codegen
(``before_codegen``, which npu-lowering's wrapper codegen runs through npu-inductor-core's
``codegen_hooks``); upstream's ``extract_autotune_inputs`` does the collecting and upstream's
wrapper codegen passes them to the tuning calls.
"""

from __future__ import annotations

import itertools
import logging

import torch

log = logging.getLogger(__name__)


def wanted(example_inputs) -> bool:
    """Record the real inputs of this compile: npu inputs, the two flags, Python wrapper."""
    from torch._inductor import config

    if not (config.triton.autotune_at_compile_time and config.triton.autotune_with_sample_inputs):
        return False
    if config.cpp_wrapper or config.fx_wrapper:  # upstream's own path sets them
        return False
    return any(isinstance(x, torch.Tensor) and x.device.type == "npu" for x in example_inputs)


def compile_context(model, example_inputs):
    """Around ``compile_fx``: record the compile's real inputs (``V.set_real_inputs``) when
    ``wanted``; upstream records them only for cpp_wrapper/fx_wrapper compiles."""
    from torch._inductor.virtualized import NullHandler, V

    if not isinstance(V.real_inputs, NullHandler) or not wanted(example_inputs):
        return None
    return V.set_real_inputs(example_inputs)


def simulated() -> bool:
    npu = getattr(torch, "npu", None)
    return npu is not None and getattr(npu, "__name__", "").startswith("npu_sim")


def before_codegen(graph) -> None:
    """Before an npu graph's wrapper code is generated (npu-inductor-core's ``codegen_hooks``):
    collect the sample inputs when the graph wants them."""
    if graph_wants(graph):
        collect(graph)


def graph_wants(graph) -> bool:
    from torch._inductor import config, ir

    return (
        "npu" in graph.device_types
        and not graph.cpp_wrapper
        and graph.autotuning_inputs is None
        and config.triton.autotune_at_compile_time
        and config.triton.autotune_with_sample_inputs
        and any(isinstance(op, ir.UserDefinedTritonKernel) for op in graph.operations)
    )


def _materialize(x):
    from torch._subclasses.fake_tensor import FakeTensor
    from torch._dynamo.utils import defake

    if isinstance(x, (torch.SymInt, torch.SymFloat)):
        return x.node.hint
    if isinstance(x, FakeTensor):
        return defake(x)
    return x


def _matches(real, example) -> bool:
    if isinstance(example, torch.Tensor):
        if not isinstance(real, torch.Tensor):
            return False
        sizes = tuple(
            int(s.node.hint) if isinstance(s, torch.SymInt) else int(s) for s in example.shape
        )
        return (
            tuple(real.shape) == sizes
            and real.dtype == example.dtype
            and real.device == example.device
        )
    return not isinstance(real, torch.Tensor)


def real_inputs(graph) -> list | None:
    """The real inputs of this graph (parameters first, as upstream), cloned where the graph
    mutates them; None when what was recorded is not this graph's (e.g. a backward graph)."""
    from torch._inductor.virtualized import NullHandler, V

    recorded = V.real_inputs
    if isinstance(recorded, NullHandler):
        return None
    context = torch._guards.TracingContext.try_get()
    params = (
        [p for p in (context.params_flat or ()) if p is not None] if context is not None else []
    )
    inputs = [_materialize(x) for x in itertools.chain(params, recorded)]
    examples = list(graph.example_inputs or ())
    if len(inputs) != len(examples) or not all(_matches(r, e) for r, e in zip(inputs, examples)):
        log.info(
            "npu graph %s: the recorded inputs are not this graph's: user kernels tune on random inputs",
            getattr(graph, "graph_id", "?"),
        )
        return None
    from torch._inductor.compile_fx import clone_preserve_strides

    for i, name in enumerate(graph.graph_inputs):
        if name in graph.mutated_inputs and isinstance(inputs[i], torch.Tensor):
            inputs[i] = clone_preserve_strides(
                inputs[i]
            )  # tuning must not mutate the user's tensor
    return inputs


def collect(graph) -> None:
    """Before codegen: upstream's ``extract_autotune_inputs`` on the real inputs (it runs the
    graph up to each user kernel). On npu-sim, user kernels met on the way run in Triton's
    interpreter (Triton's JIT compiles nothing for npu-sim)."""
    inputs = real_inputs(graph)
    if inputs is None:
        return
    import contextlib

    fx_graph = graph.orig_gm.graph
    codegen = fx_graph._codegen
    fx_graph._codegen = _BoxedInputs()  # upstream runs its copy with the inputs as one list
    try:
        with (
            torch.utils._python_dispatch._disable_current_modes(),
            SimUserKernels() if simulated() else contextlib.nullcontext(),
        ):
            graph.extract_autotune_inputs(_CopiedByClone(inputs))
    finally:
        fx_graph._codegen = codegen
    log.debug("npu graph: %d sample inputs for user kernels", len(graph.autotuning_inputs or ()))


class _BoxedInputs(torch.fx.graph.CodeGen):
    """Upstream's ``extract_autotune_inputs`` calls ``Interpreter.run(inputs)`` with the list
    as one argument, which only AOTInductor's pytree-flattening graphs unpack; a Dynamo
    graph's placeholders take the list's items."""

    def process_inputs(self, *args):
        (boxed,) = args
        return list(boxed)


class _CopiedByClone(list):
    """Upstream deep-copies the inputs it runs the graph on; a deep copy of an npu-sim tensor
    crashes (npu-sim cannot yet construct a bare ``UntypedStorage`` on npu), a clone does the
    same job."""

    def __deepcopy__(self, memo):
        from torch._inductor.compile_fx import clone_preserve_strides

        return [clone_preserve_strides(x) if isinstance(x, torch.Tensor) else x for x in self]


class SimUserKernels(torch.utils._python_dispatch.TorchDispatchMode):
    """Runs ``triton_kernel_wrapper_mutation`` through npu-sim's launch entry point (first
    autotune config, its heuristics), every other op as is."""

    supports_higher_order_operators = True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.ops.higher_order.triton_kernel_wrapper_mutation:
            return _launch_on_sim(**kwargs)
        return func(*args, **kwargs)


def _launch_on_sim(*, kernel_idx, constant_args_idx, grid, tma_descriptor_metadata, kwargs) -> None:
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table
    from triton.runtime.autotuner import Autotuner, Heuristics

    from .sim_launcher import sim_launch

    if tma_descriptor_metadata:
        raise NotImplementedError("npu-sim: user kernels with TMA descriptors")
    kernel = kernel_side_table.get_kernel(kernel_idx)
    args = {**kwargs, **kernel_side_table.get_constant_args(constant_args_idx)}
    meta: dict = {}
    while isinstance(kernel, (Autotuner, Heuristics)):
        if isinstance(kernel, Autotuner):
            meta.update(kernel.configs[0].kwargs)  # grid[0] belongs to configs[0]
        else:
            meta.update({name: fn({**args, **meta}) for name, fn in kernel.values.items()})
        kernel = kernel.fn
    sim_launch()(kernel, tuple(grid[0]), (), {**args, **meta})
