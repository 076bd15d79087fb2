"""npu as a Triton device in upstream's ``has_triton()`` (one patch, ``_compat.has_triton_knows_npu``).

Three components need it: npu-launcher (Dynamo puts user Triton kernels on npu into graphs,
for it to launch), npu-lowering (the scheduler accepts device "npu") and npu-cache (npu
compiles get a ``backend_hash`` for the bundled autotune cache). Each used to replace its own
binding of ``has_triton``; each now asks for this one.
"""

from __future__ import annotations


def count_npu_as_triton_device() -> None:
    """Install the one ``has_triton`` patch (idempotent)."""
    from . import _compat

    _compat.has_triton_knows_npu()
