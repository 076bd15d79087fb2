"""Combo kernels on npu chosen by timing (benchmark_combo_kernel, A14), and their
per-sub-kernel autotuning: grouping (combo_kernel_autotune_grouping, A21) and compile-time
block choice (combo_kernel_compile_time_autotune, A22)."""

import pytest
import torch
from torch._inductor import config
from torch._inductor.runtime import triton_heuristics
from torch._inductor.utils import run_and_get_code

from npu_autotune import _compat, benchmarker
from npu_lowering.runtime import autotuner as lowering_autotuner


def _two(a, b):
    return torch.sin(a) + 1, torch.cos(b) * 2


def _pointers(triton_meta) -> int:
    return sum(1 for t in triton_meta["signature"].values() if str(t).startswith("*"))


@pytest.fixture
def kernel_times():
    """kernel_times(single, combo): the npu benchmarker runs the callable and reports
    ``combo`` ms when it launched a combo kernel (both sub-kernels' pointers), ``single`` ms
    for one plain kernel and 0 when it launched nothing (upstream's clone-time measurement)."""
    launches = lowering_autotuner.LAUNCHES

    def install(single, combo):
        def fake(self, fn, *, warmup, rep, **kwargs):
            last = launches[-1] if launches else None
            fn()
            if not launches or launches[-1] is last:
                return 0.0
            return float(combo if _pointers(launches[-1][3]) > 2 else single)

        _compat.register_npu_benchmarker("npu", fake)

    yield install
    _compat.register_npu_benchmarker("npu", benchmarker.benchmark_npu)


def _compile_two(**flags):
    a, b = torch.randn(1024, device="npu"), torch.randn(512, device="npu")
    with config.patch(combo_kernels=True, compile_threads=1, **flags):
        out, (code,) = run_and_get_code(torch.compile(_two), a, b)
    for o, r in zip(out, _two(a.cpu(), b.cpu())):
        torch.testing.assert_close(o.cpu(), r)
    return code


@pytest.mark.feature("A14")
@pytest.mark.parametrize("single, combo, fused", [(1.0, 5.0, False), (2.0, 1.0, True)])
def test_benchmark_combo_kernel_decides_by_timing(fresh, kernel_times, single, combo, fused):
    """A combo kernel slower than its sub-kernels together is not used; a faster one is."""
    kernel_times(single, combo)
    code = _compile_two(benchmark_combo_kernel=True)
    assert ("combo_grid_meta" in code) is fused
    assert code.count("@triton.jit") == (1 if fused else 2)


def test_without_benchmark_combo_kernel_the_combo_kernel_stays(fresh, kernel_times):
    kernel_times(1.0, 5.0)  # would reject it, but nothing is timed
    code = _compile_two(benchmark_combo_kernel=False)
    assert "combo_grid_meta" in code and code.count("@triton.jit") == 1


def _four(a, b, c, d):
    return a.cos(), b.sin(), c.exp(), d.neg()


def _combo_kernel(kernels):
    (k,) = [k for k in kernels() if "combo_grid_meta" in k.inductor_meta]
    return k


