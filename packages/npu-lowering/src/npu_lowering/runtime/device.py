"""Device helpers for generated wrapper code."""

from __future__ import annotations

import torch


def get_raw_stream(device_index: int) -> int:
    """The native stream handle kernels launch on: torch_npu's aclrtStream, or npu-sim's
    stream id (the simulator runs work synchronously, so the id only identifies it)."""
    stream = torch.npu.current_stream(device_index)
    return int(getattr(stream, "npu_stream", stream.stream_id))
