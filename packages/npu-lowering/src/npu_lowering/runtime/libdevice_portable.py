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
    # round half to even, as the default rounding mode does; from 2^23 every float32 is an
    # integer (x + 0.5 rounded an odd one up), and a zero result keeps x's sign (-0.4 -> -0)
    r = tl.floor(x + 0.5)
    tie = (r - x) == 0.5
    odd = (r - 2.0 * tl.floor(r * 0.5)) != 0
    r = tl.where(tl.abs(x) >= 8388608.0, x, tl.where(tie & odd, r - 1.0, r))
    return tl.where(r == 0, x * 0.0, r)


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
    # the sign bit itself, as C's signbit: -0 and a negative nan too (eager's float32 to
    # bfloat16 conversion makes nan negative; comparisons missed it)
    if x.dtype == tl.float64:
        return x.to(tl.int64, bitcast=True) < 0
    elif x.dtype == tl.float32:
        return x.to(tl.int32, bitcast=True) < 0
    else:
        return x.to(tl.int16, bitcast=True) < 0


@triton.jit
def _neg(x):
    # -x for a result whose zero must change sign: Triton 3.6's unary minus on floats (and
    # triton-ascend 3.2's, of the same lineage) is 0 - x, which makes -(+0) and -(-0) both +0;
    # Triton 3.8's is a true negation. A product with -1 is exact and flips a zero's sign on all.
    return x * -1.0


@triton.jit
def copysign(a, b):
    return tl.where(signbit(b), _neg(tl.abs(a)), tl.abs(a))


@triton.jit
def ldexp(x, n):
    return x * tl.exp2(n.to(tl.float32))


@triton.jit
def ilogb(x):
    return tl.floor(tl.log2(tl.abs(x))).to(tl.int32)


# --- exact float arithmetic (Dekker; no fma: the interpreter's tl.fma rounds twice) -------
@triton.jit
def _split(a):
    # Veltkamp: a = hi + lo with 12 significant bits each (|a| < 2^115: 4097 a must not overflow)
    c = a * 4097.0
    hi = c - (c - a)
    return hi, a - hi


@triton.jit
def _two_prod(a, b):
    # a * b = p + e exactly (Dekker), barring overflow and underflow of the partial products
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


@triton.jit
def _two_sum(a, b):
    # a + b = s + e exactly (Knuth)
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


@triton.jit
def _pow2i(k):
    # 2^k, exact, for an integer-valued float32 k in [-126, 127]
    return ((k.to(tl.int32) + 127) << 23).to(tl.float32, bitcast=True)


@triton.jit
def _exponent(x):
    # floor(log2(x)) of a finite x > 0 (subnormals too), exactly, from the bits
    sub = x < 1.1754943508222875e-38
    bits = tl.where(sub, x * 16777216.0, x).to(tl.int32, bitcast=True)
    return (((bits >> 23) & 255) - tl.where(sub, 151, 127)).to(tl.float32)


@triton.jit
def _fmod_step(r, d):
    # r - floor(r / d) d for 0 <= r < 2^23 d, exactly: the float quotient is the integer or
    # one above it (rounding is monotonic), r - q d comes back from Dekker's product, and
    # a negative remainder takes d back; scaled by 2^+-64 where d's partial products
    # would overflow or underflow
    s = tl.where(
        d < 8.271806125530277e-25,
        1.8446744073709552e19,
        tl.where(d > 1.2676506002282294e30, 5.421010862427522e-20, 1.0),
    )
    rs = r * s
    ds = d * s
    q = tl.floor(rs / ds)
    p, e = _two_prod(q, ds)
    rem = (rs - p) - e
    rem = tl.where(rem < 0, rem + ds, rem)
    return tl.where(r < d, r, rem / s)


