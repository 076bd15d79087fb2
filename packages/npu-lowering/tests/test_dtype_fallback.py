"""No dtype fails a compile (issue 16 item 2): a node whose dtype npu kernels do not take
(float64, complex, ...) lowers to the device's ATen op, per node; the rest of the graph is
still generated and fused as Triton kernels, none of which reads or writes such a dtype."""

import logging
import re

import pytest
import torch
from torch._inductor.utils import run_and_get_code

import npu_lowering.config as npu_config
from npu_lowering import dtype_policy
from npu_lowering.passes import UnsupportedDtype

FOREIGN_IN_KERNEL = re.compile(r"'\*?(fp64|c64|c128|fp8\w*)'")


def _cpu(args):
    return [a.detach().cpu().clone() if isinstance(a, torch.Tensor) else a for a in args]


def compile_run(fn, *args, **compile_kwargs):
    """Compile for npu, check against eager on CPU copies, return the generated code."""
    torch._dynamo.reset()
    ref = fn(*_cpu(args))
    out, codes = run_and_get_code(torch.compile(fn, **compile_kwargs), *args)
    outs, refs = (out, ref) if isinstance(out, (tuple, list)) else ((out,), (ref,))
    for o, r in zip(outs, refs):
        assert o.device.type == "npu" and o.dtype == r.dtype
        torch.testing.assert_close(o.cpu(), r, atol=1e-5, rtol=1e-5)
    code = "\n".join(codes)
    assert not FOREIGN_IN_KERNEL.search(code), "a Triton kernel takes a dtype npu kernels do not"
    return code


def kernels(code):
    return code.count("@triton.jit")


def test_the_leads_repro_compiles_as_aten_ops():
    x = torch.randn(8, dtype=torch.float64, device="npu")
    code = compile_run(lambda a: a * 2 + 1, x)
    assert kernels(code) == 0
    assert "torch.ops.aten.mul.Tensor(" in code and "torch.ops.aten.add.Tensor(" in code


def test_a_mixed_graph_still_fuses_its_float32_parts():
    a = torch.randn(4, 6, device="npu")
    b = torch.randn(4, 6, dtype=torch.float64, device="npu")
    # float32 chain -> float64 node -> float32 chain: two fused kernels around the fallbacks
    code = compile_run(lambda a, b: ((a.sin() * 2).double() * b).float().cos().exp() + a, a, b)
    assert kernels(code) == 2
    assert "torch.ops.aten.mul.Tensor(" in code
    assert re.search(r"def triton_poi_fused_\w*sin\w*\(", code)


def test_mixed_dtype_in_place_ops():
    a = torch.randn(8, device="npu")
    b = torch.randn(8, dtype=torch.float64, device="npu")
    a_ref, b_ref = a.cpu().add_(b.cpu()), b.cpu() * 3
    torch._dynamo.reset()
    torch.compile(lambda a, b: a.add_(b))(a, b)
    torch.compile(lambda b: b.mul_(3))(b)
    torch.testing.assert_close(a.cpu(), a_ref)
    torch.testing.assert_close(b.cpu(), b_ref)


@pytest.mark.parametrize(
    "case", ["cumprod", "softmax", "scatter_add", "index_put", "dtype_view", "factory"]
)
def test_float64_ops(case):
    x = torch.randn(4, 6, dtype=torch.float64, device="npu")
    idx = torch.randint(0, 4, (4, 6), device="npu")
    fns = {
        "cumprod": (lambda x: x.cumprod(1), (x,)),
        "softmax": (lambda x: torch.softmax(x, -1), (x,)),
        "scatter_add": (lambda x, i: torch.zeros_like(x).scatter_add(0, i, x), (x, idx)),
        "index_put": (
            lambda x, i: torch.zeros(8, dtype=x.dtype, device=x.device).index_put(
                (i[0],), x[0], True
            ),
            (x, idx),
        ),
        "dtype_view": (lambda x: (x.view(torch.int64) + 1).view(torch.float64), (x,)),
        "factory": (
            lambda y: y + torch.arange(6, device=y.device, dtype=torch.float64),
            (x.float(),),
        ),
    }
    fn, args = fns[case]
    compile_run(fn, *args)


def test_complex_tensors():
    a = torch.randn(4, 2, device="npu")
    c = torch.randn(5, dtype=torch.complex64, device="npu")
    compile_run(lambda a: torch.view_as_real(torch.view_as_complex(a) * 2) + 1, a)
    compile_run(lambda x, y: x + y * 2, c, c)
    compile_run(lambda a: torch.fft.fft(a).abs() * 2, a[:, 0].contiguous())


def test_training_step_with_a_float64_node():
    def f(a, b):
        return (a.double() * b).sin().sum() + (a.exp() * a).sum()

    a = torch.randn(4, 6, device="npu", requires_grad=True)
    b = torch.randn(4, 6, dtype=torch.float64, device="npu", requires_grad=True)
    ac, bc = (t.detach().cpu().requires_grad_() for t in (a, b))
    torch._dynamo.reset()
    _, codes = run_and_get_code(lambda: torch.compile(f)(a, b).backward())
    f(ac, bc).backward()
    torch.testing.assert_close(a.grad.cpu(), ac.grad)
    torch.testing.assert_close(b.grad.cpu(), bc.grad)
    assert not any(FOREIGN_IN_KERNEL.search(c) for c in codes)


