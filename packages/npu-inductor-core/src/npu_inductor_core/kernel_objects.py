"""The parts of a generated npu kernel's kernel object, per device, and the ``inductor_meta``
facts the packages that build and tune it share.

A generated kernel calls a ``triton_heuristics`` decorator (``pointwise``, ``reduction``...);
which function answers is looked up here by device and upstream's name. npu-lowering
registers the kernel-object class and its default decorators; a component that tunes kernels
(npu-autotune) registers, through its entry point, decorators that replace some of them and
the kernel object's tuning part. No component imports another: each meets the others here.

Entry point group ``npu_inductor.heuristics``, name = the device type: the value is a module
whose ``register()`` calls ``register_heuristics`` / ``register_tuning``; every one installed
is loaded at the first lookup for its device, after the lowering registered its defaults.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any, Callable

GROUP = "npu_inductor.heuristics"

# upstream's ``triton_heuristics`` decorators a generated kernel may call
HEURISTIC_NAMES = (
    "pointwise",
    "reduction",
    "persistent_reduction",
    "split_scan",
    "template",
    "user_autotune",
    "foreach",
    "fixed_config",
    "cooperative_reduction",
)

# the kernel-object methods its tuning part takes over: the part's method of that name gets
# (kernel object, the launch's own method, *args) (``precompile_worker`` is upstream's
# ``_precompile_worker``, ``precompile_config`` ``_precompile_config``,
# ``create_compile_options`` ``_create_compile_options``)
TUNING_HOOKS = (
    "precompile",
    "precompile_worker",
    "precompile_config",
    "create_compile_options",
    "bench",
    "coordinate_descent_tuning",
    "benchmark_all_configs",
    "run",
)
# and what the kernel object asks it: ``in_progress(kernel)``, True while the config a call
# launches is not settled (the direct-launch probe waits)
TUNING_QUERIES = ("in_progress",)

# ---- inductor_meta keys written by npu-lowering's codegen, read by the runtime parts ----
# the Triton the kernel was generated for: "ascend", "interpreter" (npu-sim) or "nvidia"
FLAVOUR_KEY = "npu_flavour"
SIMULATED_FLAVOUR = "interpreter"
ASCEND_FLAVOUR = "ascend"
# size hints of the sizes a dynamic kernel should also be tuned for (multi_kernel_hints)
HINT_SIZE_HINTS_KEY = "npu_hint_size_hints"
# upstream's per-sub-kernel facts of a combo kernel; npu-lowering's combo_meta adds npu's there
COMBO_META_KEY = "combo_grid_meta"


def kernel_fact(inductor_meta: dict | None, key: str):
    """A fact npu-lowering's codegen wrote under ``key``: the kernel's own, else (a combo
    kernel) the one in its ``COMBO_META_KEY`` dict; None where neither has it."""
    meta = inductor_meta or {}
    if meta.get(key) is not None:
        return meta[key]
    return (meta.get(COMBO_META_KEY) or {}).get(key)


def flavour_of(inductor_meta: dict | None, default: str | None = None) -> str | None:
    """The flavour the kernel was generated for; ``default`` for a kernel without the key."""
    return (inductor_meta or {}).get(FLAVOUR_KEY, default)


def is_simulated(inductor_meta: dict | None, default: str | None = None) -> bool:
    return flavour_of(inductor_meta, default) == SIMULATED_FLAVOUR


def is_ascend(inductor_meta: dict | None, default: str | None = None) -> bool:
    return flavour_of(inductor_meta, default) == ASCEND_FLAVOUR


# ---- the registry -----------------------------------------------------------------------
_kernel_class: dict[str, type] = {}
_heuristics: dict[str, dict[str, Callable]] = {}
_owners: dict[str, dict[str, str]] = {}
_tuning: dict[str, Any] = {}
_loaded: set[str] = set()


def register_kernel_class(device: str, cls: type, defaults: dict[str, Callable]) -> None:
    """The kernel-object class of ``device``'s kernels and its default decorators (by
    upstream's names). Registered once, by the package that generates the kernels."""
    unknown = set(defaults) - set(HEURISTIC_NAMES)
    if unknown:
        raise ValueError(f"not triton_heuristics decorators: {sorted(unknown)}")
    _kernel_class[device] = cls
    table = _heuristics.setdefault(device, {})
    owners = _owners.setdefault(device, {})
    for name, fn in defaults.items():
        if name not in table:  # a provider loaded first keeps its decorators
            table[name] = fn
            owners[name] = cls.__module__


def kernel_class(device: str) -> type:
    try:
        return _kernel_class[device]
    except KeyError:
        raise LookupError(f"no kernel-object class is registered for device {device!r}") from None


def register_heuristics(device: str, owner: str, decorators: dict[str, Callable]) -> None:
    """Decorators that replace the defaults of ``device`` (a tuning component's)."""
    unknown = set(decorators) - set(HEURISTIC_NAMES)
    if unknown:
        raise ValueError(f"{owner}: not triton_heuristics decorators: {sorted(unknown)}")
    _heuristics.setdefault(device, {}).update(decorators)
    _owners.setdefault(device, {}).update(dict.fromkeys(decorators, owner))


def register_tuning(device: str, owner: str, part: Any) -> None:
    """The tuning part of ``device``'s kernel objects (one owner)."""
    have = _tuning.get(device)
    if have is not None and type(have) is not type(part):
        raise ValueError(
            f"{owner}: device {device!r} already has the tuning part {type(have).__qualname__}"
        )
    _tuning[device] = part


def _load_providers(device: str) -> None:
    if device in _loaded:
        return
    _loaded.add(device)
    for ep in metadata.entry_points(group=GROUP):
        if ep.name != device:
            continue
        try:
            ep.load().register()
        except Exception as exc:  # a broken provider is an error, not a silent fallback
            _loaded.discard(device)
            raise RuntimeError(
                f"npu heuristics provider {ep.value!r} ({GROUP}) failed to load: {exc}"
            ) from exc


def heuristic(device: str, name: str) -> Callable:
    """The decorator ``name`` (upstream's ``triton_heuristics`` name) of ``device``'s kernels."""
    _load_providers(device)
    try:
        return _heuristics[device][name]
    except KeyError:
        raise LookupError(f"no {name!r} heuristic is registered for device {device!r}") from None


def owner_of(device: str, name: str) -> str:
    """Who registered the decorator ``name`` (doctor, tests)."""
    _load_providers(device)
    return _owners[device][name]


def tuning(device: str) -> Any:
    """The tuning part of ``device``'s kernel objects, or None when no component tunes them."""
    _load_providers(device)
    return _tuning.get(device)
