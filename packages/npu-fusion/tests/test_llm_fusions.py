"""The LLM fusions Ascend users hand-write (bench/llm_workloads.py's workloads, one source for
the bench and these tests): each compiles to one kernel at LLM shapes (hidden 4096, head dim
128, 32 query / 8 KV heads) moving at most 1.1x the minimum GM bytes, and matches eager at
small shapes in bfloat16 and float16.

Kernels and bytes at LLM shapes are counted without running a kernel (bench/fusion.py's
``measure_compile_only``: Inductor compiles Dynamo's fake inputs), so hidden-4096 rows cost no
interpreter time; the kernels are still generated, so CI's Ascend check gets them at those
shapes. Correctness runs the compiled kernels at tiny shapes, under ``torch.no_grad()`` as
inference does."""

import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[3] / "bench"


@pytest.fixture(scope="module")
def bench():
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    import fusion
    import llm_workloads

    return fusion, llm_workloads


def _workload(W, name):
    return next(w for w in W.WORKLOADS if w.name == name)


def _counts(bench, name, tokens, dtype=torch.bfloat16):
    fusion, W = bench
    w = _workload(W, name)
    args = w.inputs(tokens, dtype, "npu", W.Shapes())
    counts, out = fusion.measure_compile_only(w.fn, args, {})
    return counts, W.minimum_gm_bytes(args, out, w.gather)


# Scales' tolerance. Eager rounds the residual sum to the input dtype before the norm reads it
# back in float32; Inductor, by upstream's default (``emulate_precision_casts=False``, on cuda
# as on npu), keeps the unrounded float32 sum in the kernel, so a row's amax can differ by one
# rounding of the input dtype: 2**-8 relative in bfloat16, under 1e-3 in float16. With
# ``emulate_precision_casts=True`` the kernel rounds as eager does and the scales agree to 1e-6.
SCALE_RTOL = {torch.bfloat16: 2**-8, torch.float16: 1e-3}


def _assert_matches_eager(bench, name, tokens, dtype, scale_rtol=None):
    """Float outputs to the dtype's default tolerance (both sides round a float32 result to it),
    int8 outputs exact or off by one (a value at a rounding boundary of y / scale), float32
    scales to ``scale_rtol`` (default: SCALE_RTOL)."""
    from torch._inductor.utils import fresh_cache

    _, W = bench
    w = _workload(W, name)
    args = w.inputs(tokens, dtype, "npu", W.TINY)
    torch._dynamo.reset()
    with torch.no_grad(), fresh_cache():
        got = torch.compile(w.fn)(*args)
        want = w.fn(*args)
    for g, e in zip(got, want):
        assert g.dtype == e.dtype and g.shape == e.shape, (g.dtype, e.dtype, g.shape, e.shape)
        if g.dtype == torch.int8:
            assert (g.int() - e.int()).abs().max().item() <= 1
        elif g.dtype == torch.float32:
            rtol = SCALE_RTOL[dtype] if scale_rtol is None else scale_rtol
            torch.testing.assert_close(g, e, rtol=rtol, atol=1e-7)
        else:
            torch.testing.assert_close(g, e)


@pytest.mark.feature("X11")
@pytest.mark.parametrize("name", ["add_rms_norm", "add_rms_norm_quant"])
@pytest.mark.parametrize("tokens", [1, 256])  # a decode step, a prefill chunk
def test_add_rms_norm_quant_is_one_kernel_at_llm_shapes(bench, name, tokens):
    counts, minimum = _counts(bench, name, tokens)
    assert counts["kernels"] == 1, counts
    assert counts["gm_bytes"] <= 1.1 * minimum, (counts, minimum)


@pytest.mark.feature("X11")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("name", ["add_rms_norm", "add_rms_norm_quant"])
def test_add_rms_norm_quant_matches_eager(bench, name, dtype):
    for tokens in (1, 5):
        _assert_matches_eager(bench, name, tokens, dtype)


@pytest.mark.feature("X11")
def test_add_rms_norm_quant_rounds_as_eager_under_emulate_precision_casts(bench):
    """Upstream's flag for eager's rounding: the scales then agree to 1e-6 in bfloat16, and the
    int8 values within one (a quotient at a rounding boundary)."""
    from torch._inductor import config

    with config.patch(emulate_precision_casts=True):
        for tokens in (1, 5, 33):
            _assert_matches_eager(bench, "add_rms_norm_quant", tokens, torch.bfloat16, 1e-6)


@pytest.mark.feature("X14")
@pytest.mark.parametrize("tokens", [1, 16, 256])
def test_swiglu_quant_is_one_kernel_at_llm_shapes(bench, tokens):
    """A decode step's few rows too: upstream splits each 11008-wide amax across programs (three
    kernels, the input read twice); on npu a row that fits one core is not split
    (npu-lowering's ``row_fits_one_core``)."""
    counts, minimum = _counts(bench, "swiglu_quant", tokens)
    assert counts["kernels"] == 1, counts
    assert counts["gm_bytes"] <= 1.1 * minimum, (counts, minimum)


