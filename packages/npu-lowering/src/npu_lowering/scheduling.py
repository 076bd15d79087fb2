"""Scheduling for npu: upstream's Triton scheduling with the npu kernel class, and the
installed fusion policy's veto on npu fusions."""

from __future__ import annotations

from torch._inductor.codegen.triton import TritonScheduling
from torch._inductor.codegen.triton_combo_kernel import ComboKernel
from torch._inductor.select_algorithm import TritonTemplateKernel

from torch._inductor.virtualized import V

from . import _compat, combo_meta, fp64_compute, numerics
from .kernel import NpuTritonKernel, save_kernel
from .runtime.entries import fusion_policy


class NpuScheduling(TritonScheduling):
    kernel_type = NpuTritonKernel

    def define_kernel(self, src_code, node_schedule, kernel):
        # NpuTritonKernel saves its own source; a GEMM template kernel (upstream's class,
        # with npu imports) is saved here, with its fused epilogue, for the Ascend check, and
        # so is a combo kernel (upstream's ComboKernel: npu-fusion's combo kernels)
        src_code = fp64_compute.mark_kernel(
            src_code, node_schedule
        )  # opt-in float64-in-float32: said in the code
        if isinstance(kernel, TritonTemplateKernel) or (
            isinstance(kernel, ComboKernel) and not kernel.per_subkernel_blocks
        ):
            # a combo kernel with per-sub-kernel blocks calls its sub-kernels as noinline
            # functions, whose pointer arguments triton-ascend 3.2's triton-adapter-opt
            # refuses: known invalid for Ascend (README, "Combo kernels"), not checked
            save_kernel(src_code)
        name = super().define_kernel(src_code, node_schedule, kernel)
        fp64_compute.warn_once(name, src_code)
        return name

    def _build_combo_kernel(self, *args, **kwargs):
        # torch 2.14+: the combo kernels upstream builds carry their sub-kernels' summed work
        # record for the cost model and their indirect mark (combo_meta.py)
        kernel = super()._build_combo_kernel(*args, **kwargs)
        combo_meta.attach(kernel)
        return kernel

    def codegen_template(self, template_node, epilogue_nodes, prologue_nodes, **kwargs):
        # cutlass.use_fast_math on npu: npu's GEMM templates are Triton, their fused prologue and
        # epilogue math is where fast math applies (numerics.template_fast_math)
        with numerics.template_fast_math():
            return super().codegen_template(template_node, epilogue_nodes, prologue_nodes, **kwargs)

    # Upstream's scheduler asks the device's scheduling last, after its own legality and
    # V.choices (which read upstream's fusion flags): a per-device hook, so the installed
    # policy (entry point ``npu_inductor.fusion: policy``, npu-fusion) decides for npu nodes
    # only, in every thread and for lazily compiled backward graphs, with no global replaced.
    def can_fuse_vertical(self, node1, node2):
        return (
            _still_scheduled(self.scheduler, node1, node2)
            and super().can_fuse_vertical(node1, node2)
            and _policy_allows("vertical", node1, node2)
        )

    def can_fuse_horizontal(self, node1, node2):
        return super().can_fuse_horizontal(node1, node2) and _policy_allows(
            "horizontal", node1, node2
        )

    def create_kernel_choices(self, kernel_features, kernel_args, kernel_kwargs):
        """A scan too long for one block (``ir.SplitScan``) is built as one looped scan per
        row, never as upstream's split scan: that kernel passes chunk sums between programs
        through a byte workspace cast to wider pointers, which triton-ascend 3.2.0's
        triton-adapter-opt refuses ("Casting pointers with unmatched bitwidth!"), and its
        look-back spins on other programs' flags. Upstream's looped scan carries the running
        value across reduction-loop steps; other kernels are upstream's."""
        if not (
            kernel_features.contains_op("scan")
            and any(node.is_split_scan() for node in kernel_features.scheduler_nodes())
        ):
            return super().create_kernel_choices(kernel_features, kernel_args, kernel_kwargs)
        kernel_kwargs["override_cooperative_reduction"] = False  # as upstream, for any scan
        _compat.apply_feature_required_overrides(self.kernel_type, kernel_features, kernel_kwargs)
        kernel_kwargs = V.choices.triton_kernel_kwargs(
            self.kernel_type, kernel_features, kernel_args, kernel_kwargs
        )
        kernel = self.kernel_type(*kernel_args, **kernel_kwargs)
        return self.add_multi_kernel_choices(kernel, kernel_args, kernel_kwargs)


def _still_scheduled(scheduler, node1, node2) -> bool:
    """False for a template prologue/epilogue pair one of whose nodes has been fused into
    another node since the pair was proposed. Upstream's scheduler evaluates a pending
    benchmarked template fusion (a MultiTemplateBuffer's epilogue or prologue) at the end of
    a fusion round with the nodes it saved: its asynchronous branch looks both up again
    (``get_fused_node``), its synchronous branch does not, and fusing a node that another
    fusion already took fails with a KeyError in ``fuse_two_nodes``. Refusing the stale pair
    here is the look-up that branch misses (the fusion it proposed can no longer happen).
    Only template pairs are checked: a foreach node asks about its sub-nodes, which are
    legitimately not scheduled on their own."""
    if not (node1.is_template() or node2.is_template()):
        return True
    fused = getattr(scheduler, "name_to_fused_node", None)
    if not fused:
        return True
    return all(fused.get(node.get_first_name(), node) is node for node in (node1, node2))


def _policy_allows(kind: str, node1, node2) -> bool:
    policy = fusion_policy()
    return policy is None or bool(policy.can_fuse(kind, node1, node2))
