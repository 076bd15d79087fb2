"""npu GEMM candidate rows: the profiling cap (M01), decode supplements (M02), the vendor
matmul as a benchmarked choice (A52). Candidates are read from upstream's feedback savers
(what select_algorithm benchmarked), never from timings."""

import pytest
import torch
from torch._inductor import config
from torch._inductor.select_algorithm import add_feedback_saver, get_algorithm_selector_cache

import npu_autotune.config as npu_config
from npu_autotune import gemm_templates
from npu_inductor_core import tiles


@pytest.fixture
def benchmarked():
    """(name, description) of every choice each select_algorithm autotune benchmarked."""
    seen = []

    def saver(timings, name, input_nodes, choices, *_):
        seen.append([(c.name, getattr(c, "description", "")) for c in choices])

    add_feedback_saver(saver)
    yield seen
    get_algorithm_selector_cache().feedback_saver_fns.remove(saver)


def _mm(m, k, n):
    torch.manual_seed(0)
    return torch.randn(m, k, device="npu"), torch.randn(k, n, device="npu")


def _tiles(choices):
    """(BLOCK_M, BLOCK_N, BLOCK_K) of the Triton mm template choices (not the swap-A/B
    template's, M03), from their descriptions."""
    out = set()
    for name, desc in choices:
        if not name.startswith("triton_") or "swap_ab" in name:
            continue
        kv = dict(p.split("=", 1) for p in desc.replace(" ", "").split(",") if "=" in p)
        out.add((int(kv["BLOCK_M"]), int(kv["BLOCK_N"]), int(kv["BLOCK_K"])))
    return out


def _compile_mm(a, b, **flags):
    """a @ b compiled with npu GEMM templates only, each time with empty autotune caches (a
    cached timing of every choice would skip the benchmark and its feedback)."""
    from torch._inductor.utils import fresh_cache

    torch._dynamo.reset()
    with (
        fresh_cache(),
        config.patch(
            max_autotune_gemm=True,
            max_autotune_gemm_backends="TRITON",
            **{"test_configs.max_mm_configs": None},
            **flags,
        ),
    ):
        out = torch.compile(lambda x, y: x @ y)(a, b)
    torch.testing.assert_close(out.cpu(), a.cpu() @ b.cpu(), rtol=1e-4, atol=1e-4)


@pytest.mark.feature("M01")
def test_profiling_cap_limits_the_npu_gemm_candidates(fresh, benchmarked):
    a, b = _mm(64, 64, 64)
    _compile_mm(a, b)
    all_count = len(benchmarked[-1])
    for cap in (2, 0):
        with npu_config.patch(gemm_max_profiling_configs=cap):
            _compile_mm(a, b)
        assert len(benchmarked[-1]) == (cap or all_count)
    assert all_count > 2
    with pytest.raises(Exception, match="gemm_max_profiling_configs"):
        npu_config.gemm_max_profiling_configs = -1


@pytest.mark.feature("M02")
def test_decode_shapes_get_supplement_tiles_when_switched_on(fresh, benchmarked):
    a, b = _mm(8, 256, 256)  # one short row block: a decode GEMM
    tiles = {}
    for on in (True, False):
        with npu_config.patch(gemm_supplement_configs=on):
            _compile_mm(a, b)
        tiles[on] = _tiles(benchmarked[-1])
    extra = tiles[True] - tiles[False]
    assert extra and extra <= {t[:3] for t in gemm_templates.DECODE_TILES}
    # a prefill shape gets none of them
    a, b = _mm(128, 256, 256)
    with npu_config.patch(gemm_supplement_configs=True):
        assert not gemm_templates.is_decode(a.shape[0])


@pytest.mark.feature("M01", "M02")
def test_supplement_tiles_respect_the_cube():
    from npu_inductor_core.device import Device

    for dev in (tiles.device(0), Device(256 * 1024, 64, l0c_bytes=256 * 1024)):
        for m, n, k, stages, _ in gemm_templates.DECODE_TILES:
            assert gemm_templates.fits(m, n, k, dev.ub_bytes)
            for dtype_size in (1, 2, 4):
                assert gemm_templates.exceeds_cube(m, n, k, stages, dtype_size, dev) is None


@pytest.mark.feature("A52")
def test_vendor_bias_addmm_is_a_benchmarked_choice(fresh, benchmarked):
    # triton.autotune_cublasLt on npu: a row-broadcast bias (2-D, stride 0 over rows: upstream's
    # condition) gives the vendor matmul with the bias inside it (bias_addmm: ATen's addmm on
    # npu-sim, aclnn's through torch_npu on Ascend) as one more benchmarked choice
    torch.manual_seed(0)
    bias, a, b = (
        torch.randn(32, device="npu"),
        torch.randn(16, 64, device="npu"),
        torch.randn(64, 32, device="npu"),
    )
    names = {}
    for on in (True, False):
        torch._dynamo.reset()
        # benchmark_epilogue_fusion off: the benchmarked choices are counted; with it on, fused variants are timed too
        with config.patch(
            max_autotune_gemm=True,
            max_autotune_gemm_backends="ATEN,TRITON",
            benchmark_epilogue_fusion=False,
            **{"triton.autotune_cublasLt": on},
        ):
            out = torch.compile(lambda c, x, y: torch.addmm(c.expand(16, 32), x, y))(bias, a, b)
        torch.testing.assert_close(
            out.cpu(), torch.addmm(bias.cpu(), a.cpu(), b.cpu()), rtol=1e-4, atol=1e-4
        )
        names[on] = {n for n, _ in benchmarked[-1]}
    vendor = {on: {n for n in names[on] if not n.startswith("triton_")} for on in names}
    assert vendor == {True: {"addmm", "bias_addmm"}, False: {"addmm"}}


