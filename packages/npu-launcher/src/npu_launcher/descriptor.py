"""Kernel descriptors: a device binary plus everything needed to launch it, in a versioned
schema that round-trips through bytes with no Triton object (and no pickle).

Wire format (version 1)::

    b"NPLKD1" | u32 little-endian header length | header (UTF-8 JSON) | binary

The header holds the schema name and version, the binary's length and SHA-256, and the
launch metadata. Version 2 added ``specialized``: the call's arguments Triton compiled into
constants (version 1 descriptors could not say, so they are refused like any other version). ``from_bytes`` refuses other magic, versions, or a binary that does not
match its hash, with ``DescriptorError``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import struct
from dataclasses import dataclass, field
from typing import Any, Mapping

from .errors import DescriptorError

SCHEMA = "npu-launcher/kernel-descriptor"
SCHEMA_VERSION = 2
MAGIC = b"NPLKD1"

# Triton scalar / pointee types the launcher passes (pointer types are "*" + one of these).
SCALAR_TYPES = (
    "i1",
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "fp16",
    "bf16",
    "fp32",
    "fp64",
)
POINTEE_TYPES = SCALAR_TYPES + ("fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16")
BINARY_FORMATS = {"cuda": "cubin", "npu": "npubin", "sim": "triton-python"}


@dataclass(frozen=True)
class Target:
    """Where the binary runs. backend: "cuda", "npu" (Ascend, triton-ascend) or "sim"
    (npu-sim's interpreter); arch: "90" for sm_90, an Ascend SoC name such as
    "Ascend910B3", or "" for any; device_type: what ``tensor.device.type`` says there."""

    backend: str
    arch: str = ""
    warp_size: int = 0
    device_type: str = ""

    def __post_init__(self):
        if not self.device_type:
            object.__setattr__(self, "device_type", {"cuda": "cuda"}.get(self.backend, "npu"))


@dataclass(frozen=True)
class ArgSpec:
    """A runtime kernel argument: name, Triton type ("*fp32", "i32", ...) and the divisibility
    the kernel was specialised for (16 = Triton's tt.divisibility; 1 = none)."""

    name: str
    type: str
    align: int = 1

    @property
    def is_pointer(self) -> bool:
        return self.type.startswith("*")


@dataclass(frozen=True)
class SpecializedArg:
    """A kernel parameter the call passes but the binary does not take, because Triton
    specialized it into a constant: an int equal to 1 or a None (Triton's JIT, and Inductor's
    ``equal_1_arg_indices``), or any other runtime parameter the compile turned into a
    constexpr. ``index`` is its position among the call's kernel arguments (after grid and
    stream); ``value`` what it was compiled with. Like Triton's own launcher the launch drops
    it; with ``checked`` it also compares the passed value with ``value`` (a static launch
    cannot switch to another specialization as Triton's JIT does; never for None, whose place
    in Inductor's call holds a dummy -1)."""

    index: int
    name: str
    value: Any = None
    checked: bool = True


@dataclass(frozen=True)
class GridRule:
    """How the launch grid follows from the arguments: three terms, each an int or
    ``("cdiv", arg_name, block)`` meaning ceil(arg / block)."""

    terms: tuple = (1, 1, 1)

    def __post_init__(self):
        terms = tuple(tuple(t) if isinstance(t, (list, tuple)) else int(t) for t in self.terms)
        if len(terms) != 3:
            raise DescriptorError(f"grid rule needs 3 terms, got {len(terms)}")
        for t in terms:
            if isinstance(t, tuple) and (len(t) != 3 or t[0] != "cdiv" or int(t[2]) <= 0):
                raise DescriptorError(f"grid term {t!r} is not an int or ('cdiv', arg, block)")
        object.__setattr__(self, "terms", terms)

    def evaluate(self, args: Mapping[str, int]) -> tuple[int, int, int]:
        out = []
        for t in self.terms:
            if isinstance(t, tuple):
                out.append(-(-int(args[t[1]]) // int(t[2])))
            else:
                out.append(t)
        return tuple(out)


@dataclass(frozen=True)
class KernelDescriptor:
    """Everything a driver needs to load and launch one compiled kernel."""

    name: str  # entry symbol in the binary (or the Python function for sim)
    target: Target
    binary_format: str  # "cubin", "npubin" or "triton-python"
    binary: bytes
    args: tuple[ArgSpec, ...]  # what the binary takes, in kernel order (constexprs excluded)
    constexprs: dict = field(default_factory=dict)
    grid: GridRule | None = None
    shared: int = 0  # shared memory (cuda) / UB bytes (npu) the kernel needs
    num_warps: int = 1
    num_ctas: int = 1
    trailing_null_params: int = 0  # Triton's scratch pointers appended to the cuda params
    extra: dict = field(default_factory=dict)  # backend details, e.g. Ascend mix_mode, ffts
    metadata_source: str = "legacy"  # "schema:<version>" or "legacy": where the fields came from
    # call arguments Triton specialized into constants; the call passes args and these,
    # interleaved by SpecializedArg.index
    specialized: tuple[SpecializedArg, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(
            self, "specialized", tuple(sorted(self.specialized, key=lambda s: s.index))
        )
        positions = [s.index for s in self.specialized]
        n = len(self.args) + len(positions)
        if len(set(positions)) != len(positions) or any(not 0 <= i < n for i in positions):
            raise DescriptorError(
                f"kernel {self.name!r}: specialized argument positions {positions} are "
                f"not distinct positions among the call's {n} arguments"
            )
        for a in self.args:
            base = a.type[1:] if a.is_pointer else a.type
            if base not in (POINTEE_TYPES if a.is_pointer else SCALAR_TYPES):
                raise DescriptorError(
                    f"kernel {self.name!r}: argument {a.name!r} has type "
                    f"{a.type!r}, which the launcher cannot pass"
                )
        expected = BINARY_FORMATS.get(self.target.backend)
        if expected != self.binary_format:
            raise DescriptorError(
                f"kernel {self.name!r}: target {self.target.backend!r} takes "
                f"{expected!r} binaries, not {self.binary_format!r}"
            )

    def call_arg_names(self) -> list[str]:
        """The call's kernel arguments, in order: ``args`` with the specialized ones in place."""
        names = [a.name for a in self.args]
        for s in self.specialized:  # ascending index: each lands where the call has it
            names.insert(s.index, s.name)
        return names

    # -- serialisation -------------------------------------------------------------------
    def header(self) -> dict:
        return {
            "schema": SCHEMA,
            "version": SCHEMA_VERSION,
            "name": self.name,
            "target": dataclasses.asdict(self.target),
            "binary_format": self.binary_format,
            "binary_len": len(self.binary),
            "binary_sha256": hashlib.sha256(self.binary).hexdigest(),
            "args": [[a.name, a.type, a.align] for a in self.args],
            "constexprs": _json_values(self.name, self.constexprs),
            "grid": None
            if self.grid is None
            else [list(t) if isinstance(t, tuple) else t for t in self.grid.terms],
            "shared": self.shared,
            "num_warps": self.num_warps,
            "num_ctas": self.num_ctas,
            "trailing_null_params": self.trailing_null_params,
            "extra": _json_values(self.name, self.extra),
            "metadata_source": self.metadata_source,
            "specialized": [
                [s.index, s.name, _json_value(self.name, s.name, s.value), bool(s.checked)]
                for s in self.specialized
            ],
        }

    def to_bytes(self) -> bytes:
        head = json.dumps(self.header(), sort_keys=True, separators=(",", ":")).encode()
        return MAGIC + struct.pack("<I", len(head)) + head + bytes(self.binary)

    @classmethod
    def from_bytes(cls, data: bytes) -> "KernelDescriptor":
        data = bytes(data)
        if len(data) < len(MAGIC) + 4 or not data.startswith(MAGIC[:5]):
            raise DescriptorError("not an npu-launcher kernel descriptor (bad magic)")
        if data[: len(MAGIC)] != MAGIC:
            raise DescriptorError(
                f"kernel descriptor wire format {data[:6]!r}; this npu-launcher reads {MAGIC!r}"
            )
        (n,) = struct.unpack_from("<I", data, len(MAGIC))
        start = len(MAGIC) + 4
        try:
            head = json.loads(data[start : start + n].decode())
        except (UnicodeDecodeError, ValueError) as e:
            raise DescriptorError(f"kernel descriptor header is not valid JSON: {e}") from None
        if not isinstance(head, dict) or head.get("schema") != SCHEMA:
            raise DescriptorError(
                f"kernel descriptor schema {head.get('schema')!r}, expected {SCHEMA!r}"
                if isinstance(head, dict)
                else "kernel descriptor header is not an object"
            )
        name = head.get("name", "?")
        if head.get("version") != SCHEMA_VERSION:
            raise DescriptorError(
                f"kernel {name!r}: descriptor schema version {head.get('version')!r}; "
                f"this npu-launcher reads version {SCHEMA_VERSION}"
            )
        binary = data[start + n :]
        if len(binary) != head.get("binary_len") or hashlib.sha256(binary).hexdigest() != head.get(
            "binary_sha256"
        ):
            raise DescriptorError(
                f"kernel {name!r}: descriptor binary is truncated or corrupt "
                "(length or SHA-256 mismatch)"
            )
        try:
            return cls(
                name=name,
                target=Target(**head["target"]),
                binary_format=head["binary_format"],
                binary=binary,
                args=tuple(ArgSpec(n_, t, int(a)) for n_, t, a in head["args"]),
                constexprs=_from_json_values(head["constexprs"]),
                grid=None if head["grid"] is None else GridRule(tuple(head["grid"])),
                shared=int(head["shared"]),
                num_warps=int(head["num_warps"]),
                num_ctas=int(head["num_ctas"]),
                trailing_null_params=int(head["trailing_null_params"]),
                extra=_from_json_values(head["extra"]),
                metadata_source=head["metadata_source"],
                specialized=tuple(
                    SpecializedArg(int(i), str(n_), _from_json_value(v), bool(c))
                    for i, n_, v, c in head["specialized"]
                ),
            )
        except (KeyError, TypeError, ValueError) as e:
            if isinstance(e, DescriptorError):
                raise
            raise DescriptorError(
                f"kernel {name!r}: descriptor header is missing or has a bad field: {e!r}"
            ) from None


def _json_value(kernel: str, k, v):
    """Constexprs, specialized values and extras must be plain JSON values: refuse anything
    else early."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else {"float": repr(v)}
    if isinstance(v, (list, tuple)) and all(isinstance(x, (bool, int, float, str)) for x in v):
        return list(v)
    raise DescriptorError(
        f"kernel {kernel!r}: value {k}={v!r} ({type(v).__name__}) cannot be stored in a descriptor"
    )


def _json_values(kernel: str, values: Mapping) -> dict:
    return {str(k): _json_value(kernel, k, v) for k, v in values.items()}


def _from_json_value(v):
    return float(v["float"]) if isinstance(v, dict) and set(v) == {"float"} else v


def _from_json_values(values: Mapping) -> dict:
    return {k: _from_json_value(v) for k, v in values.items()}
