"""Structured config overrides for npu kernels: upstream's ``lookup_table.table`` and
``lookup_table.check_src_hash``.

Upstream reads that table only for GEMM templates on cuda (``LookupTableChoices``: keys
``"<gcnArchName>+<input dtypes/shapes/strides>+<op>"``, entries with ``template_id`` and an
optional ``template_hash``). npu kernels are generated pointwise/reduction kernels, so the
same table, in the same shape, overrides their configs:

    key    "<device>+<shape>+<kernel>"   device-specific (tried first)
           "<shape>+<kernel>"            any npu device
      device  the SoC name of the device properties (``torch.npu.get_device_properties(i).name``,
              e.g. "Ascend910B2")
      shape   the kernel's size hints, "x=2048" / "y=64,x=32" / "x=8,r0_=1024"
      kernel  the kernel name without its trailing counter ("triton_poi_fused_add_cos")
    value  a list of configs, each {"XBLOCK": 64, ..., "num_warps": 1, "num_stages": 1,
           "src_hash": "<sha256>"}; "src_hash" (optional) is ``src_hash(kernel)``, the hash of
           the name-stripped kernel source. With check_src_hash (default) an entry whose
           src_hash differs from the kernel's source is stale and ignored; without it, used.

One config is used without benchmarking; several are the only candidates tuned. Entries
with a ``template_id`` are GEMM template entries (upstream's) and are skipped here.
``entry(kernel, config)`` writes the key and entry of a tuned kernel's config.
"""

from __future__ import annotations

import logging
import re

from torch._inductor.runtime.triton_heuristics import generate_lookup_hash_from_source_code
from triton import Config

log = logging.getLogger(__name__)
_COUNTER = re.compile(r"_\d+$")
_LAUNCH_FIELDS = ("num_warps", "num_stages")


def device_key(index: int) -> str | None:
    from npu_inductor_core.device import device

    facts = device(index)
    return None if facts.flavour == "none" else facts.soc  # None: no npu device in this process


def shape_key(size_hints: dict) -> str:
    return ",".join(f"{axis}={n}" for axis, n in size_hints.items())


def kernel_key(kernel) -> str:
    name = kernel.inductor_meta.get("kernel_name") or kernel.fn.__name__
    return _COUNTER.sub("", name)


def src_hash(kernel) -> str:
    return generate_lookup_hash_from_source_code("", kernel.fn.src)


def keys(kernel) -> list[str]:
    """The kernel's keys, device-specific first."""
    dev = kernel.triton_meta.get("device")
    plain = f"{shape_key(kernel.size_hints)}+{kernel_key(kernel)}"
    device = device_key(getattr(dev, "index", 0) or 0)
    return [f"{device}+{plain}", plain] if device else [plain]


def entry(kernel, config: Config) -> tuple[str, dict]:
    """(device-specific key, entry) of ``config`` for this kernel: what a table is made of."""
    value = {
        **config.kwargs,
        "num_warps": config.num_warps,
        "num_stages": config.num_stages,
        "src_hash": src_hash(kernel),
    }
    return keys(kernel)[0], value


def _table() -> dict:
    from torch._inductor import config

    table = config.lookup_table.table
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise ValueError(
            f"lookup_table.table must be a dict of key -> list of configs, got {type(table).__name__}"
        )
    return table


def _fresh(kernel, key: str, cfg: dict) -> bool:
    from torch._inductor import config

    want = cfg.get("src_hash")
    if want is None or not config.lookup_table.check_src_hash:
        return True
    have = src_hash(kernel)
    if want != have:
        log.warning(
            "lookup table entry %s %s is stale (src_hash %s, the kernel's source hashes to %s): ignored",
            key,
            cfg,
            want,
            have,
        )
        return False
    return True


def _config(kernel, key: str, cfg: dict) -> Config:
    allowed = sorted({name for c in kernel.configs or () for name in c.kwargs})
    blocks = {k: v for k, v in cfg.items() if k not in ("src_hash", *_LAUNCH_FIELDS)}
    unknown = sorted(set(blocks) - set(allowed))
    if unknown and allowed:
        raise ValueError(
            f"lookup table entry {key}: {unknown} are not arguments of {kernel_key(kernel)}; "
            f"allowed: {allowed} plus num_warps, num_stages, src_hash"
        )
    return Config(blocks, num_warps=cfg.get("num_warps", 1), num_stages=cfg.get("num_stages", 1))


def lookup(kernel) -> list[Config] | None:
    """The table's configs for this npu kernel (device-specific key first), or None."""
    table = _table()
    if not table or kernel.custom_kernel or not kernel.configs:
        return None
    for key in keys(kernel):
        entries = table.get(key)
        if not entries:
            continue
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ValueError(
                f"lookup table entry {key}: must be a list of config dicts, got {entries!r}"
            )
        found = [
            _config(kernel, key, e)
            for e in entries
            if "template_id" not in e and _fresh(kernel, key, e)
        ]
        if found:
            log.info(
                "npu kernel %s: %d config(s) from lookup table key %s",
                kernel_key(kernel),
                len(found),
                key,
            )
            return found
    return None
