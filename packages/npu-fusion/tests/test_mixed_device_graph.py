"""A graph that computes on cpu and on npu: the fusion policy asks about npu pairs only, and a
producer on cpu (whose scheduling group is cpp's) is not one of an npu node's producers.

Found by Ascend's adapted ``test_bernoulli1`` with dynamic shapes: a sum over npu divided by
``torch.prod(torch.tensor(a.size()))`` (a cpu reduction) raised ``TypeError: can't multiply
sequence by non-int of type 'tuple'`` in the norm-pair rule."""

import pytest
import torch


@pytest.fixture(scope="module", autouse=True)
def _npu():
    import npu_inductor

    npu_inductor.enable()


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_npu_reduction_over_a_cpu_reduction_compiles(dynamic):
    def fn(a):
        return (a.clone() * 2).sum() / torch.prod(torch.tensor(a.size()))

    a = torch.rand(20, 30, device="npu")
    torch._dynamo.reset()
    out = torch.compile(fn, dynamic=dynamic)(a)
    torch.testing.assert_close(out.cpu(), fn(a.cpu()))
