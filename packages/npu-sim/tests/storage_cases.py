"""Storage cases for test_storage, run in a child interpreter (a crash there fails the tests
instead of killing pytest). Run as a script: each case_* runs in order and prints one line,
``CASE <name> ok`` or ``CASE <name> fail <error>``; a case that crashes prints nothing."""

import copy
import sys
import traceback

import torch


def case_untyped_storage_on_npu():
    from npu_sim import _runtime

    s = torch.UntypedStorage(64, device="npu")
    assert s.device == torch.device("npu", 0) and s.nbytes() == 64
    assert _runtime.ext()._is_sim_block(s.data_ptr())  # from npu-sim's allocator
    s.fill_(7)
    assert s.tolist() == [7] * 64
    assert torch.UntypedStorage(16, device="npu:1").device == torch.device("npu", 1)
    assert torch.UntypedStorage(0, device="npu").nbytes() == 0


def case_storage_clone_copies():
    t = torch.arange(8.0, device="npu")
    s = t.untyped_storage()
    c = s.clone()
    assert c.device == s.device and c.nbytes() == s.nbytes() and c.data_ptr() != s.data_ptr()
    assert c.tolist() == s.tolist()
    t.add_(1)
    assert torch.tensor([], device="npu").set_(c).cpu().tolist() == [float(i) for i in range(8)]
    back = torch.UntypedStorage(32, device="npu").copy_(
        torch.arange(8, dtype=torch.int32).untyped_storage()
    )
    assert back.cpu().tolist() == torch.arange(8, dtype=torch.int32).untyped_storage().tolist()


def case_deepcopy_equal_and_independent():
    base = torch.arange(6.0, device="npu:1")
    t = base.view(2, 3).t()  # a non-contiguous view keeps its geometry in the copy
    c = copy.deepcopy(t)
    assert c.device == t.device and c.stride() == t.stride() and torch.equal(c.cpu(), t.cpu())
    assert c.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()
    base.mul_(10)
    assert c.cpu().tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]
    # what a graph with npu constants or parameters meets
    m = torch.nn.Linear(3, 2).to("npu")
    m2 = copy.deepcopy(m)
    assert m2.weight.device.type == "npu" and torch.equal(m2.weight.cpu(), m.weight.cpu())
    with torch.no_grad():
        m.weight.zero_()
    assert m2.weight.cpu().abs().sum() > 0


def case_storage_resize():
    s = torch.empty(0, device="npu").untyped_storage()
    s.resize_(64)
    assert s.nbytes() == 64 and s.device.type == "npu"
    s.fill_(1)
    assert s.tolist() == [1] * 64
    kept = torch.arange(4.0, device="npu").untyped_storage()
    kept.resize_(64)  # grows, keeping its bytes
    assert torch.tensor([], device="npu").set_(kept)[:4].cpu().tolist() == [0.0, 1.0, 2.0, 3.0]
    kept.resize_(0)
    assert kept.nbytes() == 0


def case_fixed_storage_refuses_resize_clearly():
    from npu_sim import _runtime

    block = torch.empty(16, device="npu")
    view = _runtime.ext()._construct_storage_from_data_pointer(block.data_ptr(), 0, 64)
    try:
        view.untyped_storage().resize_(128)
    except RuntimeError as e:
        assert "not resizable" in str(e), e
    else:
        raise AssertionError("a storage over a fixed block resized")


CASES = [name for name in list(globals()) if name.startswith("case_")]

if __name__ == "__main__":
    import npu_sim

    npu_sim.start()
    for name in CASES:
        try:
            globals()[name]()
            print(f"CASE {name} ok", flush=True)
        except Exception:
            error = traceback.format_exc().strip().replace("\n", " | ")
            print(f"CASE {name} fail {error}", flush=True)
    sys.exit(0)
