"""npu-inductor-core's one ``has_triton`` patch: the same function under upstream's three
bindings, True for npu graphs (and outside graph lowering, for Dynamo's user kernels: L08),
upstream's answer while a graph without npu devices is lowered."""

import types

import pytest
import torch
import torch.utils._triton as triton_utils
from torch._inductor import scheduler
from torch._inductor.runtime import autotune_cache
from torch._inductor.virtualized import V

import npu_inductor


@pytest.fixture(autouse=True)
def enabled():
    npu_inductor.enable()


def _under_graph(device_types):
    return V.set_graph_handler(types.SimpleNamespace(device_types=set(device_types)))


@pytest.mark.feature("L08")
def test_one_function_under_every_binding():
    ours = triton_utils.has_triton
    assert ours is scheduler.has_triton is autotune_cache.has_triton
    upstream = ours.__wrapped__
    assert ours.cache_clear == upstream.cache_clear  # functools.cache's, kept
    assert ours()  # Dynamo, outside graph lowering: npu is triton-capable here
    with _under_graph({"npu", "cpu"}):
        assert scheduler.has_triton() and autotune_cache.inductor_meta_from_config()["backend_hash"]
    with _under_graph({"cpu"}):
        assert scheduler.has_triton() == upstream()  # cpu/cuda graphs: upstream's answer
        assert autotune_cache.inductor_meta_from_config()["backend_hash"] == (
            torch.utils._triton.triton_hash_with_backend() if upstream() else None)
