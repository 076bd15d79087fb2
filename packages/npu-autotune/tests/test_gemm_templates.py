"""GEMM templates on npu: upstream's Triton mm/addmm/bmm templates, tuned over npu's cube
tiles (npu_autotune.gemm_templates) and rendered by npu-lowering's template kernel."""

import pytest
import torch
from torch._inductor import config
from torch._inductor.select_algorithm import add_feedback_saver, get_algorithm_selector_cache
from torch._inductor.utils import run_and_get_code


def addmm_gelu(bias, a, b):
    return torch.nn.functional.gelu(torch.addmm(bias, a, b))


def inputs(device, m=16, k=32, n=16):
    torch.manual_seed(0)
    return (
        torch.randn(n, device=device),
        torch.randn(m, k, device=device),
        torch.randn(k, n, device=device),
    )


@pytest.fixture
def choices():
    """The names of the choices every select_algorithm autotune of the test considered."""
    seen = []

    def saver(timings, name, input_nodes, choices, *_):
        seen.append((name, [c.name for c in choices]))

    add_feedback_saver(saver)
    yield seen
    get_algorithm_selector_cache().feedback_saver_fns.remove(saver)  # other packages' savers stay


def compiled_code(fn, *args):
    out, code = run_and_get_code(torch.compile(fn), *args)
    return out, "\n".join(code)


@pytest.mark.feature("A38", "A40")
def test_max_autotune_gemm_turns_the_matmul_into_an_npu_template(fresh, choices):
    args = inputs("npu")
    # the epilogue fusion decided by rule, not by timing interpreted kernels (which a busy
    # machine can flip: benchmark_epilogue_fusion is on under max-autotune)
    with config.patch(
        max_autotune_gemm=True, max_autotune_gemm_backends="TRITON", benchmark_epilogue_fusion=False
    ):
        out, code = compiled_code(addmm_gelu, *args)
    torch.testing.assert_close(
        out.cpu(), addmm_gelu(*(t.cpu() for t in args)), rtol=1e-4, atol=1e-4
    )
    assert "tl.dot(" in code and "extern_kernels.mm(" not in code
    assert "from npu_lowering.runtime import heuristics as triton_heuristics" in code
    # the GELU (and the bias) fused into the template: one kernel
    assert code.count("@triton.jit") == 1
    assert choices and all(n.startswith("triton_") for _, names in choices for n in names)


@pytest.mark.feature("A38")
def test_without_max_autotune_gemm_nothing_is_tuned(fresh, choices):
    # default mode: no GEMM candidate is benchmarked (a small GEMM is npu-lowering's one-tile
    # template); with that policy off too, the matmul is ATen's, as upstream's default
    args = inputs("npu")
    out, code = compiled_code(addmm_gelu, *args)
    torch.testing.assert_close(
        out.cpu(), addmm_gelu(*(t.cpu() for t in args)), rtol=1e-4, atol=1e-4
    )
    assert choices == []
    import npu_lowering.config as npu_config

    torch._dynamo.reset()
    with npu_config.patch(small_gemm_templates=False):
        out, code = compiled_code(addmm_gelu, *args)
    assert "tl.dot(" not in code and "extern_kernels.mm(" in code and choices == []


@pytest.mark.feature("A40")
def test_gemm_backends_aten_and_triton_are_both_benchmarked(fresh, choices):
    args = inputs("npu")
    with config.patch(max_autotune_gemm=True, max_autotune_gemm_backends="ATEN,TRITON"):
        out, _ = compiled_code(addmm_gelu, *args)
    torch.testing.assert_close(
        out.cpu(), addmm_gelu(*(t.cpu() for t in args)), rtol=1e-4, atol=1e-4
    )
    ((name, names),) = choices  # addmm with a broadcast bias: mm + a fused bias epilogue
    assert any(n.startswith("triton_") for n in names) and any(
        not n.startswith("triton_") for n in names
    )


