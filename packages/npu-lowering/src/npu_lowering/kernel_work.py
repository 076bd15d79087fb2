"""Work records for the cost model (``npu_inductor_core.cost_model.WORK_KEY``) beyond one
kernel's pending statements: what a looped reduction's passes read again, and the dtype each
statement computes in."""

from __future__ import annotations

from collections import Counter

from torch.utils._ordered_set import OrderedSet

from ._compat import lines_of


def statement_dtypes(kernel, buffers) -> Counter:
    """The statements of ``buffers`` (a kernel's loads, computations, stores) by the dtype
    codegen gave them, as names (``int64``): a load's or computation's is its CSE variable's
    (CSE writes a new variable's statement as ``<name> = <expression>``, and keeps the variable
    by name), a store's is its buffer's (upstream writes it as a line deferred on the buffer's
    name). Statements with neither (lines of a spliced helper, an assert) are left out."""
    from torch._inductor.codegen.common import DeferredLine
    from torch._inductor.virtualized import V

    variables = kernel.cse.varname_map
    out: Counter = Counter()
    for buf in buffers:
        for line in lines_of(buf):
            text = line if isinstance(line, str) else getattr(line, "line", None)
            if not isinstance(text, str):
                continue
            target, assigned, _ = text.partition(" = ")
            var = variables.get(target.strip()) if assigned else None
            dtype = getattr(var, "dtype", None)
            if dtype is None and isinstance(line, DeferredLine):
                try:
                    dtype = V.graph.get_dtype(line.name)
                except Exception:  # a name the graph does not know: no dtype then
                    dtype = None
            if dtype is not None:
                out[str(dtype).removeprefix("torch.")] += 1
    return out


def _in_r_loop(kernel) -> bool:
    """Whether loads go into a ``for r0_offset in ...`` loop of a looped reduction."""
    return bool(
        kernel.inside_reduction
        and kernel.range_trees[-1].is_loop
        and not getattr(kernel, "mix_order_reduction", False)
    )


class Passes:
    """A kernel's statements over every body codegen flushed, and the buffers each r-loop
    pass loaded. A looped reduction flushes its loads, computations and stores into a loop
    once per pass (upstream's ``disable_reduction`` before each reduction's epilogue, its
    ``codegen_kernel`` for the last), so a softmax's second pass loads its input again."""

    def __init__(self) -> None:
        self.ops = 0  # statements of flushed bodies
        self.compute: list[str] = []  # their computations
        self.dtypes: Counter = Counter()  # their dtypes (``statement_dtypes``)
        self.reads: Counter = Counter()  # buffer -> closed r-loop passes that loaded it
        self.open: OrderedSet = OrderedSet()  # buffers loaded in the pass being written

    def before_load(self, kernel) -> int:
        return len(lines_of(kernel.loads)) + len(lines_of(kernel.compute))

    def after_load(self, kernel, name: str, before: int) -> None:
        # a new line in the loop: not a CSE hit, not a load upstream lifts out of the loop
        if _in_r_loop(kernel) and self.before_load(kernel) > before:
            self.open.add(name)

    def flush(self, kernel) -> None:
        """Before upstream's ``codegen_body`` moves the pending statements into the body."""
        pending = (kernel.loads, kernel.compute, kernel.stores)
        self.ops += sum(len(lines_of(b)) for b in pending)
        self.dtypes.update(statement_dtypes(kernel, pending))
        self.compute += [line for line in lines_of(kernel.compute) if isinstance(line, str)]
        self.reads.update(self.open)
        self.open.clear()

    def reread_bytes(self, kernel, numel: int) -> int:
        """Bytes of the passes after a buffer's first (upstream's estimate counts one): per
        pass, the buffer's elements up to the kernel's element count (a broadcast weight once)."""
        from torch._inductor.virtualized import V

        reads = self.reads + Counter(self.open)
        total = 0
        for name, passes in reads.items():
            if passes > 1:
                size = V.graph.sizevars.optimization_hint(V.graph.get_numel(name))
                total += (passes - 1) * min(int(size), numel) * V.graph.get_dtype(name).itemsize
        return total
