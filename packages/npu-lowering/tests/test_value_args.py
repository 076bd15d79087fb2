"""A cpu scalar tensor an npu kernel reads is a value in a tensor's slot: the kernel claims no
alignment for it (runtime/value_args.py). Upstream marked it 16-divisible like a tensor, and
npu-launcher refused a value that is not a multiple of 16 ("600 is not a multiple of 16")."""

import pytest
import torch
from torch._inductor.utils import run_and_get_code

from npu_lowering.runtime.value_args import value_slots, without_value_alignment


@pytest.fixture(scope="module", autouse=True)
def _npu():
    import npu_inductor

    npu_inductor.enable()


@pytest.mark.parametrize("shape", [(20, 30), (4, 8), (5, 5)], ids=["600", "32", "25"])
def test_a_cpu_scalar_tensor_of_any_value_reaches_an_npu_kernel(shape):
    x = torch.rand(*shape, device="npu")
    # the element count, reduced on cpu inside the graph, reaches the npu kernel by value
    fn = lambda a: (a * 2).sum() / torch.prod(torch.tensor(a.size()))  # noqa: E731
    torch._dynamo.reset()
    out, codes = run_and_get_code(torch.compile(fn), x)
    assert ".item()" in "\n".join(codes)  # the premise: the value passed in a tensor's slot
    torch.testing.assert_close(out.cpu(), fn(x.cpu()))


def test_only_values_in_tensor_slots_lose_their_alignment():
    meta = {
        "signature": {"in_ptr0": "*fp32", "in_ptr1": "i64", "out_ptr0": "*fp32", "xnumel": "i32"},
        "configs": [{(i,): [["tt.divisibility", 16]] for i in range(4)}],
    }
    assert value_slots(meta["signature"]) == {1}
    cleaned = without_value_alignment(meta)
    assert set(cleaned["configs"][0]) == {(0,), (2,), (3,)}  # sizes and addresses keep theirs
    assert len(meta["configs"][0]) == 4  # the kernel's own dict is not changed
    plain = {"signature": {"in_ptr0": "*fp32"}, "configs": [{(0,): [["tt.divisibility", 16]]}]}
    assert without_value_alignment(plain) is plain
