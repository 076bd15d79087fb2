"""Facts of Ascend's compiler that every config generator obeys (npu-lowering's heuristics
and npu-autotune's tile generator both filter their configs through these)."""

from __future__ import annotations

# inductor_meta: the kernel indexes a tensor with loaded values (gather, embedding, scatter);
# npu-lowering's codegen sets it
INDIRECT_KEY = "npu_indirect_indexing"


def without_one_row_indirect(configs: list, size_hints: dict, inductor_meta: dict | None) -> list:
    """triton-ascend 3.2.0's triton-adapter-opt aborts on an indirect load in a kernel whose x
    block is one row (PtrAnalysis: ``!(lBlock.hasSource() && rBlock.hasSource())``; BERT's
    and OPT's embeddings + layer norm at XBLOCK=1, other blocks lower): such kernels drop
    XBLOCK=1 configs where the x axis has more than one row and another config is left."""
    if not (inductor_meta or {}).get(INDIRECT_KEY) or int(size_hints.get("x", 1)) <= 1:
        return configs
    return [c for c in configs if c.kwargs.get("XBLOCK") != 1] or configs
