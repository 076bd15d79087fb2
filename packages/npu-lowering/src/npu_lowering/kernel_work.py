"""Work records for the cost model (``npu_inductor_core.cost_model.WORK_KEY``) beyond one
kernel's pending statements: what a looped reduction's passes read again, and a combo
kernel's record from its sub-kernels' records."""

from __future__ import annotations

from collections import Counter

from torch.utils._ordered_set import OrderedSet

# per-element counts of a record: a combo weighs its sub-kernels' by their element counts
_PER_ELEMENT = ("vector_ops", "special_ops", "composite_ops")


def _lines(buffer) -> list:
    get = getattr(buffer, "get_lines_ref", None)  # torch 2.12+; the attribute before
    return get() if get is not None else buffer._lines


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
        self.reads: Counter = Counter()  # buffer -> closed r-loop passes that loaded it
        self.open: OrderedSet = OrderedSet()  # buffers loaded in the pass being written

    def before_load(self, kernel) -> int:
        return len(_lines(kernel.loads)) + len(_lines(kernel.compute))

    def after_load(self, kernel, name: str, before: int) -> None:
        # a new line in the loop: not a CSE hit, not a load upstream lifts out of the loop
        if _in_r_loop(kernel) and self.before_load(kernel) > before:
            self.open.add(name)

    def flush(self, kernel) -> None:
        """Before upstream's ``codegen_body`` moves the pending statements into the body."""
        self.ops += sum(len(_lines(b)) for b in (kernel.loads, kernel.compute, kernel.stores))
        self.compute += [line for line in _lines(kernel.compute) if isinstance(line, str)]
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


def combo_work(sub_works: list) -> dict:
    """A combo kernel's record: its sub-kernels' bytes and elements summed, its per-element
    counts weighed by each sub-kernel's elements (so vector work is the sum of theirs); empty
    where a sub-kernel has no record."""
    if not sub_works or not all(sub_works):
        return {}
    numel = sum(w.get("numel", 0) for w in sub_works)
    work = {"gm_bytes": sum(w.get("gm_bytes", 0) for w in sub_works), "numel": numel}
    for key in _PER_ELEMENT:
        weighted = sum(w.get(key, 0) * w.get("numel", 0) for w in sub_works)
        work[key] = round(weighted / numel, 3) if numel else 0
    return work


def with_combo_work(src_code: str, kernel, work_key: str) -> str:
    """``src_code`` of a combo kernel with its record in the decorator's inductor_meta (and in
    ``kernel.inductor_meta``, which its launch passes on). Upstream writes that dict's repr
    from the kernel class's common meta alone; unchanged where the repr is not found once."""
    meta = getattr(kernel, "inductor_meta", None)
    subs = getattr(kernel, "sub_kernels", None) or []
    if not isinstance(meta, dict) or work_key in meta:
        return src_code
    try:  # an estimate, never a reason to fail a compile
        work = combo_work([getattr(s, "_npu_work", dict)() for s in subs])
    except Exception:
        return src_code
    needle = f"inductor_meta={meta!r}"
    if not work or src_code.count(needle) != 1:
        return src_code
    meta[work_key] = work
    return src_code.replace(needle, f"inductor_meta={meta!r}")
