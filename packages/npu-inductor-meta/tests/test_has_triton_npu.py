"""``has_triton()`` knows npu: on torch 2.13 through npu-inductor-core's one ``has_triton``
patch (the same function under upstream's three bindings, True for npu graphs and outside
graph lowering, for Dynamo's user kernels: L08; upstream's answer while a graph without npu
devices is lowered); from torch 2.14 on upstream's own has_triton() asks npu's registered
device interface, and nothing is patched."""

import types

import pytest
import torch
import torch.utils._triton as triton_utils
from torch._inductor import scheduler
from torch._inductor.runtime import autotune_cache
from torch._inductor.virtualized import V

import npu_inductor
from npu_inductor_core.torch_versions import at_least


@pytest.fixture(autouse=True)
def enabled():
    npu_inductor.enable()


def _under_graph(device_types):
    return V.set_graph_handler(types.SimpleNamespace(device_types=set(device_types)))


@pytest.mark.feature("L08")
@pytest.mark.skipif(not at_least("2.14"), reason="torch 2.13 needs the patch (next test)")
def test_upstream_has_triton_asks_the_npu_interface():
    ours = triton_utils.has_triton
    assert not getattr(ours, "_npu_core", False)  # upstream's function: nothing patched
    assert ours is scheduler.has_triton is autotune_cache.has_triton
    ours.cache_clear()
    assert ours()  # Dynamo, outside graph lowering: npu's interface is triton-capable
    with _under_graph({"npu", "cpu"}):
        assert scheduler.has_triton() and autotune_cache.inductor_meta_from_config()["backend_hash"]


@pytest.mark.feature("L08")
@pytest.mark.skipif(
    at_least("2.14"), reason="torch 2.14+: upstream's has_triton asks npu's interface (test above)"
)
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
            torch.utils._triton.triton_hash_with_backend() if upstream() else None
        )
