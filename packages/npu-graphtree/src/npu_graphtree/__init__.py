"""npu_graphtree: reduce-overhead graph trees for any device with graph capture (npu on
torch_npu, npu-sim, cuda). See this package's README for what it owns.

Importing needs torch only; nothing here imports another npu-inductor component.

"""

from __future__ import annotations

import threading

__version__ = "0.1.0"

_registered = False
_lock = threading.Lock()


def register() -> None:
    """Component hook of the ``npu_inductor.components`` entry-point group (idempotent).

    Registers the Dynamo backend ``"npu_graphtree"`` (AOT autograd + our trees, like
    upstream's ``"cudagraphs"`` backend) and, for ``mode="reduce-overhead"`` with Inductor,
    installs our ``CUDAGraphPolicy`` where torch has the hook (2.13), taking npu graphs only;
    cuda and cpu compiles are unchanged unless ``use_for_cuda(True)`` is called.
    """
    global _registered
    with _lock:
        if _registered:
            return
        from . import backend, policy

        backend.register_backend()
        policy.install()
        _registered = True


from ._compat import mark_step_begin  # noqa: E402  (shared with torch.compiler.cudagraph_mark_step_begin)
from .api import graphify, graphify_callable, manager_for  # noqa: E402
from . import config  # noqa: E402
from . import config as settings  # noqa: E402  (the old name of our settings)
from .logs import clear_timings, timings  # noqa: E402
from .tree import mark_warmup_incomplete, reset_trees  # noqa: E402

after = ("npu-sim",)  # a started sim makes torch.npu exist before we look for it
register.after = after
