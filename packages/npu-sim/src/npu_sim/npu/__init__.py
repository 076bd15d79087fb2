"""torch.npu on npu-sim: the subset of torch_npu's Python API our packages use, with
torch_npu 2.13's names and signatures."""

from .device import (
    can_device_access_peer,
    current_device,
    device,
    device_count,
    device_of,
    get_device_capability,
    get_device_name,
    get_device_properties,
    get_soc_version,
    init,
    is_available,
    is_initialized,
    set_device,
    synchronize,
)
from .graphs import NPUGraph, graph, graph_pool_handle, is_current_stream_capturing
from .memory import (
    empty_cache,
    max_memory_allocated,
    max_memory_cached,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_cached,
    memory_reserved,
    memory_stats,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
)
from .random import (
    default_generators,
    get_rng_state,
    get_rng_state_all,
    initial_seed,
    manual_seed,
    manual_seed_all,
    seed,
    seed_all,
    set_rng_state,
    set_rng_state_all,
)
from .streams import (
    Event,
    Stream,
    StreamContext,
    current_stream,
    default_stream,
    set_stream,
    stream,
)


def is_bf16_supported(including_emulation: bool = True) -> bool:
    return True


def get_amp_supported_dtype() -> list:
    """The dtypes torch.autocast("npu") accepts (torch_npu's list); autocast requires this."""
    import torch

    return [torch.float16, torch.bfloat16]


def _lazy_init() -> None:
    pass  # the device is up once this module is reachable as torch.npu


def _host_time_ms() -> float:
    from .._runtime import ext

    return ext()._host_time_ms()


def _is_in_bad_fork() -> bool:
    return False  # host memory survives fork; torch.manual_seed() also seeds npu through this
