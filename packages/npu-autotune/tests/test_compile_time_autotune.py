"""triton.autotune_at_compile_time (A51): npu kernels are tuned while the graph compiles."""

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor import config


@pytest.mark.feature("A51")
@pytest.mark.parametrize("at_compile_time", [True, False])
def test_autotune_at_compile_time(fresh, monkeypatch, at_compile_time):
    import torch._inductor.graph as graph

    codegen = graph.GraphLowering.codegen
    tuned_by_codegen_end = []

    def spy(self, *args, **kwargs):
        out = codegen(self, *args, **kwargs)
        tuned_by_codegen_end.append(counters["npu_autotune"]["sim_tuned"])
        return out

    monkeypatch.setattr(graph.GraphLowering, "codegen", spy)
    x = torch.randn(256, device="npu")
    with config.patch(
        {"triton.autotune_at_compile_time": at_compile_time, "max_autotune_pointwise": True}
    ):
        out = torch.compile(torch.sin)(x)
    torch.testing.assert_close(out.cpu(), torch.sin(x.cpu()))
    assert tuned_by_codegen_end == [1 if at_compile_time else 0]
    assert (
        counters["npu_autotune"]["sim_tuned"] == 1
    )  # tuned once either way (never again at run time)
