"""EmbeddingBag's bookkeeping results on npu have the shapes the meta kernel gives a device
(embedding_bag.cpp): fake tensors, and so a compiled program's size checks, see those; the
CPU kernel's differ (an empty offset2bag on its sum fast path, per-bag max_indices outside max
mode). The pooled output is the CPU kernel's, and the gradients are the CPU's."""

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

A = torch.ops.aten
SUM, MEAN, MAX = 0, 1, 2


def _args(dtype=torch.float32, include_last=False):
    torch.manual_seed(0)
    weight = torch.randn(10, 4, dtype=dtype)
    indices = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9])
    offsets = torch.tensor([0, 2, 6, 8] if include_last else [0, 2, 6])
    return weight, indices, offsets


OPS = [A._embedding_bag, A._embedding_bag_forward_only]


@pytest.mark.parametrize("op", OPS, ids=lambda o: o.__name__)
@pytest.mark.parametrize("include_last", [False, True])
@pytest.mark.parametrize("mode", [SUM, MEAN, MAX], ids=["sum", "mean", "max"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_outputs_have_the_meta_kernels_shapes(op, mode, include_last, dtype):
    w, i, o = _args(dtype, include_last)
    call = lambda *t: op(*t, False, mode, False, None, include_last)  # noqa: E731
    out = call(w.to("npu"), i.to("npu"), o.to("npu"))
    with FakeTensorMode(allow_non_fake_inputs=True) as fake_mode:
        fake = call(*[fake_mode.from_tensor(t.to("npu")) for t in (w, i, o)])
    assert [(t.shape, t.dtype, t.device.type) for t in out] == [
        (f.shape, f.dtype, "npu") for f in fake
    ]
    # the pooled output is the CPU kernel's
    assert torch.equal(out[0].cpu(), call(w, i, o)[0])
    # offset2bag: each index's bag
    assert out[1].tolist() == [0, 0, 1, 1, 1, 1, 2, 2]


@pytest.mark.parametrize("mode", [SUM, MEAN, MAX], ids=["sum", "mean", "max"])
def test_gradients_are_the_cpus(mode):
    w, i, o = _args()
    grads, weights = [], torch.rand(8)
    for device in ("cpu", "npu"):
        weight = w.to(device).detach().requires_grad_()
        psw = weights.to(device) if mode == SUM else None
        out = torch.nn.functional.embedding_bag(
            i.to(device),
            weight,
            o.to(device),
            mode=("sum", "mean", "max")[mode],
            per_sample_weights=psw,
        )
        (out * torch.arange(4.0, device=device)).sum().backward()
        grads.append(weight.grad.cpu())
    torch.testing.assert_close(grads[1], grads[0])
