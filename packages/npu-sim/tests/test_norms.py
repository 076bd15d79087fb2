"""Normalizations on npu run as a device runs them (norms.cpp): in float16/bfloat16 with the
float32 statistics the meta kernels (fake tensors, torch.compile) give a non-CPU device, the
output rounded once from float32, running statistics updated in their own dtype; in float32
exactly the CPU kernel."""

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

A = torch.ops.aten
LOWP = [torch.float16, torch.bfloat16]


def _bn_args(dtype, n=4):
    torch.manual_seed(0)
    return (
        torch.randn(2, n, 3, 3, dtype=dtype),
        torch.randn(n, dtype=dtype),
        torch.randn(n, dtype=dtype),
        torch.zeros(n, dtype=dtype),
        torch.ones(n, dtype=dtype),
    )


CALLS = {
    "native_layer_norm": lambda x, w, b, rm, rv: A.native_layer_norm(x, [3, 3], None, None, 1e-5),
    "native_batch_norm": lambda x, w, b, rm, rv: A.native_batch_norm(
        x, w, b, rm, rv, True, 0.1, 1e-5
    ),
    "_native_batch_norm_legit": lambda x, w, b, rm, rv: A._native_batch_norm_legit(
        x, w, b, rm, rv, True, 0.1, 1e-5
    ),
    "_native_batch_norm_legit.no_stats": lambda x, w, b, rm, rv: (
        A._native_batch_norm_legit.no_stats(x, w, b, True, 0.1, 1e-5)
    ),
    "_batch_norm_with_update": lambda x, w, b, rm, rv: A._batch_norm_with_update(
        x, w, b, rm, rv, 0.1, 1e-5
    ),
}


@pytest.mark.parametrize("dtype", LOWP, ids=str)
@pytest.mark.parametrize("name", list(CALLS))
def test_low_precision_norms_match_the_meta_kernel_and_the_float_computation(name, dtype):
    call = CALLS[name]
    args = _bn_args(dtype)
    npu = [a.to("npu") for a in args]
    out = call(*npu)
    with FakeTensorMode(allow_non_fake_inputs=True) as mode:
        fake = call(*[mode.from_tensor(a.to("npu")) for a in args])
    tensors = [t for t in out if isinstance(t, torch.Tensor)]
    assert [t.dtype for t in tensors] == [t.dtype for t in fake if isinstance(t, torch.Tensor)]
    assert tensors[1].dtype == torch.float32  # the statistics, as on cuda
    ref_args = [a.float() for a in args]
    ref = call(*ref_args)
    assert torch.equal(tensors[0].cpu(), ref[0].to(dtype))  # computed in float32, rounded once
    torch.testing.assert_close(tensors[1].cpu(), ref[1])
    # running statistics: updated as the float32 computation updated them, in their own dtype
    assert npu[3].dtype == dtype
    torch.testing.assert_close(npu[3].cpu(), ref_args[3].to(dtype))
    torch.testing.assert_close(npu[4].cpu(), ref_args[4].to(dtype))


@pytest.mark.parametrize("name", list(CALLS))
def test_float32_norms_are_the_cpu_kernel(name):
    call = CALLS[name]
    args = _bn_args(torch.float32)
    npu = [a.to("npu") for a in args]
    out, ref = call(*npu), call(*args)
    for a, e in zip(out, ref):
        assert torch.equal(a.cpu(), e)
    assert torch.equal(npu[3].cpu(), args[3]) and torch.equal(npu[4].cpu(), args[4])


def test_low_precision_input_with_float32_parameters_runs_as_on_cuda():
    # autocast's mix: a float16 activation into a float32 BatchNorm (the CPU kernel refuses it)
    x, w, b, rm, rv = _bn_args(torch.float32)
    rm_npu = rm.to("npu")
    out = A.native_batch_norm(
        x.half().to("npu"), w.to("npu"), b.to("npu"), rm_npu, rv.to("npu"), True, 0.1, 1e-5
    )
    ref = A.native_batch_norm(x.half().float(), w, b, rm, rv, True, 0.1, 1e-5)
    assert out[0].dtype == torch.float16 and out[1].dtype == torch.float32
    assert torch.equal(out[0].cpu(), ref[0].half())
    torch.testing.assert_close(rm_npu.cpu(), rm)


@pytest.mark.parametrize("dtype", LOWP, ids=str)
def test_low_precision_norm_backward(dtype):
    import copy

    torch.manual_seed(0)
    x = torch.randn(2, 4, 3, 3, dtype=dtype)
    model = torch.nn.Sequential(torch.nn.LayerNorm([3, 3]), torch.nn.BatchNorm2d(4))

    def grads(m, xi):
        xi.requires_grad_()
        m(xi).float().pow(2).sum().backward()
        return [xi.grad, m[0].weight.grad, m[1].weight.grad]

    on_npu = grads(copy.deepcopy(model).to(dtype).to("npu"), x.to("npu"))
    in_float = grads(copy.deepcopy(model).to(dtype).float(), x.float())  # the float32 computation
    assert [g.dtype for g in on_npu] == [dtype] * 3
    for g, e in zip(on_npu, in_float):
        torch.testing.assert_close(g.cpu().float(), e, atol=5e-2, rtol=5e-2)


@pytest.mark.parametrize("dtype", LOWP + [torch.float32], ids=str)
def test_empty_input_norms(dtype):
    x = torch.empty(0, 4, dtype=dtype)
    out = A.native_layer_norm(x.to("npu"), [4], None, None, 1e-5)
    stats = torch.float32 if dtype in LOWP else dtype
    assert [t.dtype for t in out] == [dtype, stats, stats] and out[0].shape == (0, 4)
    g = torch.empty(
        0, 4, 3, dtype=dtype
    )  # group norm keeps the input's dtype everywhere (its meta)
    expected = A.native_group_norm(g, None, None, 0, 4, 3, 2, 1e-5)
    actual = A.native_group_norm(g.to("npu"), None, None, 0, 4, 3, 2, 1e-5)
    assert [t.dtype for t in actual] == [t.dtype for t in expected]
