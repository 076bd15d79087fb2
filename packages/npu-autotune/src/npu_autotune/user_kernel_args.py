"""unsafe_ignore_unsupported_triton_autotune_args on npu.

Inductor tunes a user's ``@triton.autotune`` kernel itself, from its configs, keys,
``restore_value`` and ``reset_to_zero``; any other argument is ignored. Upstream's Dynamo
refuses ``use_cuda_graph``, ``pre_hook``/``post_hook`` and a Config's ``pre_hook`` unless the
flag is on (every device). It means to refuse ``warmup``/``rep`` too, but looks for them under
parameter names Triton 3.x no longer has, so they pass silently. For npu kernels this refuses
them (and a custom ``do_bench``) for each user kernel of an npu graph, before its wrapper
code is generated (npu-inductor-core's ``codegen_hooks``; no patch), with the same flag to
ignore them.
"""

from __future__ import annotations


def unsupported(kernel) -> dict:
    """The benchmarking arguments of a ``triton.autotune`` kernel that Inductor ignores."""
    from triton.runtime.autotuner import Autotuner

    if not isinstance(kernel, Autotuner):
        return {}
    out = {}
    warmup = getattr(kernel, "num_warmups", getattr(kernel, "warmup", None))
    rep = getattr(kernel, "num_reps", getattr(kernel, "rep", None))
    if warmup is not None:
        out["warmup"] = warmup
    if rep is not None:
        out["rep"] = rep
    if (
        not out
        and not getattr(kernel, "use_cuda_graph", False)
        and getattr(kernel, "_do_bench", None) is not None
    ):
        out["do_bench"] = kernel._do_bench  # set by the user (warmup/rep/use_cuda_graph set it too)
    return out


def check(kernel_idx: int, device) -> None:
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table
    from torch._inductor import config

    if (
        device is None
        or device.type != "npu"
        or config.unsafe_ignore_unsupported_triton_autotune_args
    ):
        return
    kernel = kernel_side_table.get_kernel(kernel_idx)
    found = unsupported(kernel)
    if found:
        name = getattr(getattr(kernel, "base_fn", None), "__name__", "user kernel")
        raise RuntimeError(
            f"{name}: only configs, keys, restore_value, and reset_to_zero are supported for triton.autotune "
            f"(npu); got {', '.join(f'{k}={v!r}' for k, v in found.items())}. Inductor tunes with its own "
            f"warmup/rep flags; set torch._inductor.config.unsafe_ignore_unsupported_triton_autotune_args=True "
            f"to ignore these arguments"
        )


def check_graph(graph) -> None:
    """Every user Triton kernel an npu graph lowered (before its wrapper code is generated)."""
    from torch._inductor import ir

    for op in getattr(graph, "operations", ()):
        if isinstance(op, ir.UserDefinedTritonKernel):
            check(op.kernel_idx, op.get_device())
