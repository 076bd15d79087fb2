"""Device helpers for generated wrapper code.

``get_raw_stream(device_index)``: the native stream handle kernels launch on, asked once per
kernel launch, so it is one C call: torch_npu's own getter of the current aclrtStream on
Ascend (what torch_npu's Inductor imports; checked against the torch_npu wheel), and on
npu-sim the current stream's id from torch's accelerator API (the simulator runs work
synchronously, so the id only identifies the stream).
"""

from __future__ import annotations

import torch


def _sim_get_raw_stream():
    getter = getattr(torch._C, "_accelerator_getStream", None)
    if getter is None:  # a torch without the accelerator C API
        return lambda device_index: torch.npu.current_stream(device_index).stream_id
    return lambda device_index: getter(device_index).stream_id


try:
    from torch_npu._C import _npu_getCurrentRawStream as get_raw_stream
except ImportError:
    get_raw_stream = _sim_get_raw_stream()
