"""The reference workloads of ../shared/bench/README.md as modules, for the demo, the benches
and the tests (one definition, so a number in one README and a test elsewhere mean the same
model)."""

from __future__ import annotations

from torch import nn


class TransformerBlock(nn.Module):
    """Pre-norm transformer block: multi-head attention and a GELU MLP of 4x width."""

    def __init__(self, dim: int = 64, heads: int = 4):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class MLP8(nn.Sequential):
    """8 residual layers ``h + fc2(gelu(fc1(ln(h))))``, width 256 (the bench README's MLP8)."""

    class Layer(nn.Module):
        def __init__(self, dim: int):
            super().__init__()
            self.ln, self.fc1, self.fc2 = (
                nn.LayerNorm(dim),
                nn.Linear(dim, 4 * dim),
                nn.Linear(4 * dim, dim),
            )

        def forward(self, h):
            return h + self.fc2(nn.functional.gelu(self.fc1(self.ln(h))))

    def __init__(self, dim: int = 256, layers: int = 8):
        super().__init__(*(self.Layer(dim) for _ in range(layers)))
