"""Module and tensor semantics on npu match a real device's (cuda's): .to() moves parameters in
place (identity and weight tying survive), round trips, cross-device copy_, set_, shared
storages."""

import copy

import torch
import torch.nn as nn


class TiedLM(nn.Module):
    """An embedding and an output projection sharing one weight (GPT-2's lm_head/wte)."""

    def __init__(self, vocab=11, dim=6):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.mid = nn.Linear(dim, dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, ids):
        return self.lm_head(torch.tanh(self.mid(self.wte(ids))))


def test_shallow_copy_type_is_compatible_across_cpu_and_npu():
    cpu, npu = torch.ones(2), torch.ones(2, device="npu")
    assert torch._has_compatible_shallow_copy_type(cpu, npu)
    assert torch._has_compatible_shallow_copy_type(npu, cpu)
    assert torch._has_compatible_shallow_copy_type(npu, npu)


def test_to_keeps_parameter_identity_and_tying():
    model = TiedLM()
    params = {name: p for name, p in model.named_parameters()}
    model.to("npu")
    assert model.lm_head.weight is model.wte.weight
    for name, p in model.named_parameters():
        assert p is params[name] and p.device.type == "npu" and isinstance(p, nn.Parameter)
    model.cpu()
    assert model.lm_head.weight is model.wte.weight and model.wte.weight.device.type == "cpu"


def test_tied_model_trains_one_step_as_on_cpu():
    torch.manual_seed(0)
    ref = TiedLM()
    npu_model = copy.deepcopy(ref).to("npu")
    assert npu_model.lm_head.weight is npu_model.wte.weight
    ids, target = torch.randint(0, 11, (3, 4)), torch.randint(0, 11, (3, 4))
    for model, dev in ((ref, "cpu"), (npu_model, "npu")):
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        logits = model(ids.to(dev))
        nn.functional.cross_entropy(logits.flatten(0, 1), target.to(dev).flatten()).backward()
        opt.step()
    for (name, p), q in zip(ref.named_parameters(), npu_model.parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), msg=name)
    # the shared weight got both gradients (embedding + projection), as on cpu
    torch.testing.assert_close(npu_model.wte.weight.grad.cpu(), ref.wte.weight.grad)


def test_param_data_assignment_across_devices():
    p = nn.Parameter(torch.arange(4.0))
    p.data = p.data.to("npu")
    assert p.device.type == "npu" and torch.equal(p.detach().cpu(), torch.arange(4.0))
    p.data = torch.zeros(2)
    assert p.device.type == "cpu" and p.shape == (2,)


def test_round_trips_and_cross_device_copy():
    x = torch.randn(3, 5)
    n = x.to("npu")
    assert n.to("npu") is n and n.npu() is n  # no copy when already there, as on cuda
    assert torch.equal(n.cpu(), x) and torch.equal(n.to("cpu").to("npu").cpu(), x)
    t = x.t()  # non-contiguous both ways
    assert torch.equal(t.to("npu").cpu(), t)
    dst = torch.empty(5, 3, device="npu")
    dst.copy_(t)
    assert torch.equal(dst.cpu(), t)
    back = torch.empty(3, 5)
    back.copy_(n)
    assert torch.equal(back, x)
    half = torch.empty(3, 5, dtype=torch.float16, device="npu").copy_(x)  # dtype change on the way
    assert torch.equal(half.cpu(), x.half())


def test_set_and_storage_sharing():
    base = torch.arange(6.0, device="npu")
    view = torch.empty(0, device="npu").set_(base.untyped_storage(), 2, (2, 2), (2, 1))
    assert view.untyped_storage().data_ptr() == base.untyped_storage().data_ptr()
    view.add_(100)
    assert base.cpu().tolist() == [0, 1, 102, 103, 104, 105]
    other = torch.empty(0, device="npu").set_(base)
    other[0] = -1
    assert base[0].item() == -1 and other._is_view() is False
    assert torch.empty(0, device="npu").set_(base.untyped_storage()).shape == (6,)
    # views and storage() share memory, and a storage outlives its tensor
    st = base.untyped_storage()
    del base, view, other
    assert torch.tensor([], device="npu").set_(st).view(torch.float32)[1].item() == 1.0


def test_share_memory_style_aliasing():
    n = torch.zeros(4, device="npu")
    ptr = n.data_ptr()
    assert n.share_memory_() is n and n.data_ptr() == ptr  # device memory stays put, as on cuda
    alias = n.view(2, 2)
    alias[1, 1] = 7
    assert n[3].item() == 7
    s = n.untyped_storage()
    assert torch.tensor([], device="npu").set_(s).data_ptr() == n.data_ptr()
