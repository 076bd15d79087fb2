"""Runtime asserts fire on npu as on cuda (issue 19 item 1).

Device-side asserts (``tl.device_assert``) run in Triton's interpreter on npu-sim: upstream
compiles kernels with ``debug`` when ``assert_indirect_indexing`` is on, and npu-sim's launch
checks them only with that option (npu_sim.launch ``debug``). Host-side asserts are the
wrapper's, run against npu buffers. Each test switches its flag and sees the check go.
"""

import pytest
import torch
import torch._dynamo.config as dynamo_config
from torch._inductor import config
from torch._inductor.utils import fresh_cache, run_and_get_code


def needs_flag(module, flag: str):
    """Skip on a torch without this upstream flag (dotted for a sub-config): 2.11 lacks some of 2.13's."""
    obj = module
    for part in flag.split("."):
        obj = getattr(obj, part, None) if obj is not None else None
    return pytest.mark.skipif(
        obj is None, reason=f"torch {torch.__version__} has no {module.__name__} flag {flag}"
    )


def _code(fn, *args):
    torch._dynamo.reset()
    out, codes = run_and_get_code(torch.compile(fn), *args)
    return out, "\n".join(codes)


def _kernels(code: str) -> str:
    return code.split("@triton.jit", 1)[-1]


@pytest.mark.feature("N02", "N03")
def test_indirect_index_out_of_bounds_fires_on_npu():
    x = torch.randn(8, 16, device="npu")
    with config.patch(assert_indirect_indexing=True):
        _, code = _code(lambda a, i: a[i] + 1, x, torch.tensor([1, 3, 5], device="npu"))
        assert "tl.device_assert" in code
        torch._dynamo.reset()
        with pytest.raises(Exception, match="index out of bounds"):
            torch.compile(lambda a, i: a[i] + 2)(x, torch.tensor([1, 3, 9], device="npu"))
    with config.patch(assert_indirect_indexing=False):
        out, code = _code(lambda a, i: a[i] + 3, x, torch.tensor([1, 3, 5], device="npu"))
    assert "tl.device_assert" not in code
    assert torch.equal(out.cpu(), x.cpu()[[1, 3, 5]] + 3)


@pytest.mark.feature("N15", "N03")
def test_runtime_nan_asserts_fire_in_npu_kernels():
    x = torch.tensor([4.0, -1.0, 9.0], device="npu")
    with config.patch(runtime_triton_nan_asserts=True):
        torch._dynamo.reset()
        with pytest.raises(Exception, match="NaN or Inf found"):
            torch.compile(lambda a: torch.sqrt(a) + 1)(x)
        out, code = _code(lambda a: torch.sqrt(a.abs()) + 2, x)  # finite: the asserts pass
    assert "tl.device_assert" in _kernels(code)
    assert torch.equal(out.cpu(), torch.sqrt(x.cpu().abs()) + 2)
    with config.patch(runtime_triton_nan_asserts=False):
        out, code = _code(lambda a: torch.sqrt(a) + 3, x)
    assert "tl.device_assert" not in _kernels(code)
    assert torch.isnan(out.cpu()).tolist() == [False, True, False]


@pytest.mark.feature("N16", "N03")
def test_scalar_asserts_check_item_values_read_from_npu():
    def fn(a):
        u = a.sum().to(torch.int64).item()
        torch._check(u < 1000)
        return a * u

    small, big = torch.ones(4, device="npu"), torch.full((4,), 500.0, device="npu")
    with dynamo_config.patch(capture_scalar_outputs=True):
        with config.patch(scalar_asserts=True):
            out, code = _code(fn, small)
            assert "raise RuntimeError('u0 < 1000')" in code
            assert torch.equal(out.cpu(), torch.full((4,), 4.0))
            with pytest.raises(RuntimeError, match="u0 (<= 999|< 1000)"):
                torch.compile(fn)(big)  # same graph, a value the check refuses
        with config.patch(scalar_asserts=False):
            _, code = _code(fn, small)
    assert "u0 < 1000" not in code and "u0 <= 999" not in code