@triton.jit
def _fmod32(a, b):
    # exact, as C's fmod: |a| is reduced modulo y 2^k (a multiple of y = |b|) with k chosen
    # so that each quotient stays below 2^23, 22 exponents a step (13 steps cover float32's
    # 276); y 2^k is built from y's bits (exact). C's special values: fmod(x, +-inf) = x, nan
    # for x = +-inf or y = 0, a zero result has a's sign. Where |a| / |b| overflows float32:
    # nan, as eager's CPU vector kernel (Sleef's fmodf) returns there (C, CUDA and eager's
    # scalar tail: the exact remainder; drop the `over` term below for those)
    x = tl.abs(a)
    y = tl.abs(b)
    ok = (x < float("inf")) & (y < float("inf")) & (y > 0)
    x = tl.where(ok, x, 0.0)
    y = tl.where(ok, y, 1.0)
    ey = _exponent(y)
    yn = tl.where(y < 1.1754943508222875e-38, y * 16777216.0, y)
    mant = yn.to(tl.int32, bitcast=True) & 0x7FFFFF
    r = x
    for _ in range(13):
        k = tl.maximum(_exponent(r) - ey - 22.0, 0.0)  # r = 0: -151, k = 0
        ed = ey + k
        big = ((ed.to(tl.int32) + 127) << 23 | mant).to(tl.float32, bitcast=True)
        d = tl.where(k == 0, y, tl.where(ed >= -126.0, big, y * _pow2i(tl.minimum(k, 127.0))))
        r = _fmod_step(r, d)
    r = tl.where(a < 0, -r, r)
    r = tl.where((tl.abs(b) == float("inf")) & (tl.abs(a) < float("inf")), a, r)
    over = ok & (x / y == float("inf"))
    nan = (tl.abs(a) == float("inf")) | (b == 0) | (a != a) | (b != b) | over
    r = tl.where(nan, float("nan"), r)
    return tl.where(r == 0, a * 0.0, r)


@triton.jit
def fmod(a, b):
    # either may be a Python number in generated code: tl.where makes both tensors
    a = tl.where(b == b, a, a)
    b = tl.where(a == a, b, b)
    dtype = (a + b).dtype
    if dtype == tl.float64:  # fp64 (opt-in narrowed or kept in ATen: the dtype policy)
        r = a - trunc(a / b) * b
        r = tl.where((tl.abs(b) == float("inf")) & (tl.abs(a) != float("inf")), a, r)
        return tl.where(r == 0, a * 0.0, r)
    return _fmod32(a.to(tl.float32), b.to(tl.float32)).to(dtype)


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
    # (x / log(u) first: um1 * x overflowed near x = 88.7; exp(x) = inf gave inf / inf)
    u = tl.exp(x)
    um1 = u - 1.0
    r = tl.where(u == float("inf"), u, um1 * (x / tl.log(u)))
    return tl.where(u == 1.0, x, tl.where(um1 == -1.0, -1.0, r))


@triton.jit
def log1p(x):
    # (x / (u - 1) first: log(u) * x overflowed near float max; x = inf gave inf / inf)
    u = 1.0 + x
    r = tl.where(u == float("inf"), u, tl.log(u) * (x / (u - 1.0)))
    return tl.where(u == 1.0, x, r)


@triton.jit
def log10(x):
    return tl.log(x) * _LOG10_E


@triton.jit
def _log2_dd(x):
    # log2(x) = hi + lo to ~2^-32 absolute for a finite x > 0: x = m 2^e with m in
    # [sqrt(1/2), sqrt(2)), ln(m) = 2 atanh(s) with s = (m - 1) / (m + 1) carried as a
    # double-float (s_hi + s_lo), its odd series, then the double-float product with 1/ln(2)
    e = _exponent(x)
    bits = tl.where(x < 1.1754943508222875e-38, x * 16777216.0, x).to(tl.int32, bitcast=True)
    m = ((bits & 0x7FFFFF) | 0x3F800000).to(tl.float32, bitcast=True)
    up = m > 1.4142135623730951
    m = tl.where(up, m * 0.5, m)
    e = tl.where(up, e + 1.0, e)
    f = m - 1.0  # exact (Sterbenz)
    u_hi, u_lo = _two_sum(m, 1.0)
    s_hi = f / u_hi
    p, pe = _two_prod(s_hi, u_hi)
    s_lo = (((f - p) - pe) - s_hi * u_lo) / u_hi
    z = s_hi * s_hi
    series = z * (
        0.6666666666666666
        + z
        * (
            0.4
            + z
            * (
                0.2857142857142857
                + z
                * (
                    0.2222222222222222
                    + z
                    * (0.18181818181818182 + z * (0.15384615384615385 + z * 0.13333333333333333))
                )
            )
        )
    )
    ln_hi, ln_lo = _two_sum(2.0 * s_hi, 2.0 * s_lo + s_hi * series + 2.0 * z * s_lo)
    # 1 / ln(2) = 1.4426950216293335 + 1.925963033500011e-08
    l_hi, l_lo = _two_prod(
        ln_hi, ln_hi * 0.0 + 1.4426950216293335
    )  # a tensor: constants fold in float64
    l_lo = l_lo + (ln_hi * 1.925963033500011e-08 + ln_lo * 1.4426950216293335)
    t_hi, t_lo = _two_sum(e, l_hi)
    return _two_sum(t_hi, t_lo + l_lo)


