"""torch.autocast("npu") as on torch_npu: the AutocastPrivateUse1 policy lists (lower-precision
matmuls and convolutions, fp32 reductions and norms, promotion), backward, compiled graphs and
torch.amp.GradScaler("npu")."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

LOW = [torch.bfloat16, torch.float16]


@pytest.mark.parametrize("dtype", LOW)
def test_autocast_casts_matmul_and_conv_down(dtype):
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)
    with torch.autocast("npu", dtype=dtype):
        assert torch.is_autocast_enabled("npu") and torch.get_autocast_dtype("npu") == dtype
        mm = a.npu() @ b.npu()
        conv = F.conv2d(x.npu(), w.npu())
        lin = F.linear(a.npu(), b.t().npu())
    assert mm.dtype == dtype and conv.dtype == dtype and lin.dtype == dtype
    torch.testing.assert_close(mm.cpu(), a.to(dtype) @ b.to(dtype))
    torch.testing.assert_close(conv.cpu(), F.conv2d(x.to(dtype), w.to(dtype)))
    assert (a.npu() @ b.npu()).dtype == torch.float32  # outside the region


@pytest.mark.parametrize("dtype", LOW)
def test_autocast_keeps_fp32_ops_and_promotes(dtype):
    x = torch.randn(4, 8).npu().to(dtype)
    with torch.autocast("npu", dtype=dtype):
        assert F.layer_norm(x, (8,)).dtype == torch.float32
        assert torch.softmax(x, -1).dtype == torch.float32
        assert torch.exp(x).dtype == torch.float32
        assert torch.addcmul(x, x.float(), x).dtype == torch.float32  # promote to the widest
        assert (x + 1).dtype == dtype  # not on a list: untouched


def test_autocast_backward_gives_fp32_grads_of_fp32_params():
    torch.manual_seed(0)
    lin = nn.Linear(8, 4)
    x = torch.randn(3, 8)
    npu_lin = nn.Linear(8, 4).npu()
    npu_lin.load_state_dict(lin.state_dict())
    with torch.autocast("npu", dtype=torch.bfloat16):
        out = npu_lin(x.npu())
    assert out.dtype == torch.bfloat16
    out.float().sum().backward()
    assert npu_lin.weight.grad.dtype == torch.float32
    ref = F.linear(x.bfloat16(), lin.weight.bfloat16(), lin.bias.bfloat16()).float().sum()
    ref.backward()
    torch.testing.assert_close(npu_lin.weight.grad.cpu(), lin.weight.grad)


def test_autocast_in_a_compiled_function():
    a, b = torch.randn(4, 8), torch.randn(8, 3)

    def fn(a, b):
        with torch.autocast("npu", dtype=torch.bfloat16):
            return torch.relu(a @ b)

    out = torch.compile(fn, backend="aot_eager", fullgraph=True)(a.npu(), b.npu())
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out.cpu(), torch.relu(a.bfloat16() @ b.bfloat16()))


def test_grad_scaler_step_and_skip_on_inf():
    torch.manual_seed(0)
    model = nn.Linear(8, 2).npu()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("npu", init_scale=1024.0, growth_interval=1)
    x = torch.randn(4, 8).npu()
    before = model.weight.detach().clone()
    with torch.autocast("npu", dtype=torch.float16):
        loss = model(x).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert not torch.equal(model.weight.detach(), before)  # a finite step is taken
    assert scaler.get_scale() == 2048.0  # and the scale grows (growth_interval=1)
    # an inf gradient: the step is skipped and the scale backs off
    opt.zero_grad()
    after_first = model.weight.detach().clone()
    with torch.autocast("npu", dtype=torch.float16):
        loss = model(x).float().sum() * float("inf")
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert torch.equal(model.weight.detach(), after_first)
    assert scaler.get_scale() == 1024.0


def test_binary_cross_entropy_is_refused_as_on_cuda():
    p, t = torch.rand(4).npu(), torch.rand(4).npu()
    with (
        torch.autocast("npu", dtype=torch.float16),
        pytest.raises(RuntimeError, match="unsafe to autocast"),
    ):
        F.binary_cross_entropy(p, t)
