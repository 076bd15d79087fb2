"""What the tree reads from configuration.

Upstream names first: where the running torch has the Inductor flag
(``triton.cudagraph_trees``, ``triton.cudagraph_capture_sizes``,
``triton.cudagraph_unexpected_rerecord_limit``, ``triton.skip_cudagraph_warmup``,
``triton.force_cudagraphs_warmup``) it is read at call time, so ``torch._inductor.config.patch``
steers our trees exactly as it steers upstream's. Rows torch has no flag for (generation
cloning, replay timings) are ours, in ``settings`` below, with environment defaults.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

_UNSET = object()


def _inductor_triton():
    try:
        from torch._inductor import config as inductor_config
    except Exception:  # torch without Inductor: our defaults apply
        return None
    return inductor_config.triton


def _upstream(name: str, default):
    triton = _inductor_triton()
    value = getattr(triton, name, _UNSET) if triton is not None else _UNSET
    return default if value is _UNSET else value


def trees_enabled() -> bool:
    return bool(_upstream("cudagraph_trees", True))


def capture_sizes():
    """None (capture every size) or the allowlist of dynamic int keys."""
    return _upstream("cudagraph_capture_sizes", None)


def rerecord_limit() -> int:
    return int(_upstream("cudagraph_unexpected_rerecord_limit", 128))


def skip_warmup() -> bool:
    return bool(_upstream("skip_cudagraph_warmup", False))


def force_warmup() -> bool:
    return bool(_upstream("force_cudagraphs_warmup", False))


GENERATION_CLONING = ("none", "user_visible")


@dataclass
class Settings:
    """Our own knobs (torch has no flag for these)."""

    # "user_visible": outputs the user still holds when a new generation begins are cloned
    # out of the pool instead of being invalidated (named after the catalogue's
    # triton.cudagraph_trees_generation_cloning, which torch 2.11/2.13 do not have)
    cudagraph_trees_generation_cloning: str = field(
        default_factory=lambda: os.environ.get("NPU_GRAPHTREE_GENERATION_CLONING", "none"))
    # time every replay too (warmup and record are always timed); costs ~1 us per call
    time_replays: bool = field(default_factory=lambda: os.environ.get("NPU_GRAPHTREE_TIME_REPLAYS") == "1")
    # check the pool's live blocks against our bookkeeping after each checkpoint restore
    slow_asserts: bool = field(default_factory=lambda: os.environ.get("NPU_GRAPHTREE_SLOW_ASSERTS") == "1")

    def generation_cloning(self) -> str:
        value = self.cudagraph_trees_generation_cloning
        if value not in GENERATION_CLONING:
            raise ValueError(f"cudagraph_trees_generation_cloning must be one of {GENERATION_CLONING}, got {value!r}")
        return value


settings = Settings()