@triton.jit
def pow(a, b):
    a = tl.where(b == b, a, a)  # Python numbers to tensors (as fmod)
    b = tl.where(a == a, b, b)
    dtype = (a + b).dtype
    if dtype == tl.float64:
        return _pow_simple(a, b)
    return _pow32(a.to(tl.float32), b.to(tl.float32)).to(dtype)


@triton.jit
def _pow_simple(a, b):
    mag = tl.exp2(b * tl.log2(tl.abs(a)))
    return _pow_signs(a, b, mag)


@triton.jit
def _pow32(a, b):
    # |a|^b = 2^(b log2|a|) with log2 and the product in double-float (a rounded product
    # cost up to 40 ulp where b log2|a| is large), 2^n 2^f with n = round(b log2|a|), |f| <= 1/2.
    # |b| is clamped to 2^30, past which every result over- or underflows unless |a| = 1.
    # C99 pow's special values, as eager's std::pow: (-1)^+-inf = 1 and 1^y = 1 (y nan too),
    # an infinite exponent is even, -0 and -inf keep their sign under odd integral exponents,
    # nan only for a finite negative base with a finite non-integral exponent
    x = tl.abs(a)
    regular = (x > 0) & (x < float("inf")) & (tl.abs(b) < float("inf"))
    xs = tl.where(regular, x, 1.0)
    bs = tl.minimum(tl.maximum(tl.where(regular, b, 0.0), -1073741824.0), 1073741824.0)
    l_hi, l_lo = _log2_dd(xs)
    p, pe = _two_prod(bs, l_hi)
    pe = tl.where(tl.abs(p) > 400.0, 0.0, pe + bs * l_lo)  # past 400: over- or underflow
    p = tl.minimum(tl.maximum(p, -400.0), 400.0)
    n = tl.floor(p + 0.5)
    frac = (p - n) + pe  # p - n exact
    n = tl.minimum(tl.maximum(n, -252.0), 254.0)
    h = tl.floor(n * 0.5)
    mag = tl.exp2(frac) * _pow2i(h) * _pow2i(n - h)
    mag = tl.where(regular, mag, tl.exp2(b * tl.log2(x)))  # 0, inf, nan: exp2/log2's own
    return _pow_signs(a, b, mag)


@triton.jit
def _pow_signs(a, b, mag):
    finite_b = tl.abs(b) != float("inf")
    integral = tl.floor(b) == b
    odd = integral & finite_b & ((b - 2.0 * tl.floor(b * 0.5)) != 0)
    negative = (a < 0) | ((a == 0) & ((1.0 / a) < 0))
    out = tl.where(negative & odd, _neg(mag), mag)
    out = tl.where((a < 0) & (a != float("-inf")) & ~integral, float("nan"), out)
    out = tl.where((tl.abs(a) == 1) & ~finite_b, 1.0, out)
    out = tl.where(b == 1.0, a, out)  # exact
    return tl.where((b == 0) | (a == 1), 1.0, out)


