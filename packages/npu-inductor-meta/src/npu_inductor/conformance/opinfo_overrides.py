"""Per-op comparison overrides of the OpInfo conformance sweep: the ones upstream's Inductor
OpInfo test applies on cuda (``inductor_override_kwargs["cuda"]`` in
test/inductor/test_torchinductor_opinfo.py), which the issue asks us to compare with. Our own
table of the same facts, by (op, dtype) with the sweep's dtype names; an entry keyed by the op
alone applies to every dtype.

- ``reference_in_float``: eager runs on the sample upcast to float32 and its result is cast
  back to the low-precision dtype (upstream's ``check_model``): the compiled kernel computes in
  float32 and rounds once, where eager rounds after every op.
- ``atol`` / ``rtol``: replace the dtype's defaults; ``grad_atol`` / ``grad_rtol`` for gradients.
- ``check_gradient``: False where upstream does not compare gradients.

Upstream's cuda test does not cover bfloat16; a bf16 pair takes its op's fp16 entry (bf16's
default tolerances are already the wider ones).
"""

from __future__ import annotations

_F = {"reference_in_float": True}

OVERRIDES: dict = {
    ("cross", "fp16"): _F,
    ("linalg.cross", "fp16"): _F,
    ("addr", "fp16"): _F,
    ("baddbmm", "fp16"): {
        "atol": 2e-3,
        "rtol": 2e-3,
    },  # upstream: its decomposition affects accuracy
    ("asin", "fp16"): _F,
    ("atanh", "fp16"): _F,
    "cauchy": _F,
    ("cummax", "fp16"): {"atol": 5e-4, "rtol": 2e-3},
    ("cumsum", "fp16"): _F,
    "cumprod": {"reference_in_float": True, "atol": 7e-5, "rtol": 2e-3},
    "logcumsumexp": {"grad_atol": 8e-4, "grad_rtol": 1e-3},
    "exponential": _F,
    "geometric": _F,
    ("kron", "fp16"): _F,
    "log_normal": _F,
    ("masked.softmin", "fp16"): {"atol": 1e-4, "rtol": 1e-2},
    ("nn.functional.batch_norm", "fp16"): _F,
    ("nn.functional.batch_norm.without_cudnn", "fp16"): _F,
    ("nn.functional.cosine_similarity", "fp16"): _F,
    ("nn.functional.instance_norm", "fp16"): _F,
    ("nn.functional.local_response_norm", "fp16"): _F,
    ("nn.functional.normalize", "fp16"): {"atol": 1e-3, "rtol": 5e-2},
    ("nn.functional.rms_norm", "fp16"): _F,
    ("nn.functional.soft_margin_loss", "fp16"): _F,
    ("nn.functional.softmin", "fp16"): {"atol": 1e-4, "rtol": 1e-2},
    ("nn.functional.softsign", "fp16"): _F,
    ("nn.functional.tanhshrink", "fp16"): {"atol": 3e-4, "rtol": 1e-3},
    ("outer", "fp16"): _F,
    ("round.decimals_3", "fp16"): _F,
    ("nn.functional.triplet_margin_loss", "fp16"): {"atol": 1e-4, "rtol": 2e-2},
    ("nn.functional.triplet_margin_with_distance_loss", "fp16"): {"atol": 1e-4, "rtol": 2e-2},
    ("sinc", "fp16"): {"atol": 8e-3, "rtol": 2e-3},
    ("softmax", "fp16"): {"atol": 1e-4, "rtol": 2e-2},
    ("_softmax_backward_data", "fp16"): {"atol": 8e-3, "rtol": 2e-3},
    ("std_mean.unbiased", "fp16"): _F,
    "uniform": _F,
    ("_unsafe_masked_index_put_accumulate", "fp16"): {"atol": 1e-4, "rtol": 1e-2},
    ("index_reduce.mean", "fp16"): {"check_gradient": False},
    ("index_reduce.mean", "fp32"): {"check_gradient": False},
    ("index_reduce.amin", "fp16"): {"check_gradient": False},
    ("index_reduce.amin", "fp32"): {"check_gradient": False},
    ("index_reduce.amax", "fp16"): {"check_gradient": False},
    ("index_reduce.amax", "fp32"): {"check_gradient": False},
    ("tanh", "fp16"): {"atol": 1e-4, "rtol": 1e-2},
}


# npu-sim's eager runs CPU kernels. Where a CPU kernel computes a low-precision op in half
# precision while cuda's (and Ascend's) compute in float, the compiled kernel (float inside,
# rounded once) disagrees with eager here but not on a device: these ops take the float
# reference too. Each was checked: the compiled result matches the float reference, eager
# does not (logit fp16: 17 of 125 elements off by up to 3% relative, compiled exact).

# Normalizations npu-sim runs as a device does in fp16/bf16 (float32 inside, float32 statistics,
# as their meta kernels say; npu-sim's csrc/norms.cpp), not as the CPU kernel: the eager sweep
# (npu vs cpu) compares them with cpu's float32 computation in the dtypes npu returns.
DEVICE_NORMS = frozenset(
    {
        "native_layer_norm",
        "native_batch_norm",
        "_native_batch_norm_legit",
        "_batch_norm_with_update",
        "nn.functional.batch_norm",
        "nn.functional.layer_norm",
        "nn.functional.instance_norm",
    }
)
CPU_EAGER_ROUNDS_IN_LOW_PRECISION = ("logit", "native_group_norm", "nn.functional.group_norm")
for _op in CPU_EAGER_ROUNDS_IN_LOW_PRECISION:
    OVERRIDES.setdefault((_op, "fp16"), _F)


def override(full_name: str, dtype: str) -> dict:
    """The overrides for one (op, dtype) pair: the op's own entry, else its (op, dtype) one
    (bf16 looks up fp16's), else none."""
    if full_name in OVERRIDES:
        return dict(OVERRIDES[full_name])
    key = (full_name, "fp16" if dtype == "bf16" else dtype)
    return dict(OVERRIDES.get(key, {}))