@pytest.mark.feature("X14")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_swiglu_quant_matches_eager(bench, dtype):
    for tokens in (1, 5):
        _assert_matches_eager(bench, "swiglu_quant", tokens, dtype)


# QK-norm + RoPE: Q's and K's normalisations are reductions over 32 and 8 heads, which
# upstream's scheduler does not fuse (pytorch#171572); npu-fusion's combo kernels
# (``config.combo_kernels``, combo_gate.py) put both in one launch. Inductor's byte count of a
# combo kernel adds its sub-kernels' intermediates and the whole cos/sin cache, so GM traffic
# is checked on the code instead: one kernel storing only the two outputs.
QK_ROWS = {"X12": "qk_norm_rope", "X13": "split_qkv_norm_rope"}


def _qk_one_kernel(bench, name, tokens):
    counts, _ = _counts(bench, name, tokens)
    assert counts["kernels"] == 1, counts


def _qk_matches_eager_in_one_kernel(bench, name, dtype):
    """One kernel storing the two outputs, at 1 and 5 tokens. At one token the position is a
    load at a constant address, which upstream masks in a combo sub-kernel
    (``tl.where(xmask, tl.broadcast_to(tmp, [1, 1]), 0)``) and which, as the cos/sin gather's
    index, triton-ascend's front end for the 950 refuses; npu's codegen broadcasts it over the
    rows unmasked (npu-lowering's kernel.py); CI's Ascend check compiles these kernels."""
    import re

    from torch._inductor.utils import fresh_cache, run_and_get_code

    _, W = bench
    w = _workload(W, name)
    for tokens in (1, 5):
        _assert_matches_eager(bench, name, tokens, dtype)
        torch._dynamo.reset()
        with torch.no_grad(), fresh_cache():
            _, codes = run_and_get_code(
                torch.compile(w.fn), *w.inputs(tokens, dtype, "npu", W.TINY)
            )
        code = "\n".join(codes)
        assert code.count("@triton.jit") == 1 and code.count("tl.store(") == 2, code
        assert not re.search(r"tl\.where\(xmask, tmp\d+, 0\)", code), code


@pytest.mark.feature("X12")
@pytest.mark.parametrize("tokens", [1, 256])
def test_qk_norm_rope_is_one_kernel_at_llm_shapes(bench, tokens):
    _qk_one_kernel(bench, QK_ROWS["X12"], tokens)


@pytest.mark.feature("X12")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_qk_norm_rope_matches_eager_in_one_kernel(bench, dtype):
    _qk_matches_eager_in_one_kernel(bench, QK_ROWS["X12"], dtype)


@pytest.mark.feature("X13")
@pytest.mark.parametrize("tokens", [1, 256])
def test_split_qkv_norm_rope_is_one_kernel_at_llm_shapes(bench, tokens):
    _qk_one_kernel(bench, QK_ROWS["X13"], tokens)


@pytest.mark.feature("X13")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_split_qkv_norm_rope_matches_eager_in_one_kernel(bench, dtype):
    _qk_matches_eager_in_one_kernel(bench, QK_ROWS["X13"], dtype)


def _qk_reads_each_row_once(bench, name, tmp_path):
    """At 256 tokens (8192 query rows: Inductor hints a reduction over that many rows DEFAULT,
    and a combo sub-kernel gets no tiling scores to turn it back to INNER) each head's row is
    held whole (a persistent reduction, no r loop) and the rotation takes its halves from the
    held row (npu-lowering's row_reuse: ``tl.gather``), not from GM again."""
    import re

    from torch._inductor.utils import fresh_cache

    fusion, W = bench
    w = _workload(W, name)
    args = w.inputs(256, torch.bfloat16, "npu", W.Shapes())
    torch._dynamo.reset()
    with fresh_cache(), fusion._saving(tmp_path):
        counts, _ = fusion.measure_compile_only(w.fn, args, {})
    (kernel,) = [p.read_text() for p in tmp_path.glob("*.py")]
    assert counts["kernels"] == 1, counts
    assert "@triton_heuristics.persistent_reduction" in kernel and "r0_offset in" not in kernel
    assert kernel.count("tl.gather(") == 4, kernel  # Q's and K's two halves
    x_loads = re.findall(r"tl\.load\(in_ptr0 \+ \(([^,]*)\)", kernel)
    assert not any("%" in index for index in x_loads), x_loads


@pytest.mark.feature("X12")
def test_qk_norm_rope_reads_each_row_once(bench, tmp_path):
    _qk_reads_each_row_once(bench, QK_ROWS["X12"], tmp_path)


@pytest.mark.feature("X13")
def test_split_qkv_norm_rope_reads_each_row_once(bench, tmp_path):
    _qk_reads_each_row_once(bench, QK_ROWS["X13"], tmp_path)