# --- hyperbolic --------------------------------------------------------------------------
@triton.jit
def tanh(x):
    # -expm1(-2|x|) / (2 + expm1(-2|x|)) with Kahan's expm1 inline: (1 - e) / (1 + e)
    # cancelled for small |x| (tanh(1e-8) was 0); zeros keep their sign
    y = -2.0 * tl.abs(x)
    u = tl.exp(y)
    em = tl.where(u == 1.0, y, tl.where(u == 0.0, -1.0, (u - 1.0) * (y / tl.log(u))))
    t = -em / (2.0 + em)
    return tl.where(x < 0, -t, tl.where(x == 0, x, t))


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
    # above 2^28, asinh(x) is log(2x) to float32 rounding (ax * ax overflowed past 1.8e19)
    ax = tl.abs(x)
    r = log1p(ax + ax * ax / (1.0 + tl.sqrt(1.0 + ax * ax)))
    r = tl.where(ax > 268435456.0, tl.log(ax) + 0.6931471805599453, r)
    return tl.where(ax == 0, x, tl.where(x < 0, -r, r))  # -0 stays -0


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
    p = (
        ((8.05374449538e-2 * z2 - 1.38776856032e-1) * z2 + 1.99777106478e-1) * z2 - 3.33329491539e-1
    ) * z2 * z + z
    r = base + p
    return tl.where(x == 0, x, tl.where(x < 0, -r, r))  # -0 stays -0


@triton.jit
def atan2(y, x):
    # the angle from the smaller magnitude over the larger (atan on [0, 1]: no inf / inf, no
    # y / x overflow), then its octant; C's special values: atan2(+-0, -0) = +-pi,
    # atan2(+-inf, +-inf) = +-pi/4 or +-3pi/4, and the sign of a zero y is kept
    ay = tl.abs(y)
    ax = tl.abs(x)
    both_inf = (ay == float("inf")) & (ax == float("inf"))
    lo = tl.where(both_inf, 1.0, tl.minimum(ay, ax))
    hi = tl.where(both_inf, 1.0, tl.maximum(ay, ax))
    t = tl.where(hi == 0, 0.0, atan(lo / hi))
    t = tl.where(ay > ax, _HALF_PI - t, t)
    t = tl.where((x < 0) | ((x == 0) & ((1.0 / x) < 0)), _PI - t, t)
    r = tl.where((y < 0) | ((y == 0) & ((1.0 / y) < 0)), _neg(t), t)
    return tl.where((x != x) | (y != y), x + y, r)


@triton.jit
def asin(x):
    return atan2(x, tl.sqrt(1.0 - x * x))


@triton.jit
def acos(x):
    return atan2(tl.sqrt(1.0 - x * x), x)


# --- special functions -------------------------------------------------------------------
@triton.jit
def erfc(x):
    # 1 - erf(x) below 2; from 2 on exp(-x^2) * erfcx(x) by Laplace's continued fraction (as
    # erfcx below), so the tail keeps its relative accuracy instead of cancelling to 0 near
    # x = 3.9; exp(-x^2) split as exp(-h^2) exp(-(x - h)(x + h)) with h = x to 8 fraction bits
    # (h^2 exact in float32), since x*x's rounding would cost ~40 ulp at x = 9; past 16 (the
    # result underflows from ~10.1) the argument is clamped, so inf gives 0, not inf - inf
    big = tl.minimum(tl.maximum(x, 2.0), 16.0)
    t = big
    for k in tl.static_range(12, 0, -1):
        t = big + (k * 0.5) / t
    h = tl.floor(big * 256.0) / 256.0
    far = tl.exp(-h * h) * tl.exp(-(big - h) * (big + h)) * (0.5641895835477563 / t)
    return tl.where(x != x, x, tl.where(x < 2.0, 1.0 - tl.erf(x), far))  # nan stays nan


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
    r = tl.where(small, p1, p2) * y
    # the poles and the domain: erfinv(+-1) = +-inf, |y| > 1 is NaN (the polynomial gives neither)
    r = tl.where(tl.abs(y) == 1.0, y * float("inf"), r)
    return tl.where(tl.abs(y) > 1.0, float("nan"), r)


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
    # log(pi) - log|sin(pi x)|, not log(pi / |sin(pi x)|): the quotient overflows for subnormal x;
    # sin(pi x) from x's distance to the nearest integer (exact), not x * pi, whose rounding
    # is the whole of sin's argument near a pole (lgamma(-2.0000002) was 14.15, not 14.56)
    frac = x - tl.floor(x + 0.5)
    reflected = 1.1447298858494002 - tl.log(tl.abs(tl.sin(frac * _PI))) - _lgamma_positive(1.0 - x)
    r = tl.where(x < 0.5, reflected, _lgamma_positive(tl.maximum(x, 0.5)))
    r = tl.where((x == 1.0) | (x == 2.0), 0.0, r)  # exact zeros (the series gives ~3.6e-7)
    # -log|x| for tiny x (lgamma(x) = -log|x| - 0.577x + ...): pi x loses bits as a subnormal
    r = tl.where(tl.abs(x) < 1e-20, -tl.log(tl.abs(x)), r)
    # poles at 0 and the negative integers (sin(x * pi) is not exactly 0 there in float),
    # lgamma(+-inf) = inf, and NaN stays NaN (tl.maximum above drops it)
    pole = (x <= 0.0) & (x == tl.floor(x))
    r = tl.where(pole | (tl.abs(x) == float("inf")), float("inf"), r)
    return tl.where(x != x, x, r)


