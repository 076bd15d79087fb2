"""The capture stream as Dynamo sees it.

Dynamo passes the current stream to compiled code through its external-object registry
(index ``CURRENT_STREAM_INDEX``); during warmup and capture the current stream is the tree's
side stream, so the registry must say so, or stream-aware ops in the graph would record
events on the trace-time default stream.
"""

from __future__ import annotations

import contextlib

from . import _compat


@contextlib.contextmanager
def current_stream_as_external_object(adapter):
    setter = _compat.external_stream_setter()
    if setter is not None:
        setter(adapter.current_stream())
    yield