@pytest.mark.feature("N06")
@needs_flag(config, "do_not_emit_runtime_assertions")
def test_do_not_emit_runtime_assertions_drops_unbacked_checks():
    def fn(a):
        return torch.zeros(a.sum().to(torch.int64).item(), device=a.device) + 1

    x = torch.ones(4, device="npu")
    with dynamo_config.patch(capture_scalar_outputs=True, capture_dynamic_output_shape_ops=True):
        with config.patch(do_not_emit_runtime_assertions=False):
            out, code = _code(fn, x)
            assert "raise RuntimeError('u0 >= 0')" in code
            assert torch.equal(out.cpu(), torch.ones(4))
            with pytest.raises(RuntimeError, match="u0 >= 0"):
                torch.compile(fn)(-x)  # a negative size, refused before any allocation
        with config.patch(do_not_emit_runtime_assertions=True):
            _, code = _code(fn, x)
    assert "raise RuntimeError('u0 >= 0')" not in code


@pytest.mark.feature("N01", "N03")
def test_alignment_asserts_on_npu_fallback_outputs():
    from torch._C._dynamo.guards import assert_alignment

    x = torch.randn(8, 16, device="npu")
    fn = lambda a: torch.kthvalue(a, 2, dim=1).values * 2  # noqa: E731 (an ATen fallback op)
    with config.patch(alignment_asserts=True):
        out, code = _code(fn, x)
    assert "assert_alignment(buf1, 16, 'torch.ops.aten.kthvalue.default')" in code
    assert torch.equal(out.cpu(), torch.kthvalue(x.cpu(), 2, dim=1).values * 2)
    with config.patch(alignment_asserts=False):
        _, code = _code(fn, x)
    assert "assert_alignment(buf" not in code
    # the check the wrapper calls refuses a misaligned npu buffer
    with pytest.raises(AssertionError):
        assert_alignment(torch.empty(9, device="npu")[1:], 16, "op")


@pytest.mark.feature("N22")
def test_assume_unaligned_fallback_output():
    x = torch.randn(8, 16, device="npu")
    fn = lambda a: torch.median(a, dim=1).values * 2  # noqa: E731
    with config.patch(alignment_asserts=True, assume_unaligned_fallback_output=True):
        out, code = _code(fn, x)
    assert "is assumed to be not aligned" in code and "assert_alignment(buf" not in code
    assert torch.equal(out.cpu(), torch.median(x.cpu(), dim=1).values * 2)
    with config.patch(alignment_asserts=True, assume_unaligned_fallback_output=False):
        _, code = _code(fn, x)
    assert "assert_alignment(buf1" in code


@pytest.mark.feature("N25")
def test_assume_aligned_inputs_copies_misaligned_npu_inputs(monkeypatch):
    # torch 2.13 writes the copy into the wrapper (copy_if_misaligned); torch 2.11 has no such
    # codegen: its compiled graph's runner copies (utils.copy_misaligned_inputs), counted here
    from torch._inductor import utils
    from torch._inductor.codegen.wrapper import PythonWrapperCodegen

    in_wrapper = hasattr(PythonWrapperCodegen, "codegen_deferred_alignment_copies")
    copied = []
    upstream_copy = utils.copy_misaligned_inputs

    def counting_copy(new_inputs, check_inputs_idxs, *rest):
        copied.extend(i for i in check_inputs_idxs if new_inputs[i].data_ptr() % utils.ALIGNMENT)
        return upstream_copy(new_inputs, check_inputs_idxs, *rest)

    monkeypatch.setattr(utils, "copy_misaligned_inputs", counting_copy)
    misaligned = torch.randn(64, device="npu")[1:33]
    with fresh_cache(), config.patch(assume_aligned_inputs=True):
        # compiled for aligned pointers although the example is not: the wrapper copies
        # a misaligned input before the kernel reads it
        out, code = _code(lambda a: a * 2, misaligned)
    assert ("copy_if_misaligned(arg0_1)" in code) if in_wrapper else copied == [0]
    assert torch.equal(out.cpu(), misaligned.cpu() * 2)
    # (fresh caches: an FX-cache entry compiled for an aligned example copies too, and its
    # key does not hold the example's alignment)
    copied.clear()
    with fresh_cache(), config.patch(assume_aligned_inputs=False):
        out, code = _code(lambda a: a * 3, misaligned)
    assert "copy_if_misaligned(arg0_1)" not in code and copied == []
    assert torch.equal(out.cpu(), misaligned.cpu() * 3)


