"""The descriptor API other components use only through entry points (group
``npu_inductor.kernel_launcher``): npu-cache's kernel-binary cache stores
``descriptor_to_bytes`` blobs and restores them with ``descriptor_from_bytes`` +
``bind_descriptor``."""

from importlib import metadata

import pytest
import torch

from npu_launcher import DescriptorError

GROUP = "npu_inductor.kernel_launcher"


def entry(name):
    (ep,) = [ep for ep in metadata.entry_points(group=GROUP) if ep.name == name]
    return ep.load()


def test_every_public_entry_point_loads():
    names = {ep.name for ep in metadata.entry_points(group=GROUP)}
    assert {
        "bind_triton",
        "describe_triton",
        "bind_descriptor",
        "descriptor_to_bytes",
        "descriptor_from_bytes",
    } <= names
    for name in names:
        assert callable(entry(name))


def test_bytes_round_trip_and_bind_through_entry_points(fake_sim, sim_add_descriptor):
    blob = entry("descriptor_to_bytes")(sim_add_descriptor)
    assert isinstance(blob, bytes)
    restored = entry("descriptor_from_bytes")(blob)
    assert restored == sim_add_descriptor
    launch = entry("bind_descriptor")(blob)  # bytes are accepted directly
    x, y, out = torch.randn(64), torch.randn(64), torch.zeros(64)
    launch(1, 1, 1, None, x, y, out, 64)
    torch.testing.assert_close(out, x + y)
    with pytest.raises(DescriptorError, match="corrupt"):
        entry("descriptor_from_bytes")(blob[:-1] + bytes([blob[-1] ^ 1]))
