"""Dynamo's device interface for npu, and Dynamo tracing npu streams/events."""

import torch
from torch._dynamo.device_interface import get_interface_for_device

from npu_sim.dynamo_interface import NpuInterface


def test_interface_is_registered_and_triton_capable():
    iface = get_interface_for_device("npu")
    assert iface is NpuInterface
    assert iface.is_triton_capable() and iface.is_available()
    assert iface.device_count() == torch.npu.device_count()
    assert iface.get_device_properties(0).multi_processor_count == 48
    assert iface.Stream is torch.npu.Stream and iface.Event is torch.npu.Event
    prev = iface.exchange_device(0)
    assert prev == 0


def test_dynamo_traces_npu_streams_and_events_passed_in():
    def fn(x, event, stream):
        event.record(stream)
        stream.wait_event(event)
        return x * 2 + 1

    x = torch.ones(3, device="npu")
    compiled = torch.compile(fn, backend="eager", fullgraph=True)  # no graph break allowed
    assert compiled(x, torch.npu.Event(), torch.npu.Stream()).cpu().tolist() == [3.0, 3.0, 3.0]
