"""What an Ascend NPU captures: the capturable set (``capturable_ops.tsv``, the one place to
update) and the device's budgets, for npu-sim's capture (csrc/capture.cpp) and for whoever
asks the device what it refuses (npu-graphtree partitions compiled graphs around those ops,
finding this module through ``torch.npu``'s package, as it finds the private-pool functions).
"""

from __future__ import annotations

import functools
from importlib import resources

from . import config

# CANN's error for a device out of streams (rt_error_codes.h; torch_npu's NPUErrorCodes.h text)
NO_STREAM_RESOURCE = (
    "NPU function error: {call}, error code is 207008 (ACL_ERROR_RT_NO_STREAM_RESOURCE: no stream resource)"
    "\n[ERROR] ERR00100 PTA call acl api failed"
    "\n[Error]: Stream resources are insufficient. Check whether the number of streams meets the requirements "
    "by referring to the description of the acl.rt.create_stream interface."
    "\nnpu-sim: device npu:{device} holds {graphs} live captured graph(s) and {streams} stream(s) of its "
    "{budget} (each live captured graph holds a stream; npu_sim.config.max_streams_per_device); "
    "reset graphs you no longer replay."
)


@functools.cache
def table() -> dict[str, str]:
    """aten op (overload packet, ``aten::add``) -> where its capturability comes from."""
    text = resources.files(__package__).joinpath("capturable_ops.tsv").read_text()
    out = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            op, _, source = line.partition("\t")
            out[op.strip()] = source.strip()
    return out


def capturable_ops() -> frozenset[str]:
    return frozenset(table())


def packet(op_name: str) -> str:
    """``aten::add.Tensor`` / ``aten.add.Tensor`` -> ``aten::add``; in-place ``aten::add_`` stays."""
    name = op_name.replace(".", "::", 1) if "::" not in op_name else op_name
    return name.split(".", 1)[0]


def is_capturable(op_name: str) -> bool:
    """Whether the device captures this op (an in-place or out= variant is its op's)."""
    p = packet(op_name)
    ops = table()
    return p in ops or (p.endswith("_") and p[:-1] in ops)


def uncapturable_reason(op_name: str) -> str | None:
    """Why a capture of this op fails on the device, or None when it captures. With the rules off
    npu-sim records anything, but an NPU still refuses these: the answer does not change."""
    if is_capturable(op_name):
        return None
    return (
        f"{packet(op_name)} is not capturable on an Ascend NPU (not an aclnn operator on torch_npu's "
        "graph_supported_apis list: 'Cannot run aclop operators during NPU graph capture')"
    )


def rules_on() -> bool:
    return config.rules_on()


def install(ext) -> None:
    """Hand the capturable set to the device (at start)."""
    ext._set_capturable_ops(sorted(table()))


def graph_budget() -> int:
    """Captured graphs a graph tree should keep alive on one device: vllm-ascend's share of the
    device's streams (MAX_CAPTURE_SIZE = 1800 of 2048: 248 kept for communication and other
    streams), of npu-sim's stream budget."""
    return max(1, config.stream_budget() * 1800 // 2048)
