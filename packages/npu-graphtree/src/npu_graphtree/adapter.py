"""The device adapter: everything the tree needs from a device with graph capture.

Three providers, one interface:
  - cuda: ``torch.cuda`` and the ``torch._C._cuda_*`` private-pool functions;
  - npu on torch_npu: ``torch.npu`` and ``torch_npu._C._npu_*`` (torch_npu 2.13's names);
  - npu on npu-sim: ``torch.npu`` and the sim's extension module, which keeps torch_npu's
    ``_npu_*`` names. It is found through ``sys.modules`` from ``torch.npu``'s package,
    never imported (components do not import each other).

Differences are capabilities, not branches in the tree: ``begin_increfs_pool`` (cuda and
torch_npu count a pool user per begin; npu-sim does not), native storage-error hooks
(``_set_storage_access_error_msg``; npu-sim lacks them, so ``storage.invalidate`` falls back
to Python), a raw block free (npu-sim frees through a checkpoint restore instead).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import warnings
from types import ModuleType
from typing import Any

import torch


class AdapterUnavailable(RuntimeError):
    pass


class DeviceAdapter:
    def __init__(
        self,
        device_type: str,
        module: ModuleType,
        C: Any,
        *,
        prefix: str,
        begin_increfs_pool: bool,
        provider: str,
    ):
        self.type = device_type
        self.module = module  # torch.cuda / torch.npu
        self.C = C  # where the private-pool functions live
        self.provider = provider  # "cuda" | "torch_npu" | "npu-sim" | ...
        self._p = prefix  # "_cuda_" | "_npu_"
        self.begin_increfs_pool = begin_increfs_pool
        self._fn_cache: dict[str, Any] = {}

    def _fn(self, name: str):
        fn = self._fn_cache.get(name)
        if fn is None:
            fn = getattr(self.C, name, None) or getattr(torch._C, name, None)
            if fn is None:
                raise AdapterUnavailable(f"{self.provider} has no {name}")
            self._fn_cache[name] = fn
        return fn

    def has(self, name: str) -> bool:
        return getattr(self.C, name, None) is not None or getattr(torch._C, name, None) is not None

    # ---- device, streams, graphs ---------------------------------------------------------
    def device(self, index: int) -> torch.device:
        return torch.device(self.type, index)

    def device_ctx(self, index: int):
        return self.module.device(index)

    def new_stream(self, index: int):
        with self.module.device(index):
            return self.module.Stream()

    def stream_ctx(self, stream):
        return self.module.stream(stream)

    def current_stream(self):
        return self.module.current_stream()

    def synchronize(self) -> None:
        self.module.synchronize()

    def new_graph(self):
        return (self.module.CUDAGraph if self.type == "cuda" else self.module.NPUGraph)()

    def new_pool(self) -> tuple[int, int]:
        return tuple(self.module.graph_pool_handle())

    def capture_begin(self, graph, pool) -> None:
        graph.capture_begin(pool=pool, capture_error_mode="thread_local")

    def capture_end(self, graph) -> bool | None:
        """End the capture; True when it recorded no device work, None when the device cannot
        say. npu-sim lists the recorded ops; cuda warns "The CUDA Graph is empty" (TORCH_WARN,
        every time) from ``capture_end``, which is caught here and not shown (other warnings
        raised meanwhile are passed on)."""
        if self.type != "cuda":
            graph.capture_end()
            ops = getattr(graph, "recorded_ops", None)
            return None if ops is None else len(ops) == 0
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            graph.capture_end()
        empty = False
        for w in caught:
            if "Graph is empty" in str(w.message):
                empty = True
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return True if empty else None

    # ---- the device's capture rules (issue 37) -------------------------------------------
    def _rules(self):
        """The provider's capture-rules module (npu-sim's ``capture_rules``), or None."""
        if self.provider in ("cuda", "torch_npu"):
            return None
        top = self.module.__name__.split(".")[0]
        return sys.modules.get(top + ".capture_rules")

    def uncapturable_reason(self, op_name: str) -> str | None:
        """Why the device cannot capture this op (``aten::nonzero.default``), or None. npu-sim
        answers from its capturable set (torch_npu's published list); cuda captures any op
        Inductor keeps in a partition, and torch_npu publishes no machine-readable list: None."""
        rules = self._rules()
        return None if rules is None else rules.uncapturable_reason(op_name)

    # the device's words for "this cannot be captured" (torch_npu / CANN, npu-sim, cuda)
    _REFUSALS = (
        "during NPU graph capture",
        "ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED",
        "error code is 107030",
        "error code is 207008",
        "operation not permitted when stream is capturing",
        "cudaErrorStreamCaptureInvalidated",
        "cudaErrorStreamCaptureUnsupported",
    )

    def capture_refusal(self, exc: BaseException) -> str | None:
        """The device's refusal in an error raised while capturing (first lines, with the error
        that invalidated the capture when the device chains one), or None for any other error."""
        for e in (exc, exc.__context__, exc.__cause__):
            if e is not None and any(m in str(e) for m in self._REFUSALS):
                text = str(exc).strip()
                inner = exc.__context__ if exc.__context__ is not None else exc.__cause__
                if inner is not None and str(inner).strip() and str(inner) not in text:
                    text = str(inner).strip().splitlines()[0] + " -> " + text.splitlines()[0]
                return " ".join(text.splitlines()[:2])
        return None

    def graph_budget(self) -> int | None:
        """Live captured graphs the device holds at most, or None (no limit known: cuda).
        Ascend: 1800, vllm-ascend's MAX_CAPTURE_SIZE (each live graph holds one of the device's
        2048 streams, 248 kept for communication and other streams); npu-sim scales it to its
        stream budget (``npu_sim.config.max_streams_per_device``)."""
        if self.type == "cuda":
            return None
        rules = self._rules()
        budget = getattr(rules, "graph_budget", None)
        return budget() if budget is not None else 1800

    def register_generator(self, graph, generator: torch.Generator) -> None:
        register = getattr(graph, "register_generator_state", None)
        if register is not None:
            register(generator)

    # ---- private pools -------------------------------------------------------------------
    def begin_pool(self, index: int, pool) -> None:
        self._fn(f"{self._p}beginAllocateCurrentThreadToPool")(index, pool)

    def end_pool(self, index: int, pool) -> None:
        self._fn(f"{self._p}endAllocateToPool")(index, pool)

    def release_pool(self, index: int, pool) -> None:
        self._fn(f"{self._p}releasePool")(index, pool)

    @contextlib.contextmanager
    def allocate_to_pool(self, index: int, pool, stream):
        """Eager work whose allocations come from ``pool`` (warmup, placeholders)."""
        with self.device_ctx(index), self.stream_ctx(stream):
            self.begin_pool(index, pool)
            try:
                yield
            finally:
                self.end_pool(index, pool)
                if self.begin_increfs_pool:
                    self.release_pool(index, pool)

    def checkpoint(self, index: int, pool):
        return self._fn(f"{self._p}getCheckpointState")(index, pool)

    def live_blocks(self, index: int, pool) -> set[int] | None:
        """Addresses of the pool's allocated blocks, when the device lists them (npu-sim's
        ``_pool_live_allocations``; on cuda and torch_npu read from the allocator's
        ``memory_snapshot()``, which is slow: record time and ``slow_asserts`` only)."""
        if self.has("_pool_live_allocations"):
            return set(self._fn("_pool_live_allocations")(index, pool))
        snapshot = getattr(self.module, "memory_snapshot", None)  # cuda; torch_npu has the same
        if snapshot is not None:
            pool = tuple(pool)
            blocks = set()
            for seg in snapshot():
                if seg.get("device") != index or tuple(seg.get("segment_pool_id", ())) != pool:
                    continue
                addr = seg["address"]
                for block in seg["blocks"]:
                    if block["state"] == "active_allocated":
                        blocks.add(addr)
                    addr += block["size"]
            return blocks
        return None

    def checkpoint_blocks(self, state) -> set[int] | None:
        """Addresses a checkpoint lists as allocated, where the device says (npu-sim)."""
        live = getattr(state, "live", None)
        return None if live is None else {ptr for ptr, _ in live}

    def check_live_blocks(self, index: int, pool, ptrs: set[int]) -> bool | None:
        name = f"{self._p}checkPoolLiveAllocations"
        return self._fn(name)(index, pool, ptrs) if self.has(name) else None

    def storage_from_ptr(self, ptr: int, index: int, nbytes: int) -> torch.UntypedStorage:
        """A storage over an existing pool block that does not own it."""
        if self.provider == "cuda":
            made = torch._C._construct_storage_from_data_pointer(ptr, self.device(index), nbytes)
        elif self.provider == "torch_npu":
            made = self.C._construct_storage_from_data_pointer(ptr, self.device(index), nbytes)
        else:  # npu-sim takes the device index and returns a uint8 tensor over the block
            made = self.C._construct_storage_from_data_pointer(ptr, index, nbytes)
        return made.untyped_storage() if isinstance(made, torch.Tensor) else made

    def storage_maker(self, index: int):
        """``storage_from_ptr`` for one device with the provider dispatch done once: a replay
        calls it per new output."""
        if self.provider == "cuda":
            make, where = torch._C._construct_storage_from_data_pointer, self.device(index)
        elif self.provider == "torch_npu":
            make, where = self.C._construct_storage_from_data_pointer, self.device(index)
        else:
            make, where = self.C._construct_storage_from_data_pointer, index
        Tensor = torch.Tensor

        def storage_at(ptr: int, nbytes: int) -> torch.UntypedStorage:
            made = make(ptr, where, nbytes)
            return made.untyped_storage() if isinstance(made, Tensor) else made

        return storage_at

    def tensor_maker(self):
        """``(prepare, make)``: ``make(prepare(geometry), storage)`` is a new tensor over
        ``storage`` with ``geometry`` (dtype, size, stride, storage offset); ``prepare`` runs
        once at record time. One C call where the provider has one (cuda's and torch_npu's
        ``_construct_*_Tensor_From_Storage_And_Metadata``, as their own trees use), else
        ``empty`` + ``set_`` (two dispatches)."""
        name = _TENSOR_FROM_STORAGE.get(self.provider)
        make = getattr(self.C, name, None) if name is not None else None
        if make is None:
            return (lambda geo: geo), tensor_from_geometry

        def prepare(geo) -> dict:
            dtype, size, stride, offset = geo
            return {
                "dtype": dtype,
                "size": tuple(size),
                "stride": tuple(stride),
                "storage_offset": offset,
            }

        return prepare, make

    def restore(
        self,
        index: int,
        state,
        add_deleters: list[torch.UntypedStorage],
        dead: list[tuple[int, int]],
        stale: list[torch.UntypedStorage] = (),
    ):
        """Make the pool's allocated blocks exactly ``state``'s, give the (unowned) live
        storages ``add_deleters`` ownership of their blocks, then free the ``dead``
        (ptr, nbytes) blocks, which ``state`` still lists as allocated. ``stale``: live storages
        owning blocks that ``state`` does not list (the restore frees them, so they must stop
        owning; cuda's and torch_npu's restore check that every such block is named)."""
        add = [s._cdata for s in add_deleters]
        gone = [s._cdata for s in stale]
        raw_delete = f"{self._p}{'cudaCachingAllocator' if self.type == 'cuda' else 'npuCachingAllocator'}_raw_delete"
        if self.has(raw_delete):
            self._fn(f"{self._p}setCheckpointPoolState")(index, state, gone, add)
            for ptr, _ in dead:
                self._fn(raw_delete)(ptr)
            return
        # no raw free (npu-sim): own the dead blocks through temporary storages, drop them
        temps = [self.storage_from_ptr(ptr, index, nbytes) for ptr, nbytes in dead]
        self._fn(f"{self._p}setCheckpointPoolState")(
            index, state, gone, add + [t._cdata for t in temps]
        )
        del temps

    # ---- storage access errors (native where the provider has them) --------------------
    def native_access_errors(self) -> bool:
        return (
            self.has("_set_storage_access_error_msg")
            and self._free_and_remove_deleter() is not None
        )

    def _free_and_remove_deleter(self):
        """The provider's ``_free_And_Remove_DeleterFn``. torch._C's frees through CUDA's caching
        allocator and is in every CUDA build of torch (the torch 2.11 cu130 wheel): only cuda
        may take it from there; on npu-sim's storages it raised "Expected standard deleter"."""
        fn = getattr(self.C, "_free_And_Remove_DeleterFn", None)
        if fn is None and self.provider == "cuda":
            fn = getattr(torch._C, "_free_And_Remove_DeleterFn", None)
        return fn

    def set_tensor_access_error(self, t: torch.Tensor, msg: str) -> None:
        self._fn("_set_storage_access_error_msg")(t, msg)

    def free_and_poison_storage(self, storage_cdata: int, msg: str) -> None:
        self._free_and_remove_deleter()(storage_cdata)
        if self.has("_set_storage_data_ptr_access_error_msg"):
            self._fn("_set_storage_data_ptr_access_error_msg")(storage_cdata, msg)


