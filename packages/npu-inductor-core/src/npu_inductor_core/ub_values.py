"""The values and buffer rules both front ends of the UB model share: the source reader
(``ub_profile``) and the codegen record's converter (``ub_codegen``). A value is a tile
shape over Inductor's axes, its element bytes, its kind and its buffer class
(ub_model.CLASSES); the rules say which extra buffers an operation or an access needs."""

from __future__ import annotations

from .ub_names import I64_TEMPS

ALIGN = 32  # bytes: Ascend's UB block; a buffer's innermost dimension is padded to it


Shape = tuple  # of axis names ("X", "R0", ...) or None for a size-1 dimension


class _Val:
    __slots__ = ("shape", "nbytes", "kind", "cls")

    def __init__(self, shape: Shape = (), nbytes: int = 4, kind: str = "f", cls: str = "v"):
        # kind: "f" float, "i" integer, "b" bool (i1); cls: the buffer class (CLASSES)
        self.shape, self.nbytes, self.kind, self.cls = tuple(shape), nbytes, kind, cls

    @property
    def is_tile(self) -> bool:
        return bool(self.shape)

    def like(self, shape=None, nbytes=None, kind=None, cls: str = "v") -> "_Val":
        return _Val(
            self.shape if shape is None else shape,
            nbytes or self.nbytes,
            kind or self.kind,
            cls=cls,
        )

    def key(self) -> str:
        dims = ",".join(d or "1" for d in self.shape)
        return f"{self.cls}|{dims}:{self.nbytes}{'b' if self.kind == 'b' else ''}"


_SCALAR = _Val((), 4)


def _kind_of(dtype: str | None) -> str:
    if dtype in ("int1", "i1"):
        return "b"
    return "i" if dtype and (dtype.startswith(("int", "uint", "i", "u"))) else "f"


def _broadcast(*shapes: Shape) -> Shape:
    shapes = [s for s in shapes if s]
    if not shapes:
        return ()
    rank = max(len(s) for s in shapes)
    out = [None] * rank
    for s in shapes:
        for i, d in enumerate(((None,) * (rank - len(s))) + tuple(s)):
            out[i] = out[i] or d
    return tuple(out)


_SCRATCH = ("s|#1024:4", "s|#1024:1", "s|#512:4")  # a cast down to a narrow integer: fixed scratch


def emulation(v: _Val, op: str | None, temps: list) -> None:
    """Integer arithmetic the vector unit does not have: 8/16-bit integers are computed in
    float32 (via float16) and cast back through a fixed scratch; 64-bit multiply, division and
    remainder (``op``: mul, truediv, floordiv, mod) are emulated with several temporaries."""
    if not v.is_tile or v.kind != "i":
        return
    if v.nbytes < 4:
        temps.extend(
            [
                v.like(nbytes=2, cls="e"),
                v.like(nbytes=4, cls="e"),
                v.like(nbytes=4, cls="e"),
                v.like(nbytes=4, cls="e"),
            ]
        )
        temps.extend(_SCRATCH)
    elif v.nbytes == 8 and op in ("mod", "floordiv", "truediv", "mul"):
        temps.extend(v.like(cls="e") for _ in range(I64_TEMPS))


def mask_combine(v: _Val, operands, temps: list) -> None:
    """Masks combined across two dimensions (``a & b``): each operand broadcast first (as
    float16, then back to bits), one 32-byte block per element each."""
    if v.kind == "b" and all(x.kind == "b" for x in operands) and sum(1 for d in v.shape if d) >= 2:
        temps.extend(v.like(cls="m") for x in operands if x.shape != v.shape for _ in range(2))


def strided_buffer(shape: Shape, stride: float, nbytes: int, padded: dict, temps: list) -> None:
    """A tile whose innermost dimension has memory stride ``stride``: staged one element per
    32-byte block (a stride of 2 de-interleaved from the span it covers); reduced along that
    dimension (an R axis) every value keeps that layout (``padded``), otherwise the staging
    buffer is a temporary of the access."""
    inner = next((d for d in reversed(shape) if d), None)
    per = min(stride * nbytes, ALIGN) if stride == 2 else ALIGN
    key = ",".join(d or "1" for d in shape)
    if inner.startswith("R"):
        padded[key] = max(padded.get(key, 0), per)
    else:
        temps.append(f"p|{key}:{per}")