@pytest.mark.feature("N21")
def test_assume_32bit_indexing_for_unbacked_sizes():
    def fn(a):
        return torch.zeros(a.sum().to(torch.int64).item(), device=a.device) + 1

    x = torch.ones(4, device="npu")
    with dynamo_config.patch(capture_scalar_outputs=True, capture_dynamic_output_shape_ops=True):
        with config.patch(assume_32bit_indexing=True):
            out, code = _code(fn, x)
        wide_index = "tl.arange(0, XBLOCK)[:].to(tl.int64)"
        assert "'xnumel': 'i32'" in code and wide_index not in code
        assert torch.equal(out.cpu(), torch.ones(4))
        with config.patch(assume_32bit_indexing=False):
            _, code = _code(fn, x)
    assert "'xnumel': 'i64'" in code and wide_index in code


@pytest.mark.feature("N27")
def test_compute_all_bounds_narrows_indirect_asserts():
    x = torch.randn(8, 16, device="npu")
    idx = torch.tensor([1, 9, 3], device="npu")
    fn = lambda a, i: a[i % 8]  # noqa: E731 (i % 8 >= 0 only the bounds of % can tell)
    with config.patch(compute_all_bounds=True):
        out, code = _code(fn, x, idx)
    assert torch.equal(out.cpu(), x.cpu()[idx.cpu() % 8])
    asserts = [line for line in code.splitlines() if "tl.device_assert" in line]
    assert asserts and all("0 <= " not in line for line in asserts)
    with config.patch(compute_all_bounds=False):
        _, code = _code(fn, x, idx)
    assert any("tl.device_assert(((0 <= " in line for line in code.splitlines())


def test_size_asserts_for_each_output_of_a_multi_output_fallback():
    """Each output of an ATen op with several outputs is checked against the sizes and strides
    Inductor planned, as on cpu (torch 2.15 writes assert_tensor_metadata, older releases
    assert_size_stride); ``size_asserts=False`` drops them."""
    from torch._inductor import lowering

    x = torch.randn(16, 32, device="npu")
    checks = (
        "assert_tensor_metadata(buf{}, (16, 32), (32, 1)",
        "assert_size_stride(buf{}, (16, 32), (32, 1)",
    )
    with lowering.force_fallback(torch.ops.aten.sort.default):
        with config.patch(size_asserts=True):
            out, code = _code(lambda a: a.sort(), x)
        for buf in (1, 2):
            assert any(c.format(buf) in code for c in checks), code
        with config.patch(size_asserts=False):
            _, code = _code(lambda a: a.sort(), x)
        assert not any(c.format(buf) in code for c in checks for buf in (1, 2)), code
    want = x.cpu().sort()
    assert torch.equal(out[0].cpu(), want[0]) and torch.equal(out[1].cpu(), want[1])


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_embedding_bag_outputs_pass_their_size_checks(dynamic):
    """The size checks of a multi-output fallback whose CPU kernel shapes its outputs apart
    from the meta kernel (EmbeddingBag's bookkeeping: npu-sim returns a device's shapes); the
    checks stay on (the default)."""
    w = torch.randn(10, 4, device="npu")
    i = torch.randint(10, (8,), device="npu")
    o = torch.tensor([0, 2, 6], device="npu")
    fn = lambda w, i, o: torch.ops.aten._embedding_bag(w, i, o, False, 0, False, None)  # noqa: E731
    torch._dynamo.reset()
    out, codes = run_and_get_code(torch.compile(fn, dynamic=dynamic), w, i, o)
    assert "_embedding_bag" in "\n".join(codes)  # the premise: checked as a fallback's outputs
    for a, e in zip(out, fn(w, i, o)):
        assert a.shape == e.shape and torch.equal(a.cpu(), e.cpu())
