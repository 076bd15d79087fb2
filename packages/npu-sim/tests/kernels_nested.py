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


@triton.jit
def looped_max_kernel(x, o, n, B: tl.constexpr, STEPS: tl.constexpr):
    # tl.max is a jit function of triton.language.standard, which sees triton.language.core:
    # a nested call per step
    i = tl.arange(0, B)
    acc = tl.full([B], float("-inf"), tl.float32)
    for s in range(STEPS):
        v = tl.load(x + s * B + i, mask=i < n)
        acc = tl.maximum(acc, v + tl.max(v, 0) * 0.0)
    tl.store(o + i, acc, mask=i < n)
