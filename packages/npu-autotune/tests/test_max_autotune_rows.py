"""Max-autotune flags on npu (issue 21): each test compiles a tiny GEMM on npu-sim with
upstream's Triton GEMM templates over npu's tiles (gemm_templates.py) and shows that the flag
changes what is generated or benchmarked. Fusion decided by rule (benchmark_epilogue_fusion
off) unless the row is about benchmarking: timing interpreted kernels on a busy machine flips."""

import pytest
import torch
import torch._inductor.config
from torch._inductor import config
from torch._inductor.utils import run_and_get_code

TEMPLATES = dict(
    max_autotune_gemm=True,
    max_autotune_gemm_backends="TRITON",
    benchmark_epilogue_fusion=False,
    **{"test_configs.max_mm_configs": 2},
)


def compiled(fn, *args, **flags):
    """(out, generated code) of fn compiled with GEMM templates and the flags; checked vs eager."""
    torch._dynamo.reset()
    with config.patch({**TEMPLATES, **flags}):
        out, code = run_and_get_code(torch.compile(fn), *args)
    want = fn(*(a.cpu() for a in args))
    torch.testing.assert_close(
        [o.cpu() for o in out] if isinstance(out, (tuple, list)) else out.cpu(),
        list(want) if isinstance(want, tuple) else want,
        rtol=1e-4,
        atol=1e-4,
    )
    return out, "\n".join(code)


def rand(*shapes):
    torch.manual_seed(0)
    return [torch.randn(*s, device="npu") for s in shapes]


def n_kernels(code: str) -> int:
    return code.count("@triton.jit")


@pytest.mark.feature("T01")
def test_epilogue_fusion_puts_the_pointwise_consumer_into_the_gemm(fresh):
    a, b = rand((32, 32), (32, 32))
    fn = lambda x, y: torch.relu(x @ y) * 2
    _, fused = compiled(fn, a, b, epilogue_fusion=True)
    _, apart = compiled(fn, a, b, epilogue_fusion=False)
    assert "tl.dot(" in fused and "tl.dot(" in apart
    assert n_kernels(fused) == 1 and n_kernels(apart) == 2


@pytest.mark.feature("T01")
def test_prologue_fusion_puts_the_pointwise_producer_into_the_gemm(fresh):
    a, b = rand((32, 32), (32, 32))
    fn = lambda x, y: (x * 3) @ y
    _, fused = compiled(fn, a, b, prologue_fusion=True)
    _, apart = compiled(fn, a, b, prologue_fusion=False)
    assert n_kernels(fused) == 1 and n_kernels(apart) == 2


@pytest.mark.feature("T01")
def test_a_broadcast_prologue_load_is_masked_by_the_inputs_own_bounds(fresh):
    # gelu(h + bias) @ w with K (the bias's length, 64) != N (32) and an epilogue bias of N:
    # the prologue's bias load was masked with the epilogue's bound (idx_n < 32), so half of
    # the bias read as 0 (max err ~0.06 on an MLP block under max-autotune when ATen won the
    # first GEMM and the second GEMM's template took GELU as its prologue)
    h, bias, w, b2 = rand((16, 64), (64,), (64, 32), (32,))
    fn = lambda x, c, y, d: torch.nn.functional.gelu(x + c) @ y + d
    _, code = compiled(fn, h, bias, w, b2, prologue_fusion=True)
    assert n_kernels(code) == 1 and "tl.dot(" in code


@pytest.mark.feature("T02")
def test_epilogue_fusion_first_gives_the_epilogue_to_the_template(fresh):
    # p = 2 * (x @ y) can fuse into the GEMM (epilogue) or into the row sum that reads it;
    # whichever is scored first wins (the wrapper names each kernel's source ops)
    a, b = rand((32, 32), (32, 32))

    def fn(x, y):
        p = (x @ y) * 2
        return p, p.sum(1)

    _, first = compiled(fn, a, b, epilogue_fusion_first=True)
    _, last = compiled(fn, a, b, epilogue_fusion_first=False)
    assert n_kernels(first) == 2 and n_kernels(last) == 2
    assert "Original ATen: [aten.mm, aten.mul]" in first and "Original ATen: [aten.sum]" in first
    assert "Original ATen: [aten.mm]" in last and "Original ATen: [aten.mul, aten.sum]" in last


