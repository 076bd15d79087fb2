"""`triton_helpers` for npu kernels: Inductor's, with reductions that have a vector form
expressed through tl.max/tl.sum instead of a custom combine function. A combine function
runs element by element in Triton's interpreter (a 2048-element `any` took ~1.5 s on
npu-sim) and is a generic reduce tree on Ascend; the built-in reductions are neither.
"""

import triton
import triton.language as tl
from torch._inductor.runtime.triton_helpers import *  # noqa: F401,F403  (everything else is upstream's)
from torch._inductor.runtime.triton_helpers import is_floating, maximum, minimum

from . import libdevice as _libdevice  # portable per Triton flavour
from .flavour import flavour as _flavour


def set_driver_to_gpu() -> None:
    """Called at import by every generated non-cpu kernel (upstream's pins Triton's active
    driver to the GPU one). An npu kernel uses the process's own Triton backend
    (triton-ascend's, or the interpreter on npu-sim, or none in a compile worker), so
    nothing is switched."""


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
    delta = tl.where(
        mean == tl.expand_dims(new_mean, dim), 0.0, mean - tl.expand_dims(new_mean, dim)
    )
    new_m2 = tl.sum(m2, dim) + tl.sum(weight * delta * delta, dim)
    return new_mean, new_m2, total


# ---- value-and-index combines (argmax / argmin) --------------------------------------------
# Upstream's write ``a_isnan & (not b_isnan)``: compiled Triton negates the block element by
# element, but Triton's interpreter evaluates ``not block`` as Python truth (always False for a
# block), so on npu-sim a NaN held in a looped reduction's accumulator lost to the next number
# (argmax/argmin wrong when a row's NaN came before its last R0_BLOCK step). ``~`` means the
# same everywhere.
@triton.jit
def minimum_with_index(a_value, a_index, b_value, b_index):
    mask = a_value < b_value
    equal = a_value == b_value
    if is_floating(a_value):
        a_isnan = a_value != a_value
        b_isnan = b_value != b_value
        mask |= a_isnan & ~b_isnan
        equal |= a_isnan & b_isnan  # NaNs are equal to each other
    mask |= equal & (a_index < b_index)  # the lowest index among equals
    return tl.where(mask, a_value, b_value), tl.where(mask, a_index, b_index)


@triton.jit
def maximum_with_index(a_value, a_index, b_value, b_index):
    mask = a_value > b_value
    equal = a_value == b_value
    if is_floating(a_value):
        a_isnan = a_value != a_value
        b_isnan = b_value != b_value
        mask |= a_isnan & ~b_isnan
        equal |= a_isnan & b_isnan
    mask |= equal & (a_index < b_index)
    return tl.where(mask, a_value, b_value), tl.where(mask, a_index, b_index)


@triton.jit
def _first_index_of(value, index, best, dim):
    # the lowest index among the lanes holding the reduced value (NaNs match each other), as
    # the combine functions above choose between equals
    b = tl.expand_dims(best, dim)
    hit = value == b
    if is_floating(value):
        hit |= (value != value) & (b != b)
    far = tl.expand_dims(tl.max(index, dim), dim)
    return tl.min(tl.where(hit, index, far), dim)


if _flavour() == "interpreter":
    # On npu-sim, the vector form: Triton's interpreter runs a reduce with a custom combine
    # function element by element in Python (an argmax over 4 rows of 256 took about 1 s a
    # program: a 144 x 144 argmax/argmin test ran 73 s a call), while tl.max / tl.min are one
    # numpy call each. On Ascend the value-and-index reduce stays: triton-ascend lowers it as
    # one reduction with its index, and the kernels the Ascend check compiles do not change.
    @triton.jit
    def min_with_index(value, index, dim):
        best = min2(value, dim)
        return best, _first_index_of(value, index, best, dim)

    @triton.jit
    def max_with_index(value, index, dim):
        best = max2(value, dim)
        return best, _first_index_of(value, index, best, dim)

else:

    @triton.jit
    def min_with_index(value, index, dim):
        return tl.reduce((value, index), dim, minimum_with_index)

    @triton.jit
    def max_with_index(value, index, dim):
        return tl.reduce((value, index), dim, maximum_with_index)


@triton.jit
def frexp(x):
    # Upstream's frexp calls CUDA libdevice's isinf/isnan/ilogb/ldexp, which neither Triton's
    # interpreter nor triton-ascend provides (the interpreter returned None: "'NoneType' object
    # has no attribute 'to'"). Same contract over the portable libdevice: ilogb from log2 can be
    # one off near powers of two, so the mantissa is moved into [0.5, 1) afterwards, and the
    # scaling is split in two so that exp2 of a large exponent stays a normal float.
    zero = x == 0
    not_finite = _libdevice.isinf(x) | _libdevice.isnan(x)
    special = zero | not_finite
    safe_x = tl.where(special, 1.0, x)
    y = _libdevice.ilogb(safe_x) + 1
    a = -(y // 2)
    b = -y - a
    m = safe_x * tl.exp2(a.to(tl.float32)) * tl.exp2(b.to(tl.float32))
    big = tl.abs(m) >= 1.0
    m = tl.where(big, m * 0.5, m)
    y = tl.where(big, y + 1, y)
    small = tl.abs(m) < 0.5
    m = tl.where(small, m * 2.0, m)
    y = tl.where(small, y - 1, y)
    mantissa = tl.where(zero, 0.0, tl.where(not_finite, x, m))
    return mantissa, tl.where(special, 0, y)


# ---- signed zero (strict_signed_zero: -x and maximum/minimum keep it; npu_lowering.numerics) --
@triton.jit
def neg_signed_zero(x):
    # the sign bit flipped, as eager negates (zeros and NaNs included); Triton's ``-x`` is
    # ``0 - x`` (triton-ascend's too), +0.0 for either zero
    if x.dtype == tl.float32:
        return (x.to(tl.int32, bitcast=True) ^ -2147483648).to(tl.float32, bitcast=True)
    elif x.dtype == tl.float16:
        return (x.to(tl.int16, bitcast=True) ^ -32768).to(tl.float16, bitcast=True)
    elif x.dtype == tl.bfloat16:
        return (x.to(tl.int16, bitcast=True) ^ -32768).to(tl.bfloat16, bitcast=True)
    else:
        return (tl.zeros_like(x) * -1.0) - x  # -0.0 - x: -x for every x, zeros included


@triton.jit
def maximum_signed_zero(a, b):
    # two zeros: a + b is +0.0 unless both are -0.0, i.e. their maximum with -0.0 < +0.0
    return tl.where((a == 0) & (b == 0), a + b, maximum(a, b))


@triton.jit
def minimum_signed_zero(a, b):
    # two zeros: -((-a) + (-b)) is -0.0 unless both are +0.0
    zeros = (a == 0) & (b == 0)
    return tl.where(zeros, neg_signed_zero(neg_signed_zero(a) + neg_signed_zero(b)), minimum(a, b))