@pytest.mark.feature("A41")
def test_exhaustive_search_space_tries_more_npu_tiles(fresh, choices):
    from npu_autotune import gemm_templates

    args = inputs("npu", m=64, k=64, n=64)
    counts = {}
    for space in ("DEFAULT", "EXHAUSTIVE"):
        choices.clear()
        torch._dynamo.reset()
        with config.patch(
            max_autotune_gemm=True,
            max_autotune_gemm_backends="TRITON",
            max_autotune_gemm_search_space=space,
            **{"test_configs.max_mm_configs": None},
        ):
            out, _ = compiled_code(lambda a, b: a @ b, args[1], args[2])
        torch.testing.assert_close(out.cpu(), args[1].cpu() @ args[2].cpu(), rtol=1e-4, atol=1e-4)
        counts[space] = len(choices[0][1])
    assert counts["EXHAUSTIVE"] > counts["DEFAULT"] > 1
    # every exhaustive tile fits the cube and half the unified buffer
    assert all(gemm_templates.fits(m, n, k) for m, n, k, *_ in gemm_templates.exhaustive_tiles())


@pytest.mark.feature("A38")
@pytest.mark.parametrize("case", ["bmm", "transposed", "baddbmm"])
def test_templates_cover_bmm_and_layouts(fresh, choices, case):
    torch.manual_seed(0)
    a, b = torch.randn(2, 16, 32), torch.randn(2, 32, 16)
    fns = {
        "bmm": (lambda x, y: torch.bmm(x, y), (a, b)),
        "transposed": (lambda x, y: x.t() @ y.t(), (a[0].t().contiguous(), b[0].t().contiguous())),
        "baddbmm": (lambda x, y, z: torch.baddbmm(z, x, y) * 2, (a, b, torch.randn(16))),
    }
    fn, args = fns[case]
    with config.patch(max_autotune_gemm=True, max_autotune_gemm_backends="TRITON"):
        out, code = compiled_code(fn, *(t.to("npu") for t in args))
    torch.testing.assert_close(out.cpu(), fn(*args), rtol=1e-4, atol=1e-4)
    assert "tl.dot(" in code


def test_tiles_respect_the_cube_and_the_unified_buffer():
    from npu_autotune import gemm_templates as g

    assert g.fits(128, 128, 64, 192 * 1024) and not g.fits(128, 256, 64, 192 * 1024)
    assert g.fits(128, 256, 64, 512 * 1024)  # a bigger UB takes bigger accumulators
    assert not g.fits(24, 16, 16, 192 * 1024)  # not a cube multiple


@pytest.mark.feature("A43")
def test_pruning_by_the_cubes_buffers_drops_tiles_over_l1_and_l0(fresh):
    """max_autotune_prune_choices_based_on_shared_mem on npu prunes by the cube core's L1 and
    L0A/L0B/L0C (a cube core has no shared memory): off, every exhaustive tile is offered; on,
    exactly those over one of the buffers go."""
    from types import SimpleNamespace

    from npu_autotune import gemm_templates as g
    from torch._inductor.sizevars import SizeVarAllocator
    from torch._inductor.virtualized import V

    h = g.NpuMMTemplateConfigHeuristic()
    dev = g._device()

    def tiles(prune: bool, dtype_size: int) -> set:
        # what tuned_mm asks for a 4096^3 GEMM (large enough that no tile is scaled down)
        with (
            config.patch(
                max_autotune_prune_choices_based_on_shared_mem=prune,
                max_autotune_gemm_search_space="EXHAUSTIVE",
            ),
            V.set_graph_handler(SimpleNamespace(sizevars=SizeVarAllocator())),
        ):
            out = h.preprocess_mm_configs(
                4096, 4096, 4096, h.exhaustive_configs, dtype_size=dtype_size
            )
            return {
                (c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"], c.num_stages)
                for c in out
            }

    everything, pruned = tiles(False, 4), tiles(True, 4)
    over = {t for t in everything if g.exceeds_cube(*t, 4, dev)}
    assert over and pruned == everything - over
    assert {g.exceeds_cube(*t, 4, dev) for t in over} >= {"L1", "L0A"}
    assert tiles(True, 2) > pruned  # half-size elements: more tiles fit the same buffers


def test_cube_buffers_are_the_compilers_figures():
    from npu_inductor_core.device import Device, L0C_BYTES

    dev = Device()
    assert (dev.l1_bytes, dev.l0a_bytes, dev.l0b_bytes, dev.l0c_bytes) == (
        512 << 10,
        64 << 10,
        64 << 10,
        128 << 10,
    )
    assert L0C_BYTES["950"] == 256 << 10 and Device(soc_version=260).family == "950"
