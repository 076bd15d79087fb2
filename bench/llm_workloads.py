"""The LLM fusion workloads Ascend users hand-write kernels for (issue 38), as plain PyTorch.

Each workload is a function of tensors plus a maker of its inputs at a token count and dtype
(Llama-like shapes by default: hidden 4096, head dim 128, 32 query / 8 KV heads, MLP width
11008). ``bench/fusion.py --llm`` compiles them and counts kernels and GM bytes; the tests of
catalogue rows X11-X14 run them at tiny shapes against eager.

- ``add_rms_norm``: residual add + RMSNorm (the sum is also returned: the next layer's residual)
- ``add_rms_norm_quant``: the same + dynamic per-token int8 quantization (scale = amax / 127)
- ``qk_norm_rope``: RMSNorm of Q and K per head + rotary embedding (cos/sin gathered by position)
- ``split_qkv_norm_rope``: the fused QKV projection's output split, then as above (V untouched)
- ``swiglu_quant``: silu(gate) * up + dynamic per-token int8 quantization
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

EPS = 1e-6


@dataclass(frozen=True)
class Shapes:
    hidden: int = 4096
    head_dim: int = 128
    q_heads: int = 32
    kv_heads: int = 8
    mlp: int = 11008
    max_positions: int = 4096


TINY = Shapes(hidden=64, head_dim=16, q_heads=4, kv_heads=2, mlp=96, max_positions=64)


def rms_norm(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """In float32, as vLLM's and Hugging Face's reference RMSNorm compute it."""
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()


def quant_per_token(y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Dynamic symmetric int8: one scale per row (amax / 127), round to nearest, clamp."""
    scale = y.abs().amax(-1, keepdim=True).clamp(min=1e-10) / 127.0
    q = torch.clamp(torch.round(y / scale), -128, 127).to(torch.int8)
    return q, scale


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Neox-style rotary embedding of x [tokens, heads, head_dim] (float32); cos/sin [tokens, head_dim/2]."""
    x1, x2 = x.chunk(2, -1)
    c, s = cos[:, None, :], sin[:, None, :]
    return torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), -1)


def add_rms_norm(x, residual, w):
    h = x + residual
    return rms_norm(h, w).to(x.dtype), h


def add_rms_norm_quant(x, residual, w):
    h = x + residual
    q, scale = quant_per_token(rms_norm(h, w))
    return q, scale, h


def qk_norm_rope(q, k, wq, wk, cos_sin_cache, positions):
    cos, sin = cos_sin_cache[positions].float().chunk(2, -1)
    return rope(rms_norm(q, wq), cos, sin).to(q.dtype), rope(rms_norm(k, wk), cos, sin).to(k.dtype)


def split_qkv_norm_rope(qkv, wq, wk, cos_sin_cache, positions, q_heads: int, kv_heads: int):
    tokens, width = qkv.shape
    head_dim = width // (q_heads + 2 * kv_heads)
    q, k, v = qkv.split([q_heads * head_dim, kv_heads * head_dim, kv_heads * head_dim], -1)
    q, k = qk_norm_rope(
        q.view(tokens, q_heads, head_dim),
        k.view(tokens, kv_heads, head_dim),
        wq,
        wk,
        cos_sin_cache,
        positions,
    )
    return q, k, v.view(tokens, kv_heads, head_dim)


def swiglu_quant(gate_up):
    gate, up = gate_up.float().chunk(2, -1)
    return quant_per_token(torch.nn.functional.silu(gate) * up)


@dataclass(frozen=True)
class Workload:
    name: str
    fn: Callable
    inputs: Callable[
        [int, torch.dtype, str, Shapes], tuple
    ]  # (tokens, dtype, device, shapes) -> args
    gather: tuple[int, int] | None = (
        None  # (index of a table, index of the positions it is read at)
    )
    trains: bool = False  # has a training direction (no int8 rounding on the way)


def _rows(tokens, dtype, device, s):
    g = torch.Generator().manual_seed(0)
    x, res = (
        torch.randn(tokens, s.hidden, generator=g).to(device=device, dtype=dtype) for _ in range(2)
    )
    return x, res, (1 + 0.1 * torch.randn(s.hidden, generator=g)).to(device=device, dtype=dtype)


def _heads(tokens, dtype, device, s):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(tokens, s.q_heads, s.head_dim, generator=g).to(device=device, dtype=dtype)
    k = torch.randn(tokens, s.kv_heads, s.head_dim, generator=g).to(device=device, dtype=dtype)
    return (q, k, *_norm_and_positions(tokens, dtype, device, s, g))


def _norm_and_positions(tokens, dtype, device, s, g):
    wq, wk = (
        (1 + 0.1 * torch.randn(s.head_dim, generator=g)).to(device=device, dtype=dtype)
        for _ in range(2)
    )
    angles = torch.arange(s.max_positions)[:, None] * (
        10000.0 ** (-torch.arange(0, s.head_dim, 2) / s.head_dim)
    )
    cache = torch.cat((angles.cos(), angles.sin()), -1).to(device=device, dtype=dtype)
    positions = torch.randint(0, s.max_positions, (tokens,), generator=g).to(device)
    return wq, wk, cache, positions


def _qkv(tokens, dtype, device, s):
    g = torch.Generator().manual_seed(0)
    width = (s.q_heads + 2 * s.kv_heads) * s.head_dim
    qkv = torch.randn(tokens, width, generator=g).to(device=device, dtype=dtype)
    return (qkv, *_norm_and_positions(tokens, dtype, device, s, g), s.q_heads, s.kv_heads)


def _gate_up(tokens, dtype, device, s):
    g = torch.Generator().manual_seed(0)
    return (torch.randn(tokens, 2 * s.mlp, generator=g).to(device=device, dtype=dtype),)


WORKLOADS = (
    Workload("add_rms_norm", add_rms_norm, _rows, trains=True),
    Workload("add_rms_norm_quant", add_rms_norm_quant, _rows),
    Workload("qk_norm_rope", qk_norm_rope, _heads, gather=(4, 5), trains=True),
    Workload("split_qkv_norm_rope", split_qkv_norm_rope, _qkv, gather=(3, 4), trains=True),
    Workload("swiglu_quant", swiglu_quant, _gate_up),
)


def cases(tokens: list[int], dtypes: list[str], only: str | None = None):
    """(workload, dtype name, tokens, inputs) for each workload (``only``: comma-separated
    substrings of the names to keep), dtype and token count, at the default shapes on npu."""
    for w in WORKLOADS:
        if only and not any(k.strip() in w.name for k in only.split(",")):
            continue
        for dtype in dtypes:
            for t in tokens:
                yield w, dtype, t, w.inputs(t, getattr(torch, dtype), "npu", Shapes())


def trainable(w: Workload, args: tuple) -> tuple:
    """``args`` with the floating inputs a training step differentiates requiring grad (not a
    gathered table: the cos/sin cache is a buffer)."""
    table = w.gather[0] if w.gather else None
    return tuple(
        a.detach().requires_grad_()
        if isinstance(a, torch.Tensor) and a.is_floating_point() and i != table
        else a
        for i, a in enumerate(args)
    )


def minimum_gm_bytes(args: tuple, outputs, gather: tuple[int, int] | None = None) -> int:
    """Each input tensor read once (a table read at positions: those rows only) and each output
    written once (an output that is a view of an input: nothing)."""
    ins = [a for a in args if isinstance(a, torch.Tensor)]
    outs = [
        o
        for o in (outputs if isinstance(outputs, (tuple, list)) else (outputs,))
        if isinstance(o, torch.Tensor)
    ]

    def nbytes(t):
        return t.numel() * t.element_size()

    read = sum(nbytes(a) for a in ins)
    if gather is not None:
        table, positions = args[gather[0]], args[gather[1]]
        read += nbytes(table[0]) * positions.unique().numel() - nbytes(table)
    storages = {a.untyped_storage().data_ptr() for a in ins}
    return read + sum(nbytes(o) for o in outs if o.untyped_storage().data_ptr() not in storages)