@pytest.fixture
def benchmarked(monkeypatch):
    """The scheduler's fusion benchmarks: ("compile", n nodes) per fused-kernel compile and
    ("bench", module) per timed module (speedup_by_fusion's two steps)."""
    from torch._inductor.scheduler import Scheduler

    seen = []
    compile_kernel, bench = Scheduler.compile_kernel, Scheduler.benchmark_codegened_module

    def spy_compile(self, nodes, *args, **kwargs):
        seen.append(("compile", len(nodes)))
        return compile_kernel(self, nodes, *args, **kwargs)

    def spy_bench(self, module, *args, **kwargs):
        seen.append(("bench", module))
        return bench(self, module, *args, **kwargs)

    monkeypatch.setattr(Scheduler, "compile_kernel", spy_compile)
    monkeypatch.setattr(Scheduler, "benchmark_codegened_module", spy_bench)
    return seen


def mm_relu(x, y):
    return torch.relu(x @ y)


@pytest.mark.feature("A15")
def test_benchmark_epilogue_fusion_times_the_fused_gemm(fresh, benchmarked):
    a, b = rand((32, 32), (32, 32))
    compiled(mm_relu, a, b, benchmark_epilogue_fusion=False)
    assert benchmarked == []  # fused by rule
    _, code = compiled(mm_relu, a, b, benchmark_epilogue_fusion=True)
    # the GEMM with the epilogue fused compiled and timed on npu
    assert ("compile", 2) in benchmarked and any(k == "bench" for k, _ in benchmarked)
    assert "tl.dot(" in code


@pytest.mark.feature("A48")
def test_max_epilogue_benchmarked_choices_caps_the_fused_candidates(fresh, benchmarked):
    a, b = rand((32, 32), (32, 32))
    flags = dict(benchmark_epilogue_fusion=True, **{"test_configs.max_mm_configs": 3})
    _, code = compiled(mm_relu, a, b, max_epilogue_benchmarked_choices=0, **flags)
    # no fused candidate may be tried: the epilogue stays a kernel of its own
    assert ("compile", 2) not in benchmarked and n_kernels(code) == 2
    benchmarked.clear()
    compiled(
        mm_relu,
        torch.randn(32, 48, device="npu"),
        torch.randn(48, 32, device="npu"),
        max_epilogue_benchmarked_choices=1,
        **flags,
    )
    assert benchmarked.count(("compile", 2)) == 1


@pytest.mark.feature("A16")
def test_benchmark_fusion_times_fusions_of_npu_kernels(fresh, benchmarked):
    (x,) = rand((64, 64))
    fn = lambda t: (t.sin() + 1).sum(0) + t.cos().sum(1)
    compiled(fn, x, benchmark_fusion=False)
    assert benchmarked == []
    compiled(fn, x, benchmark_fusion=True)
    assert any(k == "compile" for k, _ in benchmarked) and any(k == "bench" for k, _ in benchmarked)


@pytest.mark.feature("C03", "C02")
def test_generated_template_code_is_reused_for_an_equal_gemm(fresh):
    # C02 on npu: the NPU GEMM templates are Triton templates rendered by npu-lowering's
    # template kernel inside upstream's TritonTemplate.generate, whose render cache is this flag
    from torch._dynamo.utils import counters

    a, b, c = rand((32, 32), (32, 32), (32, 32))
    fn = lambda x, y, z: (x @ y, x @ z)  # two GEMMs of one shape and layout: one render
    compiled(fn, a, b, c, enable_caching_generated_triton_templates=False)
    assert counters["inductor"]["generated_module_cache_hit"] == 0
    assert counters["inductor"]["generated_module_cache_miss"] == 0
    compiled(fn, a, b, c, enable_caching_generated_triton_templates=True)
    assert counters["inductor"]["generated_module_cache_hit"] >= 1


