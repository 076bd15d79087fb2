"""Binding Inductor's npu kernels to launch objects (entry point
``npu_inductor.kernel_launcher: bind_triton``, used by npu-lowering's kernel object).

``bind_triton(fn, triton_meta, config_kwargs, device)`` turns one kernel configuration into a
pre-bound launch object: runtime arguments are the kernel's non-constexpr parameters in
order, constexprs are Inductor's constants plus the config's block sizes, and the
``tt.divisibility`` hints become per-argument alignment checks. On npu-sim the descriptor
carries the kernel's Python source (the sim driver interprets it); a native npu binary needs
triton-ascend's compiled kernel and is not produced here yet (UnsupportedKernel).
"""

from __future__ import annotations

from typing import Any, Mapping

from .errors import UnsupportedKernel
from .from_triton import sim_descriptor
from .launcher import bind


def _divisibility(triton_meta: Mapping, names: list[str]) -> dict[str, int]:
    """Inductor's attrs ({(index,): [["tt.divisibility", 16]]}) by argument name."""
    out: dict[str, int] = {}
    for attrs in triton_meta.get("configs", ()) or ():
        if not isinstance(attrs, Mapping):
            continue
        for key, values in attrs.items():
            index = key[0] if isinstance(key, tuple) and len(key) == 1 else None
            if index is None or index >= len(names):
                continue
            for name, value in values:
                if name == "tt.divisibility":
                    out[names[index]] = int(value)
    return out


def _int_type(value: int) -> str:
    return "i32" if -(2**31) <= int(value) < 2**31 else "i64"


def bind_triton(fn: Any, triton_meta: Mapping, config_kwargs: Mapping[str, Any], device: int = 0,
                simulated: bool = True):
    if not simulated:
        raise UnsupportedKernel(f"kernel {getattr(fn, '__name__', fn)!r}: static launch of a native npu "
                                "binary needs triton-ascend's compiled kernel (not wired yet)")
    signature = dict(triton_meta["signature"])
    names = list(signature)
    constants = dict(triton_meta.get("constants") or {})
    # Runtime arguments are the parameters the kernel does not annotate tl.constexpr, in order
    # (what Inductor's launch passes): a specialized xnumel=1, typed "constexpr" in the
    # signature, is still an argument of the call.
    params = getattr(fn, "params", None)
    declared = [p.name for p in params if not p.is_constexpr] if params else \
        [n for n, t in signature.items() if t != "constexpr"]
    runtime = {n: (signature[n] if signature.get(n, "constexpr") != "constexpr" else _int_type(constants.get(n, 0)))
               for n in declared}
    constexprs = {k: v for k, v in {**constants, **dict(config_kwargs)}.items() if k not in runtime}
    desc = sim_descriptor(fn, runtime, constexprs, divisibility=_divisibility(triton_meta, names))
    return bind(desc, device)
