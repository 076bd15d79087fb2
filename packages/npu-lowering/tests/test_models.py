"""Whole models on npu (B01): a training step of a small MLP, a small transformer block."""

import pytest
import torch
import torch.nn as nn

pytestmark = pytest.mark.feature("B01")


def _clone_to(module: nn.Module, device: str) -> nn.Module:
    import copy

    return copy.deepcopy(module).to(device)


def test_mlp_training_step_matches_eager():
    torch.manual_seed(0)
    cpu_model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4))
    npu_model = _clone_to(cpu_model, "npu")
    x, y = torch.randn(8, 16), torch.randn(8, 4)

    def step(model, opt, x, y):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    opt_cpu = torch.optim.SGD(cpu_model.parameters(), lr=0.1)
    opt_npu = torch.optim.SGD(npu_model.parameters(), lr=0.1)
    compiled = torch.compile(npu_model)
    for _ in range(2):
        ref = step(cpu_model, opt_cpu, x, y)
        out = step(compiled, opt_npu, x.to("npu"), y.to("npu"))
        torch.testing.assert_close(out.detach().cpu(), ref.detach(), atol=1e-5, rtol=1e-4)
    for p_npu, p_cpu in zip(npu_model.parameters(), cpu_model.parameters()):
        assert p_npu.device.type == "npu"
        torch.testing.assert_close(p_npu.detach().cpu(), p_cpu.detach(), atol=1e-5, rtol=1e-4)


def Block():
    from npu_inductor.reference_models import TransformerBlock

    return TransformerBlock(dim=32, heads=4)


def test_transformer_block_forward_and_backward():
    torch.manual_seed(0)
    cpu_block = Block().eval()
    npu_block = _clone_to(cpu_block, "npu")
    x = torch.randn(2, 8, 32)
    ref = cpu_block(x)
    out = torch.compile(npu_block)(x.to("npu"))
    torch.testing.assert_close(out.detach().cpu(), ref.detach(), atol=1e-4, rtol=1e-4)
    # backward through the compiled block
    xg = x.to("npu").requires_grad_()
    torch.compile(npu_block)(xg).sum().backward()
    xc = x.clone().requires_grad_()
    cpu_block(xc).sum().backward()
    torch.testing.assert_close(xg.grad.cpu(), xc.grad, atol=1e-4, rtol=1e-4)
