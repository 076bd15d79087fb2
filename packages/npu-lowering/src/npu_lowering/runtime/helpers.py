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
def max2(a, dim):
    # NaN wins, as in Inductor's combine-function version
    m = tl.max(a, dim)
    if a.dtype.is_floating():
        m = tl.where(tl.max((a != a).to(tl.int8), dim) != 0, float("nan"), m)
    return m


@triton.jit
def min2(a, dim):
    m = tl.min(a, dim)
    if a.dtype.is_floating():
        m = tl.where(tl.max((a != a).to(tl.int8), dim) != 0, float("nan"), m)
    return m
