"""libdevice functions written in portable Triton (tl.math and arithmetic only).

Triton's interpreter has no libdevice (its `tl.extra.libdevice` is a stub table), and
triton-ascend's libdevice lacks some of what Inductor emits. Every function Inductor's
Triton codegen calls is here, float32-accurate (Cephes-style range reduction for the inverse
trigonometry, Lanczos for lgamma, Giles for erfinv). Generated npu kernels reach these
through npu_lowering.runtime.math, never directly.
"""

import triton
import triton.language as tl

_PI: tl.constexpr = tl.constexpr(3.141592653589793)
_HALF_PI: tl.constexpr = tl.constexpr(1.5707963267948966)
_QUARTER_PI: tl.constexpr = tl.constexpr(0.7853981633974483)
_LOG10_E: tl.constexpr = tl.constexpr(0.4342944819032518)
_HALF_LOG_2PI: tl.constexpr = tl.constexpr(0.9189385332046727)


# --- provided by tl.math ---------------------------------------------------------------
@triton.jit
def abs(x):
    return tl.abs(x)


@triton.jit
def exp(x):
    return tl.exp(x)


@triton.jit
def exp2(x):
    return tl.exp2(x)


@triton.jit
def log(x):
    return tl.log(x)


@triton.jit
def log2(x):
    return tl.log2(x)


@triton.jit
def sqrt(x):
    return tl.sqrt(x)


@triton.jit
def rsqrt(x):
    return tl.rsqrt(x)


@triton.jit
def sin(x):
    return tl.sin(x)


@triton.jit
def cos(x):
    return tl.cos(x)


@triton.jit
def erf(x):
    return tl.erf(x)


@triton.jit
def floor(x):
    return tl.floor(x)


@triton.jit
def ceil(x):
    return tl.ceil(x)


# --- rounding and classification -------------------------------------------------------
@triton.jit
def trunc(x):
    return tl.where(x >= 0, tl.floor(x), tl.ceil(x))


@triton.jit
def nearbyint(x):
    # round half to even, as the default rounding mode does
    r = tl.floor(x + 0.5)
    tie = (r - x) == 0.5
    odd = (r - 2.0 * tl.floor(r * 0.5)) != 0
    return tl.where(tie & odd, r - 1.0, r)


@triton.jit
def llrint(x):
    return nearbyint(x).to(tl.int64)


@triton.jit
def isnan(x):
    return x != x


@triton.jit
def isinf(x):
    # inf - inf is nan; finite - finite is 0; nan fails x == x
    return (x == x) & ((x - x) != 0)


@triton.jit
def signbit(x):
    return (x < 0) | ((x == 0) & ((1.0 / x) < 0))


@triton.jit
def copysign(a, b):
    return tl.where(signbit(b), -tl.abs(a), tl.abs(a))


@triton.jit
def ldexp(x, n):
    return x * tl.exp2(n.to(tl.float32))


@triton.jit
def ilogb(x):
    return tl.floor(tl.log2(tl.abs(x))).to(tl.int32)


@triton.jit
def fmod(a, b):
    return a - trunc(a / b) * b


@triton.jit
def hypot(a, b):
    return tl.sqrt(a * a + b * b)


@triton.jit
def nextafter(a, b):
    if a.dtype == tl.float64:
        bits = a.to(tl.int64, bitcast=True)
        tiny = tl.full(a.shape, 1, tl.int64).to(tl.float64, bitcast=True)
    else:
        bits = a.to(tl.int32, bitcast=True)
        tiny = tl.full(a.shape, 1, tl.int32).to(tl.float32, bitcast=True)
    step = tl.where((a < b) == (a > 0), 1, -1)
    moved = (bits + step).to(a.dtype, bitcast=True)
    at_zero = tl.where(b > 0, tiny, -tiny)
    out = tl.where(a == 0, at_zero, moved)
    out = tl.where(a == b, b, out)
    return tl.where((a != a) | (b != b), a + b, out)


# --- exponentials and logarithms -------------------------------------------------------
@triton.jit
def expm1(x):
    # Kahan: exact where exp(x) rounds to 1
    u = tl.exp(x)
    um1 = u - 1.0
    return tl.where(u == 1.0, x, tl.where(um1 == -1.0, -1.0, um1 * x / tl.log(u)))


@triton.jit
def log1p(x):
    u = 1.0 + x
    return tl.where(u == 1.0, x, tl.log(u) * x / (u - 1.0))


@triton.jit
def log10(x):
    return tl.log(x) * _LOG10_E


@triton.jit
def pow(a, b):
    mag = tl.exp2(b * tl.log2(tl.abs(a)))
    integral = tl.floor(b) == b
    odd = integral & ((b - 2.0 * tl.floor(b * 0.5)) != 0)
    neg = tl.where(integral, tl.where(odd, -mag, mag), float("nan"))
    out = tl.where(a < 0, neg, mag)
    return tl.where(b == 0, 1.0, out)


