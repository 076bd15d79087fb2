"""The float64 opt-in (issue 19 item 2): by default float64 is never computed in a narrower
type; with ``npu_lowering.config.fp64_compute = "fp32"`` npu kernels compute it in float32,
say so in their source and warn once per kernel, naming it; the kernels take no float64
(the casts at the edges are ATen ops: triton-ascend refuses float64 loads and stores)."""

import warnings

import pytest
import torch
from torch._inductor.utils import fresh_cache, run_and_get_code

import npu_lowering.config as npu_config
from npu_lowering import dtype_policy, fp64_compute


def fn(a, b):
    return (a * b + 1.5).sum(1), (a.exp() - b).mean(), a.max(1).values, a.float() * 2


def inputs():
    torch.manual_seed(0)
    a = torch.randn(4, 300, dtype=torch.float64, device="npu") + 2**-30
    return a, torch.randn(300, dtype=torch.float64, device="npu")


def compile_recording(*args):
    torch._dynamo.reset()
    with fresh_cache(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, codes = run_and_get_code(torch.compile(fn), *args)
    said = [
        str(w.message) for w in caught if "computes float64 values in float32" in str(w.message)
    ]
    return out, "\n".join(codes), said


def test_default_is_exact_float64_with_no_narrowing():
    a, b = inputs()
    out, code, said = compile_recording(a, b)
    for o, r in zip(out, fn(a.cpu(), b.cpu())):
        assert o.dtype == r.dtype and torch.equal(o.cpu(), r)
    assert not said and fp64_compute.MARK not in code and "'*fp64'" not in code


def test_opt_in_computes_float64_in_float32_and_warns_once_per_kernel():
    a, b = inputs()
    with npu_config.patch(fp64_compute="fp32"):
        out, code, said = compile_recording(a, b)
        _, _, again = compile_recording(a, b)  # the same kernels again: no second warning
    kernels = [
        part for part in code.split("async_compile.triton(")[1:] if fp64_compute.MARK in part
    ]
    # float32 kernels between the device's float64 <-> float32 casts (triton-ascend takes no fp64)
    assert kernels and "'*fp64'" not in code and "tl.float64" not in code
    assert "torch.float32" in code.split("async_compile.wait")[-1]  # the cast, in the wrapper
    names = sorted(part.split("'")[1] for part in kernels)
    assert sorted(m.split()[2] for m in said) == names  # each kernel named, once
    assert not again
    ref = fn(a.cpu(), b.cpu())
    for o, r in zip(out, ref):
        assert o.dtype == r.dtype
        torch.testing.assert_close(o.cpu(), r, atol=1e-4, rtol=1e-5)
    assert not torch.equal(out[0].cpu(), ref[0])  # float32 arithmetic, visibly


def test_opt_in_keeps_mutated_float64_tensors_float64():
    acc = torch.zeros(8, dtype=torch.float64, device="npu")
    x = torch.randn(8, dtype=torch.float64, device="npu")

    def step(acc, x):
        acc.add_(x * 3)
        return acc.sum()

    with npu_config.patch(fp64_compute="fp32"):
        torch._dynamo.reset()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            total = torch.compile(step)(acc, x)
    torch.testing.assert_close(acc.cpu(), x.cpu() * 3, atol=1e-6, rtol=1e-6)
    assert total.dtype == torch.float64 and acc.dtype == torch.float64
    torch.testing.assert_close(total.cpu(), (x.cpu() * 3).sum(), atol=1e-5, rtol=1e-6)


def test_doctor_shows_the_float64_decision_and_bad_values_are_named():
    assert dtype_policy.doctor_report()["decisions"]["float64"] == "ATen per node"
    with npu_config.patch(fp64_compute="fp32"):
        report = dtype_policy.doctor_report()
        assert report["decisions"]["float64"].startswith("float32 in npu kernels")
        assert any(row.startswith("float64: float32 in npu kernels") for row in report["rows"])
    with (
        npu_config.patch(fp64_compute="fp16"),
        pytest.raises(ValueError, match="NPU_LOWERING_FP64_COMPUTE"),
    ):
        fp64_compute.mode()
