"""Ops npu-sim falls back to the CPU for, in the dtypes accelerators take and the CPU kernel does
not (npu_sim/fallback_dtypes.py): they run on npu, in the dtype the op's meta kernel gives a
non-CPU device, with the values of the computation in the compute dtype rounded once.

The sweep takes every OpInfo of torch's database in each dtype cuda declares and the cpu does not
(among those torch_npu has: floats, integers, bool), forward and, where the op has autograd,
backward (the backward kernels are rows of the table too)."""

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

from npu_sim import fallback_dtypes

DTYPES = (torch.float16, torch.bfloat16, torch.float32, *fallback_dtypes.INTEGER, torch.bool)
SAMPLES = 3  # per (op, dtype): tiny shapes, every kernel runs on the host

# Accelerator dtypes no CPU-kernel conversion can give, each with the reason.
NOT_CONVERTED = {
    # cuda-only kernels (flash / memory-efficient attention): no CPU kernel in any dtype
    "torch.ops.aten._flash_attention_forward": "cuda-only kernel",
    "torch.ops.aten._efficient_attention_forward": "cuda-only kernel",
}


# Ops whose converted kernel sits inside a composite that runs in the low dtype on any device
# (stft: padding, framing, the overlap-add of its backward in bfloat16 around _fft_r2c, on cuda
# as here), against a reference computed wholly in float32: a gradient summed from values of
# the largest one's size and cancelling to near 0 is off by that size's bfloat16 rounding.
COMPOSITE_AROUND_KERNEL = {"stft"}


def _is_fft(op):
    return op.name.startswith(
        "fft."
    )  # refused by torch.fft's composite off cuda (fallback_dtypes.py)


def _pairs():
    for op in op_db:
        if op.name in NOT_CONVERTED or _is_fft(op):
            continue
        cpu, cuda = set(op.supported_dtypes("cpu")), set(op.supported_dtypes("cuda"))
        for d in DTYPES:
            if d in cuda and d not in cpu:
                yield pytest.param(
                    op, d, id=f"{op.name}.{op.variant_test_name}-{str(d)[6:]}".replace("..", ".")
                )


def _to(x, device, dtype_map=None):
    def conv(t):
        if not isinstance(t, torch.Tensor):
            return t
        leaf = t.detach().to(device)
        if dtype_map and leaf.dtype in dtype_map:
            leaf = leaf.to(dtype_map[leaf.dtype])
        return leaf.requires_grad_(t.requires_grad)

    return x.transform(conv) if hasattr(x, "transform") else torch.utils._pytree.tree_map(conv, x)


