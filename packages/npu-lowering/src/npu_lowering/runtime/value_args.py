"""Values in a tensor's argument slot claim no alignment.

A cpu scalar tensor an npu kernel reads (an "unspec" argument, e.g. ``x / torch.prod(
torch.tensor(x.size()))``) is passed by value in a tensor's slot (``in_ptr1: 'i64'``,
``buf1.item()``), and upstream's ``config_of`` marks it 16-divisible as it marks tensors (for
their addresses). A value has no such alignment: the kernel would be compiled to assume it,
and npu-launcher checks each argument against what the kernel assumes ("600 is not a multiple
of 16"). The kernel object drops the claim for such arguments before it compiles or launches.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# the names Inductor gives tensor arguments (its KernelArgs): in_ptrN, out_ptrN, in_out_ptrN
_TENSOR_SLOT = re.compile(r"(in_out|in|out)_ptr\d+")


def value_slots(signature: Mapping) -> set[int]:
    """Indices of tensor-slot arguments that carry a value (a non-pointer type)."""
    return {
        i
        for i, (name, ty) in enumerate(signature.items())
        if _TENSOR_SLOT.fullmatch(str(name)) and not str(ty).startswith("*")
    }


def without_value_alignment(triton_meta: dict) -> dict:
    """``triton_meta`` whose attrs claim no divisibility for value arguments in tensor slots
    (the same dict when none does)."""
    slots = value_slots(triton_meta.get("signature") or {})
    configs = triton_meta.get("configs")
    if not slots or not configs:
        return triton_meta
    cleaned = []
    for attrs in configs:
        if isinstance(attrs, Mapping):
            attrs = {
                key: [v for v in values if not (v and v[0] == "tt.divisibility")]
                if isinstance(key, tuple) and len(key) == 1 and key[0] in slots
                else values
                for key, values in attrs.items()
            }
            attrs = {key: values for key, values in attrs.items() if values}
        cleaned.append(attrs)
    return {**triton_meta, "configs": cleaned}