# provider -> its one-call "tensor over this storage with this metadata" (metadata first)
_TENSOR_FROM_STORAGE = {
    "cuda": "_construct_CUDA_Tensor_From_Storage_And_Metadata",
    "torch_npu": "_construct_NPU_Tensor_From_Storage_And_Metadata",
}


def tensor_from_geometry(geo, storage: torch.UntypedStorage) -> torch.Tensor:
    """The generic ``make`` of ``tensor_maker``: ``empty`` + ``set_`` with geometry ``geo``."""
    dtype, size, stride, offset = geo
    return torch.empty((0,), dtype=dtype, device=storage.device).set_(storage, offset, size, stride)


_adapters: dict[str, DeviceAdapter] = {}
_adapters_lock = threading.Lock()


def _npu_provider() -> tuple[Any, str]:
    """The module holding torch_npu-named private-pool functions for device "npu"."""
    tn = sys.modules.get("torch_npu")
    if tn is not None and hasattr(getattr(tn, "_C", None), "_npu_beginAllocateCurrentThreadToPool"):
        return tn._C, "torch_npu"
    module = getattr(torch, "npu", None)
    if module is None:
        raise AdapterUnavailable(
            "device 'npu' is not available: torch.npu does not exist (no torch_npu, npu-sim not started)"
        )
    top = module.__name__.split(".")[0]
    pkg = sys.modules.get(top)
    candidates = [getattr(pkg, "_C", None)]
    for name, mod in list(
        sys.modules.items()
    ):  # e.g. npu-sim's extension module, loaded under its own name
        if name == top or name.startswith(top + ".") or name.startswith(top + "_"):
            candidates.append(mod)
            candidates.append(getattr(mod, "_C", None))
    for c in candidates:
        if c is not None and hasattr(c, "_npu_beginAllocateCurrentThreadToPool"):
            return c, top.replace("_", "-")
    raise AdapterUnavailable(
        f"torch.npu (from {top}) offers no private-pool functions (_npu_beginAllocateCurrentThreadToPool)"
    )


def get_adapter(device_type: str) -> DeviceAdapter:
    with _adapters_lock:
        adapter = _adapters.get(device_type)
        if adapter is not None:
            return adapter
        if device_type == "cuda":
            if not torch.cuda.is_available():
                raise AdapterUnavailable("cuda is not available")
            adapter = DeviceAdapter(
                "cuda",
                torch.cuda,
                torch._C,
                prefix="_cuda_",
                begin_increfs_pool=True,
                provider="cuda",
            )
        elif device_type == "npu":
            C, provider = _npu_provider()
            adapter = DeviceAdapter(
                "npu",
                torch.npu,
                C,
                prefix="_npu_",
                begin_increfs_pool=provider == "torch_npu",
                provider=provider,
            )
        else:
            raise AdapterUnavailable(f"no graph capture for device type {device_type!r}")
        _adapters[device_type] = adapter
        return adapter


def supports(device_type: str) -> bool:
    try:
        get_adapter(device_type)
    except AdapterUnavailable:
        return False
    return True
