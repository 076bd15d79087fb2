"""GEMM/conv template kernels for npu: upstream's TritonTemplateKernel with npu runtime
imports and epilogue loads triton-ascend accepts.

Upstream renders a template's fused epilogue in the template's own index space (``idx_m``,
``idx_n``, ...) and broadcasts every load's index to the full output tile
(``tl.load(p + tl.broadcast_to(idx_n, [BLOCK_M, BLOCK_N]), mask)``). A load that does not
depend on every output index (a bias, a per-row scale) then has a pointer tensor with a zero
stride, which triton-ascend's ``triton-adapter-opt`` refuses ("strides must not be zero").
Here such a load keeps its natural shape (``[1, BLOCK_N]`` for a bias) with the bounds of
only the indices it uses as its mask; Triton's broadcasting in the epilogue's arithmetic does
the rest, and the store stays fully masked. Loads that use every index are upstream's, and
so are stores: an output with a size-1 dim (mm / bmm with M=1 or N=1) has an index without
that dim's template index, yet its pointer must stay the full tile the value has.

A template input that is a dtype view of another buffer (``x.view(torch.bfloat16)`` of a
float16 tensor: a ReinterpretView whose dtype differs from its storage's) is loaded through
the storage's pointer, so upstream's load gives the storage's dtype and ``tl.dot`` refuses the
operands ("Both operands must be same dtype", "Unsupported lhs dtype int16"). As upstream's
ReinterpretView loader does for pointwise kernels, the loaded value is bitcast to the view's
dtype (the default-mode small-GEMM templates reach this where upstream would call ATen).
"""

from __future__ import annotations

import inspect

import torch

from npu_inductor_core import cost_model
from torch._inductor.utils import triton_type
from torch._inductor.select_algorithm import TritonTemplateKernel
from torch._inductor.virtualized import V

from .kernel import NpuRuntimeMixin