# --- Bessel functions and erfcx (Inductor's special.bessel_j0/j1/y0/y1, i0/i1, erfcx) -------
# Polynomial approximations of Abramowitz & Stegun 9.4.1-9.4.6 and 9.8.1-9.8.4 (absolute or
# relative errors below 2e-7: float32-accurate); t = (x/3)^2 or (x/3.75)^2, u = 3/x.
_TWO_OVER_PI: tl.constexpr = 0.6366197723675814


@triton.jit
def _j0_small(t):
    return 1.0 + t * (
        -2.2499997
        + t * (1.2656208 + t * (-0.3163866 + t * (0.0444479 + t * (-0.0039444 + t * 0.0002100))))
    )


@triton.jit
def _j1_small_over_x(t):
    return 0.5 + t * (
        -0.56249985
        + t
        * (0.21093573 + t * (-0.03954289 + t * (0.00443319 + t * (-0.00031761 + t * 0.00001109))))
    )


@triton.jit
def _f0(u):
    return 0.79788456 + u * (
        -0.00000077
        + u
        * (-0.00552740 + u * (-0.00009512 + u * (0.00137237 + u * (-0.00072805 + u * 0.00014476))))
    )


@triton.jit
def _theta0(x, u):
    return (
        x
        - 0.78539816
        + u
        * (
            -0.04166397
            + u
            * (
                -0.00003954
                + u * (0.00262573 + u * (-0.00054125 + u * (-0.00029333 + u * 0.00013558)))
            )
        )
    )


@triton.jit
def _f1(u):
    return 0.79788456 + u * (
        0.00000156
        + u
        * (0.01659667 + u * (0.00017105 + u * (-0.00249511 + u * (0.00113653 + u * -0.00020033))))
    )


@triton.jit
def _theta1(x, u):
    return (
        x
        - 2.35619449
        + u
        * (
            0.12499612
            + u
            * (
                0.00005650
                + u * (-0.00637879 + u * (0.00074348 + u * (0.00079824 + u * -0.00029166)))
            )
        )
    )


@triton.jit
def _j0_near(a):
    # |x| <= 5: (z - j01^2)(z - j02^2) R(z/25), z = x^2, with j01, j02 the first two zeros and
    # R our least-squares fit (relative error 1.3e-7 in float32 coefficients): the factors keep
    # the relative accuracy at the zeros, as eager's (Cephes) form, the same float32 factors
    z = a * a
    t = z * 0.04
    r = 0.005674693325149652 + t * (
        -0.006280058852881161
        + t
        * (
            0.0029902225673477615
            + t
            * (
                -0.000830919542811968
                + t
                * (
                    0.00015374230392091584
                    + t
                    * (
                        -2.0438016694234326e-05
                        + t
                        * (
                            2.0497110959969592e-06
                            + t * (-1.5762465442941465e-07 + t * 8.046138123221368e-09)
                        )
                    )
                )
            )
        )
    )
    return (z - 5.783185962946784) * (z - 30.471262343662087) * r


