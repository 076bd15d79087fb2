"""npu_fusion: npu's fusion policy (see this package's README).

``register()`` (component hook, idempotent) names the ``npu_fusion`` log in torch's logging
registry. The policy itself needs no registration: npu's scheduling finds it through the entry
point ``npu_inductor.fusion: policy`` and consults it for npu nodes only, so cpu and cuda
fusion stay upstream's. This module imports nothing heavy: torch imports it when
``TORCH_LOGS`` names it.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_registered = False


def register() -> None:
    """Component hook of the ``npu_inductor.components`` entry-point group. Idempotent."""
    global _registered
    with _lock:
        if _registered:
            return
        from npu_inductor_core import graph_hooks
        from npu_inductor_core.compile_hooks import around_compile_graph

        from . import combo, gather_recompute, half_cat, log, norm_grad

        log.register()
        around_compile_graph("npu-fusion-combo", combo.graph_context)
        graph_hooks.post_grad("npu-fusion", half_cat.apply, half_cat.cache_key)
        graph_hooks.post_grad("npu-fusion-norm-grad", norm_grad.apply, norm_grad.cache_key)
        graph_hooks.joint("npu-fusion", gather_recompute.apply, gather_recompute.cache_key)
        _registered = True