class NpuTritonTemplateKernel(NpuRuntimeMixin, TritonTemplateKernel):
    def __init__(self, *args, **kwargs):
        # ALLOW_TF32=True (what upstream's conv templates take from the cudnn flags, on by
        # default) renders tl.dot(..., allow_tf32=True), which triton-ascend 3.2 refuses
        # ("allow_tf32 is deprecated, please use input_precision='hf32'"); the templates have
        # no way to say hf32, so npu templates compute float32 dots in full float32, as eager.
        # TritonTemplate.generate passes the template's kwargs twice: as ``meta`` and as the
        # ``defines`` it wrote from them; both are made here from the corrected kwargs.
        bound = _INIT.bind(self, *args, **kwargs)
        given = bound.arguments
        meta = given.get("meta")
        if isinstance(meta, dict) and str(meta.get("ALLOW_TF32")) == "True":
            given["meta"] = {**meta, "ALLOW_TF32": False}
            given["defines"] = template_defines(given["meta"], given.get("index_dtype_override"))
        super().__init__(*bound.args[1:], **bound.kwargs)
        # upstream's jit_lines builds a template's inductor_meta from self.inductor_meta_common()
        # (a classmethod) and no per-kernel hook; this instance's answer adds its work record
        self.inductor_meta_common = self._meta_with_work

    def _meta_with_work(self) -> dict:
        meta = type(self).inductor_meta_common()
        try:
            meta[cost_model.WORK_KEY] = {
                "gm_bytes": int(self.estimate_kernel_num_bytes()),
                "macs": int(self.estimate_flops() or 0) // 2,
                # the Cube's float32 rate is lower than its float16 one
                "fp32_macs": any(n.get_dtype() == torch.float32 for n in self.input_nodes[:2]),
            }
        except Exception:  # an estimate, never a reason to fail a compile
            pass
        return meta

    def load_input(
        self,
        input_name,
        output_name,
        indices,
        mask=None,
        other=0.0,
        indent_width=4,
        index_shape=None,
    ):
        key = super().load_input(
            input_name, output_name, indices, mask, other, indent_width, index_shape
        )
        node = self.named_input_nodes[input_name]
        viewed, stored = node.get_dtype(), V.graph.get_dtype(node.get_name())
        if viewed != stored and key in self.render_hooks:
            upstream = self.render_hooks[key]
            cast = f"{output_name} = {output_name}.to({triton_type(viewed)}, bitcast=True)"
            # the hook's text is stripped, its later lines indented by indent_width
            self.render_hooks[key] = lambda: f"{upstream()}\n{' ' * indent_width}{cast}"
        return key

    def _setup_contiguous_index_state(self, indices, index_symbols, lengths, mask, *args, **kwargs):
        # remember each template index's bound, for masks of loads that use only some of them;
        # per subgraph body (its buffer), as upstream keeps range trees and masks: a prologue
        # (load_input of A: idx_n < K) is rendered after the epilogue (store_output:
        # idx_n < N), and one shared record masked the prologue's bias with N
        if not hasattr(self, "_npu_index_bounds"):
            self._npu_index_bounds = {}
        self._npu_index_bounds[id(self.body)] = {
            name: length for name, length in zip(indices, lengths)
        }
        return super()._setup_contiguous_index_state(
            indices, index_symbols, lengths, mask, *args, **kwargs
        )

    def indexing(
        self, index, *, dense_indexing=False, copy_shape=None, override_mask=None, **options
    ):
        # options (block_ptr, tma_compatibility_checker, and on torch 2.13 mask_constant_index)
        # go on to upstream as given: torch 2.11's indexing() has no mask_constant_index
        bounds = getattr(self, "_npu_index_bounds", {}).get(id(self.body))
        names = list(getattr(self, "template_indices", None) or ())
        tile = self.template_out_shape  # the output tile's dims, e.g. ("BLOCK_M", "BLOCK_N")
        # stores (TritonKernel.store asks for dense indexing) keep upstream's full-tile pointer:
        # an output with a size-1 dim (M=1: its index drops idx_m) is not a broadcast, and a
        # [1, BLOCK_N] store pointer for a [BLOCK_M, BLOCK_N] value is an error
        if (
            not dense_indexing
            and self.template_mask
            and bounds
            and names
            and set(names) <= set(bounds)
            and isinstance(tile, (tuple, list))
            and 0 < len(tile) <= len(names)
        ):
            symbols = self.prepare_indexing(index).free_symbols
            used = {s.name for s in symbols}
            dims = [n for n in names if n in used]
            # an index through the kernel's flat range variables (x9 = (xindex // 64) % 4, of a
            # residual read through a view or permute) depends on every template index, even
            # where it names only some of them: upstream's full tile and mask (a mask of only
            # the named ones let rows past M load outside the buffer)
            flat = any(s in self.range_tree_nodes for s in symbols)
            if 0 < len(dims) < len(names) and not flat:  # a broadcast input of the epilogue
                mask = " & ".join(
                    f"({n} < {self.kexpr(self.rename_indexing(bounds[n]))})" for n in dims
                )
                entry = super(TritonTemplateKernel, self).indexing(
                    index, dense_indexing=False, copy_shape=None, override_mask=mask, **options
                )
                # the loaded value's shape: the tile's dims the load uses, 1 elsewhere (the
                # tile's dims are the last indices; a batch index is a scalar)
                shaped = names[len(names) - len(tile) :]
                entry.expand_shape = tuple(d if n in used else "1" for n, d in zip(shaped, tile))
                return entry
        return super().indexing(
            index,
            dense_indexing=dense_indexing,
            copy_shape=copy_shape,
            override_mask=override_mask,
            **options,
        )


def template_defines(meta: dict, index_dtype: str | None) -> str:
    """A template's constexpr lines as ``TritonTemplate.generate`` writes them: one per
    template kwarg, then the index dtype."""
    lines = [f"{name} : tl.constexpr = {val}\n" for name, val in meta.items()]
    if index_dtype is not None:
        lines.append(f"INDEX_DTYPE : tl.constexpr = {index_dtype}\n")
    return "".join(lines)


_INIT = inspect.signature(TritonTemplateKernel.__init__)
