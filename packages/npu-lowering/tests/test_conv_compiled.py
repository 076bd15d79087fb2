"""Convolutions compiled on npu (issue 16: nothing with a convolution ran on npu-sim).

Inductor lowers a convolution to an extern call of aten.convolution and asserts the strides
fake tensors predicted for the device (ConvBackend::Overrideable: contiguous); npu-sim's
convolution runs the CPU kernel, whose mkldnn path returns channels-last when the weight is,
so the device must hand back the predicted layout.
"""

from __future__ import annotations

import copy

import pytest
import torch


@pytest.fixture(scope="module", autouse=True)
def _npu():
    import npu_inductor

    npu_inductor.enable()


def _net():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3, padding=1),
        torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(),
        torch.nn.Conv2d(4, 2, 3, stride=2),
        torch.nn.Flatten(),
        torch.nn.Linear(2 * 3 * 3, 5),
    )


@pytest.mark.parametrize("layout", [torch.contiguous_format, torch.channels_last])
def test_conv_net_forward_and_backward_match_eager(layout):
    ref = _net()
    net = copy.deepcopy(ref).to("npu")
    x = torch.randn(2, 3, 8, 8)
    torch._dynamo.reset()
    out = torch.compile(net)(x.to("npu").to(memory_format=layout))
    expected = ref(x)
    torch.testing.assert_close(out.cpu(), expected, atol=1e-4, rtol=1e-4)
    out.sum().backward()
    expected.sum().backward()
    for p, q in zip(net.parameters(), ref.parameters()):
        torch.testing.assert_close(p.grad.cpu(), q.grad, atol=1e-3, rtol=1e-3)


def test_conv_with_channels_last_weight_has_the_predicted_layout():
    x = torch.randn(1, 3, 8, 8, device="npu")
    w = torch.randn(4, 3, 3, 3, device="npu").to(memory_format=torch.channels_last)
    out = torch.nn.functional.conv2d(x, w)
    with torch._subclasses.FakeTensorMode() as mode:
        fake = torch.nn.functional.conv2d(mode.from_tensor(x), mode.from_tensor(w))
    assert out.stride() == fake.stride()