# --- hyperbolic --------------------------------------------------------------------------
@triton.jit
def tanh(x):
    e = tl.exp(-2.0 * tl.abs(x))
    t = (1.0 - e) / (1.0 + e)
    return tl.where(x < 0, -t, t)


@triton.jit
def fast_tanhf(x):
    return tanh(x)


@triton.jit
def sinh(x):
    return 0.5 * (expm1(x) - expm1(-x))


@triton.jit
def cosh(x):
    return 0.5 * (tl.exp(x) + tl.exp(-x))


@triton.jit
def asinh(x):
    ax = tl.abs(x)
    r = log1p(ax + ax * ax / (1.0 + tl.sqrt(1.0 + ax * ax)))
    return tl.where(x < 0, -r, r)


@triton.jit
def acosh(x):
    return tl.log(x + tl.sqrt(x * x - 1.0))


@triton.jit
def atanh(x):
    return 0.5 * log1p(2.0 * x / (1.0 - x))


# --- trigonometric -----------------------------------------------------------------------
@triton.jit
def tan(x):
    return tl.sin(x) / tl.cos(x)


@triton.jit
def atan(x):
    ax = tl.abs(x)
    big = ax > 2.414213562373095  # tan(3*pi/8)
    mid = ax > 0.4142135623730950  # tan(pi/8)
    z = tl.where(big, -1.0 / ax, tl.where(mid, (ax - 1.0) / (ax + 1.0), ax))
    base = tl.where(big, _HALF_PI, tl.where(mid, _QUARTER_PI, 0.0))
    z2 = z * z
    p = (((8.05374449538e-2 * z2 - 1.38776856032e-1) * z2 + 1.99777106478e-1) * z2 - 3.33329491539e-1) * z2 * z + z
    r = base + p
    return tl.where(x < 0, -r, r)


@triton.jit
def atan2(y, x):
    r = atan(y / x)
    neg_x = tl.where(y >= 0, r + _PI, r - _PI)
    on_axis = tl.where(y > 0, _HALF_PI, tl.where(y < 0, -_HALF_PI, 0.0))
    return tl.where(x > 0, r, tl.where(x < 0, neg_x, on_axis))


@triton.jit
def asin(x):
    return atan2(x, tl.sqrt(1.0 - x * x))


@triton.jit
def acos(x):
    return atan2(tl.sqrt(1.0 - x * x), x)


# --- special functions -------------------------------------------------------------------
@triton.jit
def erfc(x):
    return 1.0 - tl.erf(x)


@triton.jit
def erfinv(y):
    w = -tl.log((1.0 - y) * (1.0 + y))
    small = w < 5.0
    ws = w - 2.5
    p1 = 2.81022636e-08
    p1 = 3.43273939e-07 + p1 * ws
    p1 = -3.5233877e-06 + p1 * ws
    p1 = -4.39150654e-06 + p1 * ws
    p1 = 0.00021858087 + p1 * ws
    p1 = -0.00125372503 + p1 * ws
    p1 = -0.00417768164 + p1 * ws
    p1 = 0.246640727 + p1 * ws
    p1 = 1.50140941 + p1 * ws
    wl = tl.sqrt(w) - 3.0
    p2 = -0.000200214257
    p2 = 0.000100950558 + p2 * wl
    p2 = 0.00134934322 + p2 * wl
    p2 = -0.00367342844 + p2 * wl
    p2 = 0.00573950773 + p2 * wl
    p2 = -0.0076224613 + p2 * wl
    p2 = 0.00943887047 + p2 * wl
    p2 = 1.00167406 + p2 * wl
    p2 = 2.83297682 + p2 * wl
    return tl.where(small, p1, p2) * y


@triton.jit
def _lgamma_positive(x):
    # Lanczos (g = 7, n = 9) for x >= 0.5
    z = x - 1.0
    a = 0.99999999999980993 + 676.5203681218851 / (z + 1.0)
    a = a + -1259.1392167224028 / (z + 2.0)
    a = a + 771.32342877765313 / (z + 3.0)
    a = a + -176.61502916214059 / (z + 4.0)
    a = a + 12.507343278686905 / (z + 5.0)
    a = a + -0.13857109526572012 / (z + 6.0)
    a = a + 9.9843695780195716e-6 / (z + 7.0)
    a = a + 1.5056327351493116e-7 / (z + 8.0)
    t = z + 7.5
    # tensors on the left: constexpr + tensor does not promote in the interpreter
    return (z + 0.5) * tl.log(t) - t + tl.log(a) + _HALF_LOG_2PI


@triton.jit
def lgamma(x):
    reflected = tl.log(1.0 / tl.abs(tl.sin(x * _PI)) * _PI) - _lgamma_positive(1.0 - x)
    return tl.where(x < 0.5, reflected, _lgamma_positive(tl.maximum(x, 0.5)))
