"""`triton_helpers` for npu kernels: Inductor's, with reductions that have a vector form
expressed through tl.max/tl.sum instead of a custom combine function. A combine function
runs element by element in Triton's interpreter (a 2048-element `any` took ~1.5 s on
npu-sim) and is a generic reduce tree on Ascend; the built-in reductions are neither.
"""

import triton
import triton.language as tl
from torch._inductor.runtime.triton_helpers import *  # noqa: F401,F403  (everything else is upstream's)


@triton.jit
def any(a, dim):  # noqa: A001  (the name generated kernels call)
    return tl.max(a.to(tl.int8), dim) != 0


@triton.jit
def _nan_wins(m, a, dim):
    # NaN wins, as in Inductor's combine-function versions
    if a.dtype.is_floating():
        m = tl.where(tl.max((a != a).to(tl.int8), dim) != 0, float("nan"), m)
    return m


@triton.jit
def max2(a, dim):
    return _nan_wins(tl.max(a, dim), a, dim)


@triton.jit
def min2(a, dim):
    return _nan_wins(tl.min(a, dim), a, dim)


@triton.jit
def welford(mean, m2, weight, dim):
    # Chan's parallel combination with sums: the same result as Inductor's 3-operand
    # tl.reduce, which triton-ascend's front end rejects ("only reduce or reduce with
    # index") and the interpreter runs element by element.
    total = tl.sum(weight, dim)
    safe = tl.where(total == 0.0, 1.0, total)
    new_mean = tl.sum(mean * weight, dim) / safe
    # lanes whose mean equals the result add nothing (inf - inf would be NaN)
    delta = tl.where(mean == tl.expand_dims(new_mean, dim), 0.0, mean - tl.expand_dims(new_mean, dim))
    new_m2 = tl.sum(m2, dim) + tl.sum(weight * delta * delta, dim)
    return new_mean, new_m2, total