@pytest.mark.skipif(
    not hasattr(config, "combo_kernel_autotune_grouping"),
    reason=f"torch {torch.__version__} has no Inductor flag combo_kernel_autotune_grouping",
)
@pytest.mark.feature("A21")
@pytest.mark.parametrize(
    "grouping, groups", [(True, [[0, 1], [2, 3]]), (False, [[0], [1], [2], [3]])]
)
def test_combo_kernel_autotune_grouping(fresh, kernels, grouping, groups):
    """Sub-kernels with the same heuristic inputs (a, b: 4096 elements; c, d: 32) are tuned
    as one group; each group's candidates are npu candidates (one warp, blocks in the UB),
    tried in turn by upstream's sequential combo tuning on npu-sim."""
    from torch._dynamo.utils import counters

    import npu_inductor_core.tiles as tiles

    args = [
        torch.randn(4096, device="npu"),
        torch.randn(4096, device="npu"),
        torch.randn(32, device="npu"),
        torch.randn(32, device="npu"),
    ]
    with config.patch(
        combo_kernels=True,
        combo_kernel_per_subkernel_blocks=True,
        combo_kernels_autotune=1,
        combo_kernel_autotune_grouping=grouping,
        max_autotune_pointwise=True,
        compile_threads=1,
    ):
        out = torch.compile(_four)(*args)
    for o, r in zip(out, _four(*[x.cpu() for x in args])):
        torch.testing.assert_close(o.cpu(), r)
    k = _combo_kernel(kernels)
    plan = k.inductor_meta["combo_tuning_groups"]
    assert sorted(g["member_indices"] for g in plan) == groups
    # one timing of the base config, then every other candidate of each group
    trials = 1 + sum(len(g["configs"]) - 1 for g in plan)
    assert counters["inductor"]["combo_autotune_bench"] == trials > len(plan)
    budget = tiles.element_budget(k.triton_meta, tiles.device(0))
    for g in plan:
        assert all(
            c.num_warps == 1 and tiles.fits_ub(c, k.triton_meta, tiles.device(0))
            for c in g["configs"]
        )
    assert all(max(v for n, v in kw.items() if "BLOCK" in n) <= budget for _, kw, _ in fresh)
    assert len(k.configs) == 1 and k.configs[0].found_by_combo_autotune


@pytest.mark.skipif(
    not hasattr(triton_heuristics.CachingAutotuner, "_combo_sequential_autotune"),
    reason="torch 2.11 has no per-sub-kernel combo autotune (CachingAutotuner._combo_sequential_autotune)",
)
@pytest.mark.feature("A22")
@pytest.mark.parametrize("at_compile_time", [True, False])
def test_combo_kernel_blocks_chosen_at_compile_time(fresh, kernels, monkeypatch, at_compile_time):
    """combo_kernel_compile_time_autotune is not a torch 2.13 flag (later upstream fixes each
    sub-kernel's blocks at compile time and tunes only launch parameters at run time, which
    on a vector core are one warp, one stage). Closest 2.13 behaviour: with
    triton.autotune_at_compile_time the combo kernel's per-sub-kernel plan is tuned while the
    graph compiles, and the run uses the result without tuning again."""
    import torch._inductor.graph as graph
    from torch._dynamo.utils import counters

    codegen = graph.GraphLowering.codegen
    benched_by_codegen_end = []

    def spy(self, *args, **kwargs):
        out = codegen(self, *args, **kwargs)
        benched_by_codegen_end.append(counters["inductor"]["combo_autotune_bench"])
        return out

    monkeypatch.setattr(graph.GraphLowering, "codegen", spy)
    args = [
        torch.randn(4096, device="npu"),
        torch.randn(4096, device="npu"),
        torch.randn(32, device="npu"),
        torch.randn(32, device="npu"),
    ]
    with config.patch(
        {
            "combo_kernels": True,
            "combo_kernel_per_subkernel_blocks": True,
            "combo_kernels_autotune": 1,
            "max_autotune_pointwise": True,
            "compile_threads": 1,
            "triton.autotune_at_compile_time": at_compile_time,
        }
    ):
        compiled = torch.compile(_four)
        out = compiled(*args)
        compiled(*args)
    for o, r in zip(out, _four(*[x.cpu() for x in args])):
        torch.testing.assert_close(o.cpu(), r)
    total = counters["inductor"]["combo_autotune_bench"]
    assert total > 1 and benched_by_codegen_end == [total if at_compile_time else 0]
    # the kernel that ran holds the tuned blocks (compile time: the autotune cache's entry)
    ran = [k for k in kernels() if "combo_grid_meta" in k.inductor_meta]
    assert len({tuple(sorted(k.configs[0].kwargs.items())) for k in ran}) == 1
    assert all(len(k.configs) == 1 for k in ran)
