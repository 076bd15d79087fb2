"""Kernels for test_launch (jit functions must live in a file)."""

import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers


@triton.jit
def helper(v):
    return v * 2 + tl.exp(v)


@triton.jit
def nested_kernel(x, o, n, B: tl.constexpr):
    i = tl.arange(0, B)
    m = i < n
    v = tl.load(x + i, mask=m)
    tl.store(o + i, helper(v) + triton_helpers.maximum(v, 0.0), mask=m)
