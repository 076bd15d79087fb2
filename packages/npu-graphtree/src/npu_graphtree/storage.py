"""Storages the tree hands out: liveness, invalidation, byte-level copies.

Liveness. We keep no cached TensorImpls of outputs, so nothing of ours holds an
output's StorageImpl: its use count is exactly the outside world's holders -- Python tensors
(refcount), C++ TensorImpls such as autograd's SavedVariables behind a pending ``grad_fn``,
and user views. A weak reference to the StorageImpl is therefore live iff one of those still
needs the memory, and memory saved for backward is never handed out again.
"""

from __future__ import annotations

import weakref

import torch


# the C functions StorageWeakRef wraps, called directly: a replay swaps one weak ref per
# output, and StorageWeakRef's Python __init__/expired/__del__ cost ~3x as much
_expired = torch.UntypedStorage._expired
_free_weak_ref = torch.UntypedStorage._free_weak_ref
_new_with_weak_ptr = torch.UntypedStorage._new_with_weak_ptr


class StorageRef:
    """Weak reference to one output storage of a node, remembering its block."""

    __slots__ = ("cdata", "ptr", "nbytes", "owned", "_free")

    def __init__(self, storage: torch.UntypedStorage, owned: bool):
        self.cdata = storage._weak_ref()
        self._free = _free_weak_ref  # kept: torch may be torn down first at interpreter exit
        self.ptr = storage.data_ptr()
        self.nbytes = storage.nbytes()
        # owned: the storage frees its block when it dies (recording/warmup outputs, or after
        # a checkpoint restore gave it a deleter); replay outputs are built over the block
        # without ownership, the pool's checkpoint owns them
        self.owned = owned

    def swap(self, storage: torch.UntypedStorage, owned: bool) -> None:
        old, self.cdata = self.cdata, storage._weak_ref()
        self._free(old)
        self.owned = owned

    def release(self) -> None:
        """The storage's block was freed under it (native poisoning): from now on this output
        is dead to the tree, whoever still holds the (unusable) storage."""
        tmp = torch.UntypedStorage(0)
        old, self.cdata = self.cdata, tmp._weak_ref()
        del tmp  # the new weak ref is expired from here on
        self._free(old)
        self.owned = False

    def live(self) -> bool:
        return not _expired(self.cdata)

    def storage(self) -> torch.UntypedStorage | None:
        """A strong Python handle, or None when dead."""
        if _expired(self.cdata):
            return None
        return _new_with_weak_ptr(self.cdata)

    def __del__(self):
        self._free(self.cdata)


def tensor_over(storage: torch.UntypedStorage, meta) -> torch.Tensor:
    """A tensor with ``meta``'s geometry (dtype, size, stride, storage offset) on ``storage``."""
    dtype, size, stride, offset = meta
    t = torch.empty((0,), dtype=dtype, device=storage.device)
    return t.set_(storage, offset, size, stride)


def geometry(t: torch.Tensor):
    return (t.dtype, tuple(t.shape), tuple(t.stride()), t.storage_offset())


def _bytes(t: torch.Tensor) -> torch.Tensor:
    # the 4-argument set_: npu-sim routes set_(Storage) alone to the CPU kernel (reported)
    s = t.untyped_storage()
    return torch.empty((0,), dtype=torch.uint8, device=t.device).set_(s, 0, (s.nbytes(),), (1,))


def copy_input(dst: torch.Tensor, src: torch.Tensor, overlapping: bool) -> None:
    """Copy a dynamic input into its placeholder. A self-overlapping layout (e.g. an expanded
    input, stride 0) cannot be written element-wise -- ``copy_`` refuses it -- so both sides,
    which share size and stride, are copied as the byte span the layout covers."""
    if not overlapping:
        dst.copy_(src)
        return
    if dst.numel() == 0:
        return
    elem = src.element_size()
    span = (sum((s - 1) * st for s, st in zip(src.shape, src.stride())) + 1) * elem
    so, do = src.storage_offset() * elem, dst.storage_offset() * elem
    _bytes(dst)[do : do + span].copy_(_bytes(src)[so : so + span])


def overlaps_itself(t: torch.Tensor) -> bool:
    return torch._debug_has_internal_overlap(t) != 0


class _OverwrittenOutput(torch.Tensor):
    """What an invalidated output becomes where the device has no native storage error: its
    storage is released and every use raises the message naming the output."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for a in list(args) + list((kwargs or {}).values()):
            if isinstance(a, _OverwrittenOutput):
                raise RuntimeError(
                    getattr(
                        a, "_graphtree_msg", "output of a graph tree overwritten by a later run"
                    )
                )
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


def invalidate_tensor(adapter, t: torch.Tensor, msg: str) -> None:
    """Make accessing ``t`` raise ``msg``, and let go of its memory."""
    if adapter.native_access_errors():
        adapter.set_tensor_access_error(t, msg)
        return
    with torch.no_grad(), torch._C.DisableTorchFunctionSubclass():
        t.set_()  # drops the storage; the block is reclaimed once nothing else holds it
    t.__class__ = _OverwrittenOutput
    t._graphtree_msg = msg


def clone_out_of_pool(t: torch.Tensor, clones: dict[int, torch.UntypedStorage]) -> None:
    """Give ``t`` a private copy of its pool storage (shared by views of the same storage)
    so a later replay cannot overwrite what the user holds (generation cloning)."""
    storage = t.untyped_storage()
    key = storage.data_ptr()
    new = clones.get(key)
    if new is None:
        new = _bytes(t).detach().clone().untyped_storage()
        clones[key] = new
    t.data = tensor_over(new, geometry(t))


# Weak reference to a tensor the tree returned (for invalidation or cloning); the plain
# weakref type, so making one per replay output costs no Python frame.
TensorRef = weakref.ref