class Block(torch.nn.Module):
    """A transformer-style MLP block: linear, GELU, linear, residual."""

    def __init__(self, d=32):
        super().__init__()
        self.up, self.down = torch.nn.Linear(d, 2 * d), torch.nn.Linear(2 * d, d)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(x)))


@pytest.fixture
def tuned():
    """(name, number of choices) of every GEMM select_algorithm benchmarked."""
    from torch._inductor.select_algorithm import add_feedback_saver, get_algorithm_selector_cache

    seen = []

    def saver(timings, name, input_nodes, choices, *_):
        seen.append((name, len(choices)))

    add_feedback_saver(saver)
    yield seen
    get_algorithm_selector_cache().feedback_saver_fns.remove(saver)


@pytest.mark.feature("B04")
def test_max_autotune_mode_compiles_an_mlp_block_to_fused_npu_templates(fresh, tuned):
    torch.manual_seed(0)
    block, x = Block(), torch.randn(16, 32)
    want = block(x)
    block, x = block.to("npu"), x.to("npu")
    # benchmark_epilogue_fusion off: the test asserts fused templates (see the module's docstring)
    with (
        torch.no_grad(),
        config.patch(
            {
                "test_configs.max_mm_configs": 2,
                "benchmark_epilogue_fusion": False,
                "max_autotune_gemm_backends": "TRITON",
            }
        ),
    ):
        torch._dynamo.reset()
        out, code = run_and_get_code(torch.compile(block, mode="max-autotune"), x)
        torch.testing.assert_close(out.cpu(), want, rtol=1e-4, atol=1e-4)
        code = "\n".join(code)
        # both GEMMs benchmarked over several candidates and npu templates chosen, with the
        # bias + GELU and the bias + residual fused into them: two kernels
        assert len(tuned) == 2 and all(n > 1 for _, n in tuned), tuned
        assert (
            code.count("tl.dot(") == 2 and "extern_kernels.mm(" not in code and n_kernels(code) == 2
        )
        tuned.clear()
        torch._dynamo.reset()
        torch.compile(block)(x)
        assert tuned == []  # default mode benchmarks no GEMM candidate


def mm_index_add(x, y, i):
    return torch.zeros(8, 32, device=x.device).index_add(0, i, x @ y)


@pytest.mark.skipif(
    not hasattr(torch._inductor.config, "epilogue_fusion_with_atomic_add"),
    reason=f"torch {torch.__version__} has no Inductor flag epilogue_fusion_with_atomic_add",
)
@pytest.mark.feature("T04")
def test_a_scatter_add_consumer_fuses_into_the_gemm_only_when_asked(fresh):
    a, b = rand((32, 32), (32, 32))
    idx = torch.randint(0, 8, (32,), device="npu")
    _, fused = compiled(mm_index_add, a, b, idx, epilogue_fusion_with_atomic_add=True)
    _, apart = compiled(mm_index_add, a, b, idx, epilogue_fusion_with_atomic_add=False)
    assert "Original ATen: [aten.zeros, aten.mm, aten.index_add]" in fused and n_kernels(fused) == 2
    assert "Original ATen: [aten.mm]" in apart and n_kernels(apart) == 3


@pytest.mark.skipif(
    not hasattr(torch._inductor.config, "epilogue_fusion_with_atomic_add"),
    reason=f"torch {torch.__version__} has no Inductor flag epilogue_fusion_with_atomic_add",
)
@pytest.mark.feature("T04")
def test_no_atomic_add_epilogue_when_determinism_is_requested(fresh):
    a, b = rand((32, 32), (32, 32))
    idx = torch.randint(0, 8, (32,), device="npu")
    torch.use_deterministic_algorithms(True)
    try:
        _, code = compiled(mm_index_add, a, b, idx, epilogue_fusion_with_atomic_add=True)
    finally:
        torch.use_deterministic_algorithms(False)
    # index_add falls back to ATen's deterministic kernel: nothing atomic joins the GEMM
    assert "tl.atomic_add" not in code and "aten.mm, aten.index_add" not in code
    assert "Original ATen: [aten.mm]" in code


