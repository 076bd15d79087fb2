"""Loads that do not depend on the sub-block loops, read once per program before them.

A kernel with per-program sub-block loops (kernel.py) runs its body once per block of rows.
A load whose address and mask name no loop axis (an RMSNorm's weight, read at ``r0_1`` in
every row block) reads the same tile in every iteration; inside the loop it is read from GM
again for each block of rows (issue 38: add + RMSNorm at 1.25x the minimum GM bytes). Such
a load is written before the loops instead, with what it needs there: the headers and index
variables of a persistent reduction's r axes, which name no loop axis either. The loop body
uses the value; it stays live across the loop (a tile of the body already, so the UB sizing
counts it).

The lines go into a ``PreLoop`` block that the kernel writes into upstream's body, as one
deferred line, where the loops start: it renders the block's lines there when the body is
spliced into the kernel, by which time codegen has written them all (upstream writes loads
after the loops are opened). Nothing upstream wrote is edited.
"""

from __future__ import annotations

from torch._inductor.utils import DeferredLineBase, IndentedBuffer
from torch.utils._sympy.symbol import free_symbol_is_type

MARKER = "# npu: loop-invariant lines (hoist.py)"  # never rendered: stands for the block


class PreLoop(DeferredLineBase):
    """A deferred line in the kernel body standing for ``code`` (index variables) then
    ``loads`` (the hoisted loads, which use them): their lines at the line's indentation, or
    nothing when both are empty. Two buffers, so a variable first used by a later load is
    still defined before every load, and the loads can be counted apart (the cost model's
    record). Copies made by upstream's buffer operations (a prefix added, a splice's dedent)
    share them."""

    def __init__(
        self,
        line: str = MARKER,
        code: IndentedBuffer | None = None,
        loads: IndentedBuffer | None = None,
    ) -> None:
        super().__init__(line)
        self.code = IndentedBuffer() if code is None else code
        self.loads = IndentedBuffer() if loads is None else loads

    def __call__(self) -> str | None:
        lines = (self.code.getvalue() + self.loads.getvalue()).rstrip("\n")
        if not lines:
            return None
        indent = self.line[: len(self.line) - len(self.line.lstrip())]
        return "\n".join(f"{indent}{line}" if line else "" for line in lines.split("\n"))

    def _new_line(self, line: str) -> PreLoop:
        return PreLoop(line, self.code, self.loads)


def row_invariant(indexing, loop_axes, written: bool) -> bool:
    """Whether a load with upstream's ``indexing`` reads the same tile in every iteration of
    the sub-block loops over ``loop_axes``: a plain (not block-pointer, not indirect) index
    naming none of their symbols, masks that are none of theirs and no computed mask (an
    ``ops.masked`` condition is a value of the body), and a buffer the kernel does not write
    (``written``: a later iteration would read what an earlier one stored)."""
    from torch._inductor.codegen.triton import IndexingOptions

    if written or not isinstance(indexing, IndexingOptions) or indexing.has_indirect():
        return False
    if any(free_symbol_is_type(indexing.index, tree.symt) for tree in loop_axes):
        return False
    loop_masks = {tree.mask_name() for tree in loop_axes}
    return all(isinstance(m, str) and m not in loop_masks for m in indexing.mask_vars) and (
        not indexing.has_tmpmask()
    )