# The training direction of the workloads that have one (add + RMSNorm, QK-norm + RoPE, split
# QKV + norm + RoPE; the int8 rows have no gradient): a step's gradients against eager's.
# Kernels per direction at LLM shapes are in bench/fusion.py's table (npu-fusion README).
TRAINING = {"X11": "add_rms_norm", "X12": "qk_norm_rope", "X13": "split_qkv_norm_rope"}


def _training_step_matches_eager(bench, name, dtype):
    _, W = bench
    w = _workload(W, name)
    args = w.inputs(5, dtype, "npu", W.TINY)
    grads = []
    for run in (torch.compile(w.fn), w.fn):
        torch._dynamo.reset()
        inputs = W.trainable(w, args)
        outs = run(*inputs)
        # a fixed cotangent per output, so every output's gradient path is taken
        loss = sum(
            (o.float() * torch.linspace(-1, 1, o.numel(), device="npu").view(o.shape)).sum()
            for o in outs
        )
        loss.backward()
        grads.append([a.grad for a in inputs if isinstance(a, torch.Tensor) and a.requires_grad])
    for got, want in zip(*grads):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize(
    "name",
    [pytest.param(name, marks=pytest.mark.feature(row), id=name) for row, name in TRAINING.items()],
)
def test_training_step_matches_eager(bench, name, dtype):
    _training_step_matches_eager(bench, name, dtype)


@pytest.mark.feature("X12")
@pytest.mark.parametrize("tokens", [1, 256])
def test_qk_norm_rope_training_forward_is_one_kernel(bench, tokens):
    """The forward of a training step is one kernel too: the cos/sin rows gathered at the
    positions are recomputed in the backward (npu-fusion's gather_recompute), not written by a
    second forward kernel for the backward to read (the control: the setting off)."""
    import npu_fusion.config as fusion_config

    fusion, W = bench
    w = _workload(W, "qk_norm_rope")
    args = W.trainable(w, w.inputs(tokens, torch.bfloat16, "npu", W.Shapes()))
    assert fusion.training_kernels(w.fn, args, {})["forward"] == 1
    with fusion_config.patch(recompute_gathers=False):
        assert fusion.training_kernels(w.fn, args, {})["forward"] == 2


# Kernels of a training step's backward at LLM shapes, bfloat16 (compiled without running a
# kernel): a norm's backward reduces the incoming gradient over each row (the input's
# gradient) and over the rows (the weight's gradient). npu-fusion recomputes the gradient's
# shared pointwise value for the column reduction (norm_grad), joins the row and column
# reductions that read one buffer element for element in one combo kernel, with the parts of
# a concatenated gradient (combo_gate). At 4096 tokens the weight's gradient is a split or
# mix-order reduction whose last step runs after the kernel (README, LLM fusions). The QK
# rows' shared value reads the cos/sin rows gathered at the positions, recomputed in the
# column reductions too; on torch 2.13 combo kernels carry no gathering mark (combo_gate's
# ``_indirect``), so there the row kernel stores the value for the Q and K column reductions,
# which share a second combo kernel.
def _backward_expected(name: str, tokens: int) -> int:
    """add + RMSNorm's row and column reductions share a kernel only at one token: at hidden
    4096 one row fills a block, and a joined column reduction would read one column a program
    (combo_gate's ``MIN_SHARED_ROWS``); the QK rows' (128 wide) share one up to 16 tokens,
    where 16 rows of the longer reduction (the weight's gradient over tokens x heads) fit."""
    from npu_fusion import _compat

    if name == "add_rms_norm":
        return 1 if tokens == 1 else 2
    if not _compat.combo_kernels_marked():
        return 2
    return 1 if tokens <= 16 else 2


POLICY_OFF = {"combo_kernels": False, "recompute_norm_inputs": False}


def _backward_kernels(bench, name, tokens, **settings):
    import npu_fusion.config as fusion_config

    fusion, W = bench
    w = _workload(W, name)
    args = W.trainable(w, w.inputs(tokens, torch.bfloat16, "npu", W.Shapes()))
    with fusion_config.patch(settings):
        return fusion.training_kernels(w.fn, args, {})["backward"]


@pytest.mark.parametrize("tokens", [1, 16, 256])
@pytest.mark.parametrize(
    "name",
    [pytest.param(name, marks=pytest.mark.feature(row), id=name) for row, name in TRAINING.items()],
)
def test_training_backward_kernels(bench, name, tokens):
    """The expected kernels at 1, 16 and 256 tokens (at one token split QKV's needs the policy's
    refusal of the row epilogue's side-by-side fusion into the column reduction); the control,
    npu-fusion's combo kernels and norm recompute off, takes more."""
    expected = _backward_expected(name, tokens)
    assert _backward_kernels(bench, name, tokens) <= expected
    if tokens == 16 and name != "add_rms_norm":  # the control: upstream's plan takes more
        assert _backward_kernels(bench, name, tokens, **POLICY_OFF) > expected
