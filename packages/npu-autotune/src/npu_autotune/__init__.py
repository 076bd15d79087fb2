"""npu_autotune: autotuning for npu kernels (see this package's README).

The lowering finds the heuristics and the kernel-object mixin through the entry point
``npu_inductor.heuristics: npu`` (``npu_autotune.heuristics``); ``register()`` puts the npu
benchmarker in upstream's benchmarker registry (also done lazily before any npu autotune).
"""


def register() -> None:
    """Component hook of the ``npu_inductor.components`` entry-point group. Idempotent."""
    from . import _compat
    from .benchmarker import ensure_registered

    ensure_registered()
    _register_gemm_templates()
    _record_real_inputs()  # autotune_with_sample_inputs: tune on the real inputs (sample_inputs)
    _compat.mix_order_reductions_on_npu()  # upstream's mix-order reduction split-size tuning on npu
    _compile_wait_on_npu_graphs()  # per-future wait timeout, compile watchdog, progress bar (compile_wait)
    _collective_benchmarks_when_distributed()  # collective benchmark runs and timeout (collective_bench)


def _collective_benchmarks_when_distributed() -> None:
    # the patch matters only where a process group exists (upstream benchmarks collective
    # choices only then): installed by the first compile that sees one, so single-process
    # runs carry one patch fewer
    from npu_inductor_core.compile_hooks import around_compile_fx

    around_compile_fx("npu-autotune-collectives", _install_collective_patch)


def _install_collective_patch(model, example_inputs):
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        from . import _compat

        _compat.collective_benchmarks_on_npu()
    return None


def _record_real_inputs() -> None:
    from npu_inductor_core.compile_hooks import around_compile_fx

    from .sample_inputs import compile_context

    around_compile_fx("npu-autotune", compile_context)
    from npu_inductor_core.codegen_hooks import before_wrapper_codegen

    before_wrapper_codegen("npu-autotune", _before_npu_codegen)


def _before_npu_codegen(graph) -> None:
    from . import sample_inputs, user_kernel_args

    user_kernel_args.check_graph(
        graph
    )  # unsupported user-kernel autotune args, before any kernel call is generated
    sample_inputs.before_codegen(graph)  # the real inputs autotune_with_sample_inputs tunes on


def _compile_wait_on_npu_graphs() -> None:
    # npu graphs' modules compile through npu_inductor_core's AsyncCompile subclass, which
    # calls these: no upstream patch
    from npu_inductor_core.async_compile import around_wait, on_triton_future

    from . import compile_wait

    on_triton_future("npu-autotune", compile_wait.tag)
    around_wait("npu-autotune", compile_wait.wait)


def _register_gemm_templates() -> None:
    # importing the module registers npu's GEMM template heuristics in upstream's registry
    try:
        from . import gemm_swap_ab, gemm_templates  # noqa: F401
    except ImportError as exc:  # a torch without the template-heuristic registry (< 2.9)
        import logging

        logging.getLogger(__name__).warning("npu GEMM templates unavailable: %s", exc)
        return
    from npu_inductor_core import choice_hooks

    choice_hooks.extra_templates(
        "npu-autotune", gemm_swap_ab.extra_templates
    )  # swap-A/B GEMM candidates for M << N
    from . import flex_configs

    choice_hooks.config_heuristics(
        "npu-autotune", flex_configs.for_device
    )  # Cube-aware flex-attention tiles
    from npu_inductor_core import graph_hooks

    from . import pad_mm

    graph_hooks.post_grad(
        "npu-autotune", pad_mm.apply, pad_mm.cache_key
    )  # GEMM shape padding (autoheuristic pad_mm)


register.after = ("npu-sim", "npu-lowering")
