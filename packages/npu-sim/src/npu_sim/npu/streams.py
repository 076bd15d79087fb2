"""Streams and events. They subclass torch.Stream / torch.Event so Dynamo can trace them;
the device guard (csrc/device.cpp) gives them ids and host-time stamps."""

from __future__ import annotations

from typing import Any

import torch

from . import budget
from .device import _index


class Stream(torch.Stream):
    def __new__(cls, device: Any = None, priority: int = 0, **kwargs):
        if (
            "stream_id" in kwargs
        ):  # wrapping an existing stream (stream_id, device_index, device_type)
            return super().__new__(cls, **kwargs)
        with torch.npu.device(device):
            idx = torch.npu.current_device()
            from .. import capture_rules

            if capture_rules.rules_on():
                budget.check("aclrtCreateStream", idx)
            stream = super().__new__(cls, device=torch.device("npu", idx), priority=priority)
        budget.add_stream(idx, stream)
        return stream

    def wait_event(self, event: "Event") -> None:
        event.wait(self)

    def wait_stream(self, stream: "Stream") -> None:
        self.wait_event(stream.record_event())

    def record_event(self, event: "Event | None" = None) -> "Event":
        event = Event() if event is None else event
        event.record(self)
        return event

    def __eq__(self, other) -> bool:
        return isinstance(other, torch.Stream) and super().__eq__(other)

    __hash__ = torch.Stream.__hash__

    def __repr__(self) -> str:
        return f"<torch.npu.Stream device={self.device} npu_stream={self.stream_id}>"


class Event(torch.Event):
    def __new__(
        cls, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ):
        return super().__new__(
            cls,
            device=torch.device("npu", torch.npu.current_device()),
            enable_timing=enable_timing,
            blocking=blocking,
            interprocess=interprocess,
        )

    def record(self, stream: Stream | None = None) -> None:
        super().record(current_stream() if stream is None else stream)
        # torch.Event.elapsed_time rejects subclasses; work is synchronous, so the host time
        # at record is the time the stream reached the event
        self._host_ms = torch.npu._host_time_ms()

    def elapsed_time(self, end_event: "Event") -> float:
        start, end = getattr(self, "_host_ms", None), getattr(end_event, "_host_ms", None)
        if start is None or end is None:
            raise RuntimeError("both events must be recorded before elapsed_time()")
        return end - start

    def wait(self, stream: Stream | None = None) -> None:
        super().wait(current_stream() if stream is None else stream)

    def __repr__(self) -> str:
        return f"<torch.npu.Event {self.event_id:#x}>"


def _wrap(s: torch.Stream) -> Stream:
    return Stream(stream_id=s.stream_id, device_index=s.device_index, device_type=s.device_type)


def current_stream(device: Any = None) -> Stream:
    return _wrap(torch.accelerator.current_stream(_index(device)))


def default_stream(device: Any = None) -> Stream:
    current = torch.accelerator.current_stream(_index(device))
    return Stream(stream_id=0, device_index=current.device_index, device_type=current.device_type)


def set_stream(stream: torch.Stream) -> None:
    if stream is not None:
        torch.accelerator.set_stream(stream)


class StreamContext:
    """`with torch.npu.stream(s):` makes s current on its device, then restores."""

    def __init__(self, stream: torch.Stream | None):
        self.stream = stream
        self.prev: torch.Stream | None = None

    def __enter__(self):
        if self.stream is None:
            return self
        self.prev = current_stream(self.stream.device_index)
        set_stream(self.stream)
        return self

    def __exit__(self, *exc):
        if self.prev is not None:
            set_stream(self.prev)
        return False


def stream(stream: torch.Stream | None) -> StreamContext:
    return StreamContext(stream)
