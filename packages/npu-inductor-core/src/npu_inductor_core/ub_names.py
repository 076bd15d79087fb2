"""What the UB profile (``ub_profile``) knows of the names a generated Triton kernel uses: the
bytes of each element type (dtype and signature spellings), the reductions and scans and how
they reduce, Inductor's block names, and the buffers a native math function's expansion keeps."""

from __future__ import annotations

_DTYPE_BYTES = {
    "float64": 8,
    "int64": 8,
    "uint64": 8,
    "float32": 4,
    "int32": 4,
    "uint32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int16": 2,
    "uint16": 2,
    "int8": 1,
    "uint8": 1,
    "int1": 1,
    "bool": 1,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
    "float8e4nv": 1,
    "float8e5": 1,
    "float8e4b15": 1,
    "float8e4b8": 1,
    "float8e5b16": 1,
    # signature spellings
    "fp64": 8,
    "i64": 8,
    "u64": 8,
    "fp32": 4,
    "i32": 4,
    "u32": 4,
    "fp16": 2,
    "bf16": 2,
    "i16": 2,
    "u16": 2,
    "i8": 1,
    "u8": 1,
    "i1": 1,
    "fp8e4nv": 1,
    "fp8e5": 1,
}
_REDUCTIONS = {
    "sum",
    "max",
    "min",
    "max2",
    "min2",
    "prod",
    "argmax",
    "argmin",
    "reduce",
    "xor_sum",
    "any",
    "all",
    "welford_reduce",
    "welford",
    "max_with_index",
    "min_with_index",
    "online_softmax_reduce",
    "cumsum",
    "cumprod",
    "associative_scan",
}
_SCANS = {"cumsum", "cumprod", "associative_scan"}  # keep their shape
_VALUE_AND_INDEX = {"max_with_index", "min_with_index"}  # (value, index, axis)
_AXES = {
    "XBLOCK": "X",
    "YBLOCK": "Y",
    "ZBLOCK": "Z",
    "R0_BLOCK": "R0",
    "R1_BLOCK": "R1",
    "RBLOCK": "R0",
}

# extra buffers HFusion's expansion of a native math function keeps beside its result
_MATH_TEMPS: dict[str, int] = {
    "sin": 9,
    "cos": 9,
    # Philox rounds with 32x32->64-bit products, emulated
    "rand": 72,
    "randn": 80,
    "randint": 72,
    "randint4x": 96,
    "rand4x": 96,
}
I64_TEMPS = 4  # 64-bit integer multiply/divide/remainder: emulated in 32-bit steps
