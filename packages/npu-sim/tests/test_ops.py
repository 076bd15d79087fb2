"""Ops on npu: native kernels, the aliasing fallback, autograd, fake tensors, compile."""

import pytest
import torch


def _stats():
    return torch.npu.memory_stats()


def test_factories_and_copies_both_ways():
    assert torch.equal(torch.zeros(3, device="npu").cpu(), torch.zeros(3))
    assert torch.equal(
        torch.full((2, 2), 7, dtype=torch.int32, device="npu").cpu(),
        torch.full((2, 2), 7, dtype=torch.int32),
    )
    assert torch.equal(torch.arange(5, device="npu").cpu(), torch.arange(5))
    host = torch.randn(4, 5)
    dev = host.to("npu")
    assert torch.equal(dev.cpu(), host)
    dev2 = dev.clone()
    assert dev2.data_ptr() != dev.data_ptr() and torch.equal(dev2.cpu(), host)


def test_non_contiguous_copies():
    host = torch.randn(6, 8)
    dev = host.to("npu")
    assert torch.equal(dev.t().contiguous().cpu(), host.t().contiguous())
    assert torch.equal(dev[:, ::2].cpu(), host[:, ::2])
    target = torch.zeros(8, 6, device="npu")
    target.copy_(dev.t())
    assert torch.equal(target.cpu(), host.t())
    host_target = torch.zeros(8, 6).t()
    host_target.copy_(dev)
    assert torch.equal(host_target, host)


def test_views_share_memory_and_resize():
    x = torch.arange(12.0, device="npu")
    v = x.view(3, 4)[1]
    assert v.data_ptr() == x.data_ptr() + 4 * 4
    v.fill_(-1)
    assert x.cpu()[4:8].tolist() == [-1.0] * 4
    assert x.reshape(4, 3).permute(1, 0).shape == (3, 4)
    r = torch.empty(0, device="npu")
    r.resize_(10)
    assert r.numel() == 10 and r.device.type == "npu"
    whole = torch.empty(0, device="npu").set_(x.untyped_storage())
    assert whole.device.type == "npu" and whole.shape == (12,) and whole.data_ptr() == x.data_ptr()
    s = torch.empty(0, device="npu")
    s.set_(x.untyped_storage(), 2, (2, 2), (2, 1))
    assert s.cpu().tolist() == [[2.0, 3.0], [-1.0, -1.0]]


def test_inplace_fallback_writes_in_place_without_allocating():
    x = torch.ones(64, device="npu")
    ptr, before = x.data_ptr(), _stats()["num_allocs"]
    x.mul_(3).add_(1)
    assert x.data_ptr() == ptr and _stats()["num_allocs"] == before  # no round-trip copies
    assert torch.equal(x.cpu(), torch.full((64,), 4.0))


def test_out_variants_write_in_place_and_resize():
    a, b = torch.randn(5, device="npu"), torch.randn(5, device="npu")
    out = torch.empty(5, device="npu")
    ptr = out.data_ptr()
    torch.add(a, b, out=out)
    assert out.data_ptr() == ptr and torch.allclose(out.cpu(), a.cpu() + b.cpu())
    grown = torch.empty(0, device="npu")
    torch.mul(a, 2, out=grown)  # the CPU kernel resizes its alias; the result comes back
    assert grown.shape == (5,) and grown.device.type == "npu"
    assert torch.allclose(grown.cpu(), a.cpu() * 2)


def test_functional_results_and_views_from_the_fallback():
    x = torch.randn(4, 6, device="npu")
    y = x.softmax(-1)
    assert y.device.type == "npu" and torch.allclose(y.cpu(), x.cpu().softmax(-1))
    vals, idx = x.max(dim=1)
    assert torch.equal(idx.cpu(), x.cpu().max(dim=1).indices) and vals.device.type == "npu"
    parts = torch.split(x, 2, dim=1)
    assert (
        all(p.device.type == "npu" for p in parts) and parts[1].data_ptr() == x.data_ptr() + 2 * 4
    )
    assert x.sum().item() == pytest.approx(x.cpu().sum().item(), rel=1e-5)
    mixed = x + torch.tensor(2.0)  # a cpu scalar tensor with an npu tensor, as on cuda
    assert mixed.device.type == "npu"


def test_dtypes():
    for dtype in (torch.float16, torch.bfloat16, torch.int64, torch.bool, torch.uint8):
        host = (torch.arange(6) % 3).to(dtype)
        assert torch.equal(host.to("npu").cpu(), host)
        assert torch.equal(
            (host.to("npu") == host.to("npu")).cpu(), torch.ones(6, dtype=torch.bool)
        )


def test_autograd_on_npu():
    w = torch.randn(3, 3, device="npu", requires_grad=True)
    x = torch.randn(2, 3, device="npu")
    loss = torch.nn.functional.gelu(x @ w).pow(2).mean()
    loss.backward()
    wc = w.detach().cpu().requires_grad_()
    torch.nn.functional.gelu(x.cpu() @ wc).pow(2).mean().backward()
    assert w.grad.device.type == "npu" and torch.allclose(w.grad.cpu(), wc.grad, atol=1e-6)


def test_fake_tensors_and_aot_eager_compile():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        f = torch.empty(2, 3, device="npu")
        assert (f @ f.t()).device == torch.device("npu", 0)

    def fn(a, b):
        return torch.relu(a @ b).sum(0) + a.mean()

    a, b = torch.randn(4, 4, device="npu"), torch.randn(4, 4, device="npu")
    compiled = torch.compile(fn, backend="aot_eager", fullgraph=True)
    assert torch.allclose(compiled(a, b).cpu(), fn(a.cpu(), b.cpu()), atol=1e-5)


def test_device_generator_seeding_and_state():
    torch.npu.manual_seed(123)
    a = torch.randn(8, device="npu")
    state = torch.npu.get_rng_state()
    b = torch.randn(8, device="npu")
    torch.npu.set_rng_state(state)
    c = torch.randn(8, device="npu")
    assert torch.equal(b.cpu(), c.cpu()) and not torch.equal(a.cpu(), b.cpu())
    torch.npu.manual_seed(123)
    assert torch.equal(torch.randn(8, device="npu").cpu(), a.cpu())
    assert torch.npu.initial_seed() == 123
    g = torch.Generator(device="npu")
    assert g.device.type == "npu"
    g.manual_seed(5)
    d = torch.rand(4, device="npu", generator=g)
    g.manual_seed(5)
    assert torch.equal(torch.rand(4, device="npu", generator=g).cpu(), d.cpu())
    # torch.manual_seed seeds every device, npu included, as it does cuda
    torch.npu.manual_seed(7)
    torch.manual_seed(123)
    assert torch.equal(torch.randn(8, device="npu").cpu(), a.cpu())


def test_dropout_draws_from_the_npu_generator():
    # native_dropout's CPU kernel has no generator argument: it drew from the CPU generator
    x = torch.ones(8, 64, device="npu")
    torch.npu.manual_seed(3)
    first = torch.nn.functional.dropout(x, 0.5)
    torch.manual_seed(99)  # the CPU generator moves; npu's does not
    torch.npu.manual_seed(3)
    out, mask = torch.ops.aten.native_dropout(x, 0.5, True)
    assert torch.equal(first.cpu(), out.cpu()) and mask.dtype == torch.bool
    assert torch.equal(out.cpu(), mask.cpu().float() * 2)
    assert 0 < int(mask.sum()) < mask.numel()
    assert torch.equal(torch.ops.aten.native_dropout(x, 0.5, False)[0].cpu(), x.cpu())
