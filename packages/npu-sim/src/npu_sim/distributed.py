"""Process group backend "hccl" for device "npu" on npu-sim.

torch_npu registers its HCCL process group as ``Backend.register_backend("hccl", ...,
devices=["npu"])``; npu-sim registers one under the same name, so distributed code written
for Ascend (``init_process_group("hccl")``, ``init_process_group(device_id=torch.device("npu",
rank))``, DDP, FSDP, functional collectives) runs here unchanged. Collectives run on gloo, over
CPU aliases of the npu tensors' host memory (``csrc/distributed.cpp``: no copies).

Registered by ``npu_sim.start()``/``autoload()`` only: npu-sim never starts where torch_npu is
installed (torch_npu's own HCCL is then the backend), and ``register()`` checks again that
npu-sim is the provider of "npu" and that no other package registered "hccl".
"""

from __future__ import annotations

import importlib.util

NAME = "hccl"  # torch_npu's backend name


def _create(dist_opts, pg_options):
    """Backend factory (torch's extended API): gloo on the group's store, wrapped for npu."""
    from torch.distributed import ProcessGroupGloo

    from ._runtime import ext

    # pg_options (torch_npu's ProcessGroupHCCL.Options: buffer sizes, HCCL config) mean nothing
    # on the host: ignored, so code written for Ascend runs unchanged
    gloo = ProcessGroupGloo(
        dist_opts.store, dist_opts.group_rank, dist_opts.group_size, dist_opts.timeout
    )
    gloo.options.global_ranks_in_group = list(dist_opts.global_ranks_in_group)
    gloo.options.group_name = dist_opts.group_id
    return ext()._HostBackend(gloo, NAME)


def _sim_provides_npu() -> bool:
    if importlib.util.find_spec("torch_npu") is not None:
        return False
    from npu_inductor_core import device

    return device.device().flavour == "sim"


def register() -> bool:
    """Register "hccl" for device "npu" (idempotent). False, registering nothing, where
    torch.distributed is unavailable, npu-sim is not the provider of "npu", or another
    package already registered "hccl"."""
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_gloo_available():
        return False
    plugin = dist.Backend._plugins.get(NAME.upper())
    if plugin is not None:
        return plugin.creator_fn is _create
    from ._runtime import ext

    if not hasattr(ext(), "_HostBackend") or not _sim_provides_npu():
        return False
    dist.Backend.register_backend(NAME, _create, extended_api=True, devices=["npu"])
    return True