@pytest.mark.feature("A39")
def test_max_autotune_pointwise_tries_more_npu_tiles(fresh):
    launched = fresh  # (kernel name, config kwargs, num_stages) of npu-sim launches when tuning
    (x,) = rand((64, 128))
    fn = lambda t: t.sin() * 2

    def configs_tried(**flags):
        launched.clear()
        torch._dynamo.reset()
        with config.patch(**flags):
            torch.testing.assert_close(torch.compile(fn)(x).cpu(), fn(x.cpu()))
        return {repr(sorted(kw.items())) for name, kw, _ in launched if name and "poi" in name}

    few = configs_tried(max_autotune_pointwise=False)
    many = configs_tried(max_autotune_pointwise=True)
    assert len(few) <= 1 < len(many)  # one config runs untimed; several are timed


@pytest.mark.feature("A50")
def test_runtime_estimate_of_an_aten_gemm_is_benchmarked_on_npu(fresh, monkeypatch, caplog):
    import logging

    import npu_lowering.config as npu_config
    from torch._inductor import scheduler

    estimates = []
    real = scheduler.maybe_estimate_runtime_benchmark

    def spy(snode):
        estimates.append(real(snode))
        return estimates[-1]

    monkeypatch.setattr(scheduler, "maybe_estimate_runtime_benchmark", spy)
    # the scheduler's debug log asks every node for its estimated runtime
    caplog.set_level(logging.DEBUG, logger=scheduler.log.name)
    a, b = rand((32, 32), (32, 32))
    fn = lambda x, y: x @ y
    with npu_config.patch(small_gemm_templates=False):  # the GEMM stays ATen's (an extern node)
        for on in (False, True):
            torch._dynamo.reset()
            with config.patch(runtime_estimations_mms_benchmark=on):
                torch.testing.assert_close(torch.compile(fn)(a, b).cpu(), a.cpu() @ b.cpu())
            if not on:
                assert estimates and all(e is None for e in estimates)  # analytic estimate
                estimates.clear()
    assert any(isinstance(e, float) and e > 0 for e in estimates), estimates


@pytest.mark.feature("A33")
def test_flexible_layouts_stay_flexible_when_only_aten_gemms_are_tuned(fresh, monkeypatch):
    from torch._inductor import ir
    from torch._inductor.select_algorithm import AlgorithmSelectorCache

    layouts = []
    real = AlgorithmSelectorCache.__call__

    def spy(self, name, choices, *args, **kwargs):
        layouts.append({type(c.layout) for c in choices})
        return real(self, name, choices, *args, **kwargs)

    monkeypatch.setattr(AlgorithmSelectorCache, "__call__", spy)
    a, b = rand((32, 32), (32, 32))
    for flexible in (False, True):
        compiled(
            lambda x, y: x @ y,
            a,
            b,
            max_autotune_gemm_backends="ATEN",
            max_autotune_allow_flexible_layouts=flexible,
        )
    # the ATen choices' output layout: fixed, or left for the consumers to decide
    assert layouts == [{ir.FixedLayout}, {ir.FlexibleLayout}], layouts


@pytest.mark.feature("A49")
def test_pipelined_gemm_autotune_benchmarks_npu_templates_in_the_pool(fresh):
    # pipeline_max_autotune_gemm: choices precompile here (the npu-sim kernel object keeps the
    # launcher upstream reads n_regs from) and are timed in upstream's AutotuneProcessPool
    from torch._inductor.autotune_process import AutotuneProcessPool

    a, b = rand((32, 32), (32, 32))
    fn = lambda x, y: torch.relu(x @ y)
    AutotuneProcessPool.shutdown_instance()
    try:
        _, code = compiled(fn, a, b, pipeline_max_autotune_gemm=False)
        assert AutotuneProcessPool._instance is None
        _, code = compiled(fn, a, b, pipeline_max_autotune_gemm=True)
        assert AutotuneProcessPool._instance is not None
        assert "tl.dot(" in code and n_kernels(code) == 1  # the ReLU fused into the template
    finally:
        AutotuneProcessPool.shutdown_instance()