@triton.jit
def _j1_near_over_x(a):
    # |x| <= 5: j1(x) / x = (z - j11^2) S(z/25), j11 the first zero, S our fit (1.1e-7)
    z = a * a
    t = z * 0.04
    r = -0.03405537391318749 + t * (
        0.04843461886001967
        + t
        * (
            -0.028384384165423927
            + t
            * (
                0.009406155396946012
                + t
                * (
                    -0.002026678509844941
                    + t
                    * (
                        0.00030802885006553696
                        + t
                        * (
                            -3.4863423360446704e-05
                            + t
                            * (
                                3.0500942837219545e-06
                                + t * (-2.0810557715703803e-07 + t * 9.528776678401099e-09)
                            )
                        )
                    )
                )
            )
        )
    )
    return (z - 14.681970642123893) * r


@triton.jit
def _hankel(a, shift, p, qx):
    # x > 5: sqrt(2 / (pi x)) (P cos(xn) - Q sin(xn)), xn = x - shift rounded in float32 as
    # eager's kernel rounds it (A&S's phase polynomial added to x first: 1e5 ulp at j0(1e4))
    xn = a - shift
    return (p * tl.cos(xn) - (qx / a) * tl.sin(xn)) * 0.7978845608028654 / tl.sqrt(a)


@triton.jit
def j0(x):
    # x <= 5: _j0_near; beyond, Hankel's form with P(w) and x Q(w), w = 25 / x^2, our
    # least-squares fits to scipy's float64 j0/y0 (relative error below 6e-9)
    a = tl.abs(x)
    big = tl.maximum(a, 5.0)
    w = 25.0 / (big * big)
    p = 0.9999999999305201 + w * (
        -0.0028124927541019586
        + w
        * (
            0.00017931648981550825
            + w
            * (
                -3.576705901982839e-05
                + w
                * (
                    1.2422350791581705e-05
                    + w * (-4.333351732306067e-06 + w * 8.401264181789634e-07)
                )
            )
        )
    )
    qx = -0.12499999965454915 + w * (
        0.0029296513000719475
        + w
        * (
            -0.0003627332190725226
            + w
            * (
                0.00010610245182712778
                + w
                * (
                    -4.592474760093733e-05
                    + w * (1.7866895063532502e-05 + w * -3.649425924109943e-06)
                )
            )
        )
    )
    far = _hankel(big, 0.7853981633974483, p, qx)  # inf: nan, as eager (cos(inf))
    near = _j0_near(tl.minimum(a, 5.0))
    return tl.where(a != a, a, tl.where(a <= 5.0, near, far))  # nan stays nan


@triton.jit
def j1(x):
    a = tl.abs(x)
    big = tl.maximum(a, 5.0)
    w = 25.0 / (big * big)
    p = 1.0000000000764377 + w * (
        0.004687492025761632
        + w
        * (
            -0.00023057329988545778
            + w
            * (
                4.2342234308634265e-05
                + w
                * (
                    -1.4192186543438178e-05
                    + w * (4.87729203930786e-06 + w * -9.395967142466624e-07)
                )
            )
        )
    )
    qx = 0.37499999962289715 + w * (
        -0.004101522947895928
        + w
        * (
            0.00044342336738808645
            + w
            * (
                -0.00012270182966197662
                + w
                * (
                    5.178096231967416e-05
                    + w * (-1.9928057432124753e-05 + w * 4.0513968462508095e-06)
                )
            )
        )
    )
    far = _hankel(big, 2.356194490192345, p, qx)
    near = a * _j1_near_over_x(tl.minimum(a, 5.0))
    r = tl.where(a <= 5.0, near, far)
    r = tl.where((x != x) | (x == 0), x, r)  # nan stays nan, -0 stays -0 (eager: x * ...)
    return tl.where(x < 0.0, -r, r)


