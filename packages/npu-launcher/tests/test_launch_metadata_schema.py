"""L03: launch fields come from Triton's versioned launch metadata schema where the Triton in
use offers one (honouring use_launch_metadata_schema), else from the legacy metadata."""

import collections

import pytest
from torch._inductor import config as inductor_config

from npu_launcher import descriptor_from_compiled


class SchemaKernel:
    """A compiled kernel of a Triton that offers the Level 0 schema and whose legacy metadata
    no longer carries the launch fields (what the schema exists to allow)."""

    def __init__(self, real, schema):
        md = real.metadata._asdict()
        for gone in ("name", "num_warps", "shared"):
            md.pop(gone)
        self.metadata = collections.namedtuple("KernelMetadata", sorted(md))(**md)
        self.src, self.asm = real.src, real.asm
        self.launch_metadata_schema = schema


@pytest.mark.feature("L03")
def test_triton_38_has_no_schema_so_legacy_metadata_is_read(cuda_add_kernel):
    assert not hasattr(cuda_add_kernel, "launch_metadata_schema")  # Triton 3.8
    d = descriptor_from_compiled(cuda_add_kernel)
    md = cuda_add_kernel.metadata
    assert d.metadata_source == "legacy"
    assert (d.name, d.num_warps, d.shared) == (md.name, md.num_warps, md.shared)


@pytest.mark.feature("L03")
def test_schema_is_read_where_offered(cuda_add_kernel):
    schema = {"version": 0, "entry_name": "add_kernel", "num_warps": 8, "shared_mem": 4096}
    d = descriptor_from_compiled(SchemaKernel(cuda_add_kernel, schema))
    assert d.metadata_source == "schema:0"
    assert (d.name, d.num_warps, d.shared) == ("add_kernel", 8, 4096)


@pytest.mark.feature("L03")
@pytest.mark.skipif(
    not hasattr(inductor_config, "use_launch_metadata_schema"),
    reason="this torch (2.11) has no use_launch_metadata_schema flag",
)
def test_use_launch_metadata_schema_off_forces_legacy(cuda_add_kernel, monkeypatch):
    k = SchemaKernel(
        cuda_add_kernel, {"entry_name": "add_kernel", "num_warps": 8, "shared_mem": 4096}
    )
    k.metadata = cuda_add_kernel.metadata  # legacy fields present again
    monkeypatch.setattr(inductor_config, "use_launch_metadata_schema", False)
    d = descriptor_from_compiled(k)
    assert d.metadata_source == "legacy" and d.num_warps == cuda_add_kernel.metadata.num_warps