class _FirstTwoChoicesOnly:
    """A user's choices class (A01): of the GEMM candidates keep the first two (two, not one:
    a single choice is not benchmarked, so no feedback would show it)."""

    @classmethod
    def make(cls):
        from torch._inductor.choices import InductorChoices

        class Choices(InductorChoices):
            def _finalize_template_configs(self, template_choices, *args, **kwargs):
                out = super()._finalize_template_configs(template_choices, *args, **kwargs)
                return out[:2]

            def uuid(self):
                return "test.FirstTwoChoicesOnly"

        return Choices


def _in_fresh_thread(fn):
    """Run ``fn`` where Inductor has not made its per-thread choices object yet (upstream
    makes it from inductor_choices_class once per thread)."""
    import threading

    result, errors = [], []

    def run():
        try:
            result.append(fn())
        except BaseException as e:  # re-raised in the test's thread
            errors.append(e)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if errors:
        raise errors[0]
    return result[0]


@pytest.mark.feature("A01")
def test_inductor_choices_class_steers_npu_gemm_candidates(fresh, benchmarked):
    a, b = _mm(64, 64, 64)
    counts = {}
    for cls in (None, _FirstTwoChoicesOnly.make()):

        def compile_once():
            # config patches are per thread: the fixture's short benchmark budget too
            before = len(benchmarked)
            _compile_mm(
                a,
                b,
                inductor_choices_class=cls,
                inductor_default_autotune_warmup=0,
                inductor_default_autotune_rep=1,
            )
            assert len(benchmarked) == before + 1
            return len(benchmarked[-1])

        counts[cls is None] = _in_fresh_thread(compile_once)
    assert counts[False] == 2 < counts[True]


def _swap(names):
    return {n for n in names if "swap_ab" in n}


@pytest.mark.feature("M03")
def test_swap_ab_candidates_for_short_m_gemms(fresh, benchmarked):
    # M << N (a decode-like linear): candidates computing C^T = B^T A^T join the mm templates
    a, b = _mm(8, 64, 128)
    names, plain = {}, {}
    for on in (True, False):
        with npu_config.patch(gemm_swap_ab=on):
            _compile_mm(a, b)
        names[on] = {n for n, _ in benchmarked[-1]}
        plain[on] = _tiles(benchmarked[-1])
    assert _swap(names[True]) and not _swap(names[False])
    assert plain[True] == plain[False]  # the mm template's candidates stay as they were
    # a square GEMM gets none, nor one where N is under gemm_swap_ab_ratio x M
    _compile_mm(*_mm(32, 64, 64))
    assert not _swap(n for n, _ in benchmarked[-1])
    with npu_config.patch(gemm_swap_ab_ratio=32):
        _compile_mm(a, b)
    assert not _swap(n for n, _ in benchmarked[-1])
    with pytest.raises(Exception, match="gemm_swap_ab_ratio"):
        npu_config.gemm_swap_ab_ratio = 0


@pytest.mark.feature("M03")
@pytest.mark.parametrize("swap_fastest", [True, False])
def test_a_swap_ab_candidate_wins_when_it_times_fastest(fresh, monkeypatch, swap_fastest):
    # the swap candidate is benchmarked like any other: made the fastest, it is chosen (with
    # the bias and ReLU of a linear fused into it) and the result equals eager's
    from torch._inductor.select_algorithm import AlgorithmSelectorCache
    from torch._inductor.utils import run_and_get_code

    def timing(cls, choice, autotune_args):
        return 1.0 if ("swap_ab" in choice.name) == swap_fastest else 2.0

    monkeypatch.setattr(AlgorithmSelectorCache, "benchmark_choice", classmethod(timing))
    torch.manual_seed(0)
    x, w, bias = torch.randn(4, 40), torch.randn(128, 40), torch.randn(128)  # K=40: masked K tiles
    fn = lambda x, w, c: torch.relu(torch.nn.functional.linear(x, w, c))
    torch._dynamo.reset()
    # benchmark_epilogue_fusion off: the code is read for the chosen template and its fused ReLU
    with config.patch(
        max_autotune_gemm=True, max_autotune_gemm_backends="TRITON", benchmark_epilogue_fusion=False
    ):
        out, code = run_and_get_code(torch.compile(fn), *(t.to("npu") for t in (x, w, bias)))
    torch.testing.assert_close(out.cpu(), fn(x, w, bias), rtol=1e-4, atol=1e-4)
    code = "\n".join(code)
    assert ("tl.trans(acc_t)" in code) == swap_fastest and "tl.dot(" in code
    assert code.count("@triton.jit") == 1  # bias and ReLU in the GEMM's epilogue


@pytest.mark.feature("M03")
def test_no_template_candidates_for_a_matrix_vector_gemm(fresh):
    # M=1 (one token): the templates would index A by rm % M, a zero-stride pointer that
    # triton-ascend refuses; neither mm nor swap-A/B candidates are made, ATen's mm runs
    from torch._inductor.utils import run_and_get_code

    a, b = _mm(1, 64, 128)
    torch._dynamo.reset()
    with config.patch(max_autotune_gemm=True, max_autotune_gemm_backends="ATEN,TRITON"):
        out, code = run_and_get_code(torch.compile(lambda x, y: x @ y), a, b)
    torch.testing.assert_close(out.cpu(), a.cpu() @ b.cpu(), rtol=1e-4, atol=1e-4)
    assert "tl.dot(" not in code[0] and "extern_kernels.mm(" in code[0]
