"""The npu generators: torch_npu's seeding and RNG-state functions.

Each public function is hidden from Dynamo (``torch._disable_dynamo``, which imports Dynamo
only when first called), as Dynamo's trace rules skip torch.cuda's: a compiled function that
seeds or sets the RNG state breaks the graph there instead of tracing into generator state
code, which fails on fake tensors (OpInfo's random ops: "you set no_dispatch() before
calling into this function").
"""

from __future__ import annotations

from typing import Any

import torch

from .._runtime import ext
from .device import _index, device_count


def _default(device: Any = None) -> torch.Generator:
    return ext()._default_generator(_index(device if device != "npu" else None))


@torch._disable_dynamo
def manual_seed(seed: int) -> None:
    _default().manual_seed(int(seed))


@torch._disable_dynamo
def manual_seed_all(seed: int) -> None:
    for i in range(device_count()):
        _default(i).manual_seed(int(seed))


@torch._disable_dynamo
def seed() -> None:
    _default().seed()


@torch._disable_dynamo
def seed_all() -> None:
    for i in range(device_count()):
        _default(i).seed()


@torch._disable_dynamo
def initial_seed() -> int:
    return _default().initial_seed()


@torch._disable_dynamo
def get_rng_state(device: Any = "npu") -> torch.Tensor:
    return _default(device).get_state()


@torch._disable_dynamo
def set_rng_state(new_state: torch.Tensor, device: Any = "npu") -> None:
    _default(device).set_state(new_state.cpu() if new_state.device.type != "cpu" else new_state)


@torch._disable_dynamo
def get_rng_state_all() -> list[torch.Tensor]:
    return [get_rng_state(i) for i in range(device_count())]


@torch._disable_dynamo
def set_rng_state_all(new_states) -> None:
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


class _DefaultGenerators:
    """torch.npu.default_generators[i], created lazily once the device is up."""

    def __getitem__(self, i: int) -> torch.Generator:
        return _default(i)

    def __len__(self) -> int:
        return device_count()

    def __iter__(self):
        return (_default(i) for i in range(device_count()))


default_generators = _DefaultGenerators()