def test_dynamic_shapes():
    torch._dynamo.reset()
    fn = torch.compile(lambda x: (x * 2).sum() + x.float().cos().sum(), dynamic=True)
    for n in (5, 7):
        x = torch.randn(n, dtype=torch.float64, device="npu")
        # the fp32 part is summed in another order than eager's: fp32 tolerance, in an fp64 result
        torch.testing.assert_close(
            fn(x).cpu(), (x.cpu() * 2).sum() + x.cpu().float().cos().sum(), atol=1e-5, rtol=1e-6
        )


@pytest.fixture
def fresh_counts(monkeypatch, tmp_path):
    """Counts and the 'logged once' memory start empty; the doctor's file is in tmp_path; every
    graph is lowered (an FX-graph-cache hit runs no lowering, so it counts nothing)."""
    monkeypatch.setattr(dtype_policy, "_counts", type(dtype_policy._counts)())
    monkeypatch.setattr(dtype_policy, "counts_path", lambda: tmp_path / dtype_policy.COUNTS_FILE)
    with torch._inductor.config.patch(fx_graph_cache=False):
        yield


def test_an_unspecialized_python_float_stays_out_of_npu_kernels():
    # GPT-2's gelu under dynamic shapes: Dynamo passes math.pi as a float64 0-d CPU tensor and
    # Inductor computes sqrt(2 / pi) inside the npu kernel, in float64 (Ascend check: "Expected
    # dtype fp32 but got fp64" for sqrt; bishengir has no float64 vectors). The 0-d CPU scalar
    # math falls back to ATen on the CPU; the kernel takes the float32 result.
    import math

    def gelu_new(x):
        return (
            0.5
            * x
            * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
        )

    code = compile_run(gelu_new, torch.randn(4, 8, device="npu"), dynamic=True)
    assert kernels(code) == 1 and "tl.float64" not in code


def test_each_fallback_is_logged_once_per_op_and_dtype_and_counted(fresh_counts, caplog):
    x = torch.randn(8, dtype=torch.float64, device="npu")
    with caplog.at_level(logging.WARNING, logger=dtype_policy.__name__):
        compile_run(lambda a: a * 2, x)
        compile_run(lambda a: a * 3 * a, x)
    logged = [r.getMessage() for r in caplog.records if r.name == dtype_policy.__name__]
    assert len(logged) == 1 and "aten.mul.Tensor on float64 falls back" in logged[0]
    assert dtype_policy.counts() == {("aten.mul.Tensor", "float64"): 3}

    report = dtype_policy.doctor_report()
    assert report["status"] == "ok" and report["counts"] == {"aten.mul.Tensor float64": 3}
    assert "3 node(s) of 1 op/dtype pair(s)" in report["summary"]


def test_npu_inductor_doctor_shows_the_counts(fresh_counts):
    from importlib import metadata

    (ep,) = [
        e
        for e in metadata.entry_points(group="npu_inductor.doctor_reports")
        if e.name == "fallbacks"
    ]
    compile_run(lambda a: a.cumprod(0), torch.randn(4, dtype=torch.complex64, device="npu"))
    assert ep.load()()["counts"] == {"aten.cumprod.default complex64": 1}
    doctor = pytest.importorskip("npu_inductor.doctor")
    code, data, text = doctor._run(None)
    assert data["compiles"]["reports"]["fallbacks"]["counts"] == {
        "aten.cumprod.default complex64": 1
    }
    assert re.search(r"^fallbacks\s+dtype policy fallback; 1 node", text, re.M)
    assert "aten.cumprod.default complex64: 1" in text


def test_the_error_policy_names_the_op_and_dtype():
    x = torch.ones(4, device="npu", dtype=torch.float64)
    torch._dynamo.reset()
    with (
        npu_config.patch(dtype_policy="error"),
        pytest.raises(Exception, match=r"aten\.mul\.Tensor computes torch\.float64 on npu") as info,
    ):
        torch.compile(lambda a: a * 2)(x)
    assert isinstance(info.value, UnsupportedDtype) or "UnsupportedDtype" in str(info.value)


def test_a_bad_policy_is_a_clear_error():
    with npu_config.patch(dtype_policy="downcats"):
        with pytest.raises(
            ValueError,
            match="NPU_LOWERING_DTYPE_POLICY='downcats': expected one of fallback, error",
        ):
            dtype_policy.policy()
        assert dtype_policy.doctor_report()["status"] == "error"


def test_the_policy_is_in_the_fx_graph_cache_key():
    default = npu_config.save_config_portable(ignore_private_configs=False)
    with npu_config.patch(dtype_policy="error"):
        assert npu_config.save_config_portable(ignore_private_configs=False) != default
    # end to end: the graph compiled under "fallback" is in the FX graph cache; under "error"
    # the key differs (npu's device_custom_config), so the compile runs (and refuses) instead
    # of serving the cached one
    x = torch.ones(4, device="npu", dtype=torch.float64)
    fn = lambda a: a * 5 - 1  # noqa: E731
    torch._dynamo.reset()
    torch.compile(fn)(x)
    torch._dynamo.reset()
    with (
        npu_config.patch(dtype_policy="error"),
        pytest.raises(Exception, match="forbids the ATen fallback"),
    ):
        torch.compile(fn)(x)
