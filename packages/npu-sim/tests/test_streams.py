"""Streams and events (subclasses of torch.Stream / torch.Event)."""

import time

import torch


def test_stream_and_event_types():
    s = torch.npu.Stream()
    assert isinstance(s, torch.Stream) and s.device == torch.device("npu", 0)
    assert isinstance(torch.npu.Event(), torch.Event)
    assert torch.npu.current_stream() == torch.npu.default_stream()
    assert s != torch.npu.current_stream()


def test_stream_context_and_set_stream():
    s1, s2 = torch.npu.Stream(), torch.npu.Stream()
    assert s1.stream_id != s2.stream_id
    default = torch.npu.current_stream()
    with torch.npu.stream(s1):
        assert torch.npu.current_stream() == s1
        with torch.npu.stream(s2):
            assert torch.npu.current_stream() == s2
        assert torch.npu.current_stream() == s1
    assert torch.npu.current_stream() == default
    torch.npu.set_stream(s2)
    try:
        assert torch.npu.current_stream() == s2
    finally:
        torch.npu.set_stream(default)


def test_event_elapsed_time_is_real_host_time():
    start, end = torch.npu.Event(enable_timing=True), torch.npu.Event(enable_timing=True)
    start.record()
    time.sleep(0.05)
    end.record()
    assert start.elapsed_time(end) >= 50.0
    assert start.query() and end.query()
    end.synchronize()
    torch.npu.current_stream().wait_event(end)
    torch.npu.Stream().wait_stream(torch.npu.current_stream())
    torch.npu.synchronize()