@triton.jit
def y0(x):
    big = tl.maximum(x, 3.0)
    u = 3.0 / big
    far = _f0(u) * tl.sin(_theta0(big, u)) / tl.sqrt(big)
    s = tl.minimum(tl.maximum(x, 0.0), 3.0)
    t = (s / 3.0) * (s / 3.0)
    near = _TWO_OVER_PI * tl.log(s * 0.5) * _j0_small(t) + (
        0.36746691
        + t
        * (
            0.60559366
            + t
            * (
                -0.74350384
                + t * (0.25300117 + t * (-0.04261214 + t * (0.00427916 + t * -0.00024846)))
            )
        )
    )
    r = tl.where(x <= 3.0, near, far)
    return tl.where(x < 0.0, float("nan"), r)


@triton.jit
def y1(x):
    big = tl.maximum(x, 3.0)
    u = 3.0 / big
    far = _f1(u) * tl.sin(_theta1(big, u)) / tl.sqrt(big)
    s = tl.minimum(tl.maximum(x, 0.0), 3.0)
    t = (s / 3.0) * (s / 3.0)
    xy1 = _TWO_OVER_PI * s * tl.log(s * 0.5) * (s * _j1_small_over_x(t)) + (
        -0.6366198
        + t
        * (
            0.2212091
            + t
            * (2.1682709 + t * (-1.3164827 + t * (0.3123951 + t * (-0.0400976 + t * 0.0027873))))
        )
    )
    near = xy1 / s
    r = tl.where(x <= 3.0, near, far)
    r = tl.where(x == 0.0, float("-inf"), r)  # the pole (s * log(s) is NaN at 0)
    return tl.where(x < 0.0, float("nan"), r)


@triton.jit
def cyl_bessel_i0(x):
    a = tl.abs(x)
    t = (a / 3.75) * (a / 3.75)
    near = 1.0 + t * (
        3.5156229
        + t * (3.0899424 + t * (1.2067492 + t * (0.2659732 + t * (0.0360768 + t * 0.0045813))))
    )
    big = tl.maximum(a, 3.75)
    v = 3.75 / big
    scaled = 0.39894228 + v * (
        0.01328592
        + v
        * (
            0.00225319
            + v
            * (
                -0.00157565
                + v
                * (
                    0.00916281
                    + v * (-0.02057706 + v * (0.02635537 + v * (-0.01647633 + v * 0.00392377)))
                )
            )
        )
    )
    return tl.where(
        a != a, a, tl.where(a < 3.75, near, scaled * (tl.exp(big) / tl.sqrt(big)))
    )  # nan stays nan


@triton.jit
def cyl_bessel_i1(x):
    a = tl.abs(x)
    t = (a / 3.75) * (a / 3.75)
    near = a * (
        0.5
        + t
        * (
            0.87890594
            + t
            * (0.51498869 + t * (0.15084934 + t * (0.02658733 + t * (0.00301532 + t * 0.00032411))))
        )
    )
    big = tl.maximum(a, 3.75)
    v = 3.75 / big
    scaled = 0.39894228 + v * (
        -0.03988024
        + v
        * (
            -0.00362018
            + v
            * (
                0.00163801
                + v
                * (
                    -0.01031555
                    + v * (0.02282967 + v * (-0.02895312 + v * (0.01787654 + v * -0.00420059)))
                )
            )
        )
    )
    r = tl.where(
        a != a, a, tl.where(a < 3.75, near, scaled * (tl.exp(big) / tl.sqrt(big)))
    )  # nan stays nan
    return tl.where(x < 0.0, -r, r)


@triton.jit
def erfcx(x):
    # exp(x^2) erfc(x): directly below 2; above, Laplace's continued fraction for erfc
    # (12 levels: relative error < 3e-7 from x = 2 on), which never forms exp(x^2)
    big = tl.maximum(x, 2.0)
    t = big
    for k in tl.static_range(12, 0, -1):
        t = big + (k * 0.5) / t
    far = 0.5641895835477563 / t
    s = tl.minimum(x, 2.0)
    # exp(s*s) with s*s rounded, as eager's float kernel: the exact square (as erfc's split)
    # is ~1 ulp from the truth but 30-40 ulp from eager at s = -9, past upstream's rtol
    near = tl.exp(s * s) * (1.0 - tl.erf(s))
    return tl.where(x != x, x, tl.where(x < 2.0, near, far))  # nan stays nan