def _tensors(out):
    return [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def _reference(op, sample, dtype):
    """The op on cpu in the compute dtype the table names, results rounded once to `dtype`."""
    compute = {
        d: c for row in fallback_dtypes.TABLE for d, c in row.conversions().items() if d == dtype
    }
    s = _to(sample, "cpu", compute)
    return op(s.input, *s.args, **s.kwargs)


def _meta_dtypes(op, sample):
    try:
        s = _to(sample, "meta")
        return [t.dtype for t in _tensors(op(s.input, *s.args, **s.kwargs))]
    except Exception:  # noqa: BLE001  (an op without a meta kernel: no dtype to compare with)
        return None


@pytest.mark.parametrize("op,dtype", list(_pairs()))
def test_accelerator_dtype_runs_on_npu(op, dtype):
    samples = list(op.sample_inputs("cpu", dtype, requires_grad=False))[:SAMPLES]
    assert samples, "no sample"
    for sample in samples:
        npu_s = _to(sample, "npu")
        with torch.no_grad():  # inference, as users run it
            out = op(npu_s.input, *npu_s.args, **npu_s.kwargs)
        got = _tensors(out)
        meta = _meta_dtypes(op, sample)
        if meta is not None:
            assert [t.dtype for t in got] == meta, "result dtypes differ from the meta kernel's"
        if op.name == "nn.functional.rrelu":  # random slopes: dtype and shape only
            continue
        ref = _tensors(_reference(op, sample, dtype))
        for g, r in zip(got, ref):
            torch.testing.assert_close(g.cpu(), r.to(g.dtype), equal_nan=True)


def _grad_pairs():
    for p in _pairs():
        op, d = p.values
        if op.supports_autograd and d.is_floating_point:
            yield p


@pytest.mark.parametrize("op,dtype", list(_grad_pairs()))
def test_accelerator_dtype_backward_runs_on_npu(op, dtype):
    """The backward kernels (avg_pool3d_backward, the margin losses', the antialiased upsamples')."""
    for sample in list(op.sample_inputs("cpu", dtype, requires_grad=True))[:SAMPLES]:

        def grads(device, compute):
            s = _to(sample, device, compute)
            leaves = [
                t
                for t in _tensors(s.input) + _tensors(s.args) + _tensors(s.kwargs)
                if t.requires_grad
            ]
            outs = [t for t in _tensors(op(s.input, *s.args, **s.kwargs)) if t.requires_grad]
            if not outs or not leaves:
                return None
            torch.manual_seed(0)
            cot = [torch.ones_like(o) for o in outs]
            return torch.autograd.grad(outs, leaves, cot, allow_unused=True)

        got = grads("npu", None)
        if got is None or op.name == "nn.functional.rrelu":
            continue
        ref = grads("cpu", {dtype: torch.float32})
        for g, r in zip(got, ref):
            if g is None:
                continue
            assert g.dtype == dtype
            tol = {}
            if op.name in COMPOSITE_AROUND_KERNEL:  # one rounding of the largest value, absolute
                tol = dict(
                    atol=torch.finfo(dtype).eps * r.abs().max().item(),
                    rtol=torch.finfo(dtype).resolution,
                )
            torch.testing.assert_close(g.cpu(), r.to(dtype), equal_nan=True, **tol)


def test_every_row_is_an_accelerator_dtype_the_cpu_kernel_lacks():
    """No stale rows: with the table switched off, each row's op refuses each of its dtypes."""
    x5 = lambda d: torch.ones(1, 1, 2, 2, 2, dtype=d)  # noqa: E731
    x4 = lambda d: torch.ones(1, 1, 2, 2, dtype=d)  # noqa: E731
    A = torch.ops.aten
    calls = {
        "histc": lambda d: A.histc(torch.arange(4, dtype=d), 4, 0, 3),
        "abs": lambda d: A.abs(torch.ones(2, dtype=d)),
        "trace": lambda d: A.trace(torch.ones(2, 2, dtype=d)),
        "avg_pool3d": lambda d: A.avg_pool3d(x5(d), [2, 2, 2]),
        "avg_pool3d_backward": lambda d: A.avg_pool3d_backward(
            torch.ones(1, 1, 1, 1, 1, dtype=d),
            x5(d),
            [2, 2, 2],
            [2, 2, 2],
            [0, 0, 0],
            False,
            True,
            None,
        ),
        "_upsample_bilinear2d_aa": lambda d: A._upsample_bilinear2d_aa(x4(d), [3, 3], False),
        "_upsample_bilinear2d_aa_backward": lambda d: A._upsample_bilinear2d_aa_backward(
            torch.ones(1, 1, 3, 3, dtype=d), [3, 3], [1, 1, 2, 2], False
        ),
        "_upsample_bicubic2d_aa": lambda d: A._upsample_bicubic2d_aa(x4(d), [3, 3], False),
        "_upsample_bicubic2d_aa_backward": lambda d: A._upsample_bicubic2d_aa_backward(
            torch.ones(1, 1, 3, 3, dtype=d), [3, 3], [1, 1, 2, 2], False
        ),
        "multilabel_margin_loss_forward": lambda d: A.multilabel_margin_loss_forward(
            torch.ones(2, 3, dtype=d), torch.tensor([[0, -1, 0], [1, 2, -1]]), 1
        ),
        "multilabel_margin_loss_backward": lambda d: A.multilabel_margin_loss_backward(
            torch.tensor(1.0, dtype=d),
            torch.ones(2, 3, dtype=d),
            torch.tensor([[0, -1, 0], [1, 2, -1]]),
            1,
            torch.zeros(2, 3, dtype=d),
        ),
        "multi_margin_loss": lambda d: A.multi_margin_loss(
            torch.ones(2, 3, dtype=d), torch.tensor([0, 2])
        ),
        "multi_margin_loss_backward": lambda d: A.multi_margin_loss_backward(
            torch.tensor(1.0, dtype=d),
            torch.ones(2, 3, dtype=d),
            torch.tensor([0, 2]),
            1,
            1.0,
            None,
            1,
        ),
        "rrelu_with_noise": lambda d: A.rrelu_with_noise(
            torch.ones(2, dtype=d), torch.zeros(2, dtype=d), 0.125, 0.3, True
        ),
        "_fft_r2c": lambda d: A._fft_r2c(torch.ones(1, 8, dtype=d), [1], 0, True),
        "sparse_sampled_addmm": lambda d: A.sparse_sampled_addmm(
            torch.eye(2, dtype=d).to_sparse_csr(),
            torch.ones(2, 2, dtype=d),
            torch.ones(2, 2, dtype=d),
        ),
    }
    # how each CPU kernel refuses a dtype (most through ATen's dispatch macros)
    refusal = {
        "_fft_r2c": "MKL FFT doesn't support tensors of type",
        "sparse_sampled_addmm": "Expected self to be a floating-point or complex tensor",
    }
    assert set(calls) == {r.op for r in fallback_dtypes.TABLE}
    for row in fallback_dtypes.TABLE:
        for d in row.dtypes:
            with pytest.raises(
                (NotImplementedError, RuntimeError),
                match=refusal.get(row.op, "not implemented for"),
            ):
                calls[row.op](d)  # the CPU kernel itself

    # and with the table: every call above runs on npu
    def on_npu(fn, d):
        with torch.device("npu"):
            return fn(d)

    for row in fallback_dtypes.TABLE:
        for d in row.dtypes:
            on_npu(calls[row.op], d)


def test_histc_int32_as_moe_routing_calls_it():
    """Hugging Face's mixture-of-experts routing counts tokens per expert with histc on int32
    expert ids, on every non-CPU device: eager, out=, compiled, and recorded in a graph."""
    ids = torch.tensor([0, 3, 1, 3, 3, 2], dtype=torch.int32, device="npu")
    expected = torch.tensor([1, 1, 1, 3], dtype=torch.int32)
    with torch.no_grad():
        torch.testing.assert_close(torch.histc(ids, bins=4, min=0, max=3).cpu(), expected)
        out = torch.empty(0, dtype=torch.int32, device="npu")
        torch.histc(ids, bins=4, min=0, max=3, out=out)
        torch.testing.assert_close(out.cpu(), expected)

        torch._dynamo.reset()
        counts = torch.compile(lambda e: torch.histc(e, bins=4, min=0, max=3) * 2)(ids)
        torch.testing.assert_close(counts.cpu(), expected * 2)

        static = ids.clone()
        g = torch.npu.NPUGraph()
        with torch.npu.graph(g):
            recorded = torch.histc(static, bins=4, min=0, max=3)
        static.copy_(torch.tensor([1, 1, 1, 1, 0, 0], dtype=torch.int32))
        g.replay()
        torch.testing.assert_close(recorded.cpu(), torch.tensor([2, 4, 0, 0], dtype=torch.int32))


def test_in_place_bool_abs_writes_the_callers_tensor():
    t = torch.tensor([True, False], device="npu")
    assert t.abs_() is t
    torch.testing.assert_close(t.cpu(), torch.tensor([True, False]))


def test_readme_table_is_the_table():
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    start, end = "<!-- fallback-dtypes-table -->\n", "\n<!-- /fallback-dtypes-table -->"
    assert (
        readme[readme.index(start) + len(start) : readme.index(end)] == fallback_dtypes.markdown()
    )
