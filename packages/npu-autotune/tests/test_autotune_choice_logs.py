"""What max-autotune tells a user about a GEMM's choices on npu: the AUTOTUNE table on stderr
(A12, how many choices it lists) and the choice statistics in the compile's trace events (A44)."""

import json

import pytest
import torch
from torch._dynamo.utils import ChromiumEventLogger
from torch._inductor import config


def _autotune_mm(n: int, **flags) -> None:
    """Autotune a 32 x 32 x n GEMM (a new n each time: results of a shape are remembered)."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    a, b = torch.randn(32, 32, device="npu"), torch.randn(32, n, device="npu")
    with config.patch(
        max_autotune_gemm=True,
        max_autotune_gemm_backends="ATEN,TRITON",
        **{"test_configs.max_mm_configs": 3},
        **flags,
    ):
        out = torch.compile(lambda x, y: x @ y)(a, b)
    torch.testing.assert_close(out.cpu(), a.cpu() @ b.cpu(), rtol=1e-4, atol=1e-4)


def _table_rows(err: str) -> list[str]:
    """The choice lines of the AUTOTUNE table ("  <name> <ms> ms <pct> ...")."""
    assert "AUTOTUNE mm(" in err, err[-3000:]
    table = err.split("AUTOTUNE mm(", 1)[1].split("AUTOTUNE benchmarking", 1)[0]
    return [line for line in table.splitlines() if line.startswith("  ") and " ms " in line]


@pytest.mark.feature("A12")
def test_the_autotune_table_lists_as_many_choices_as_asked(fresh, capfd):
    _autotune_mm(32, autotune_num_choices_displayed=None)
    every = _table_rows(capfd.readouterr().err)
    _autotune_mm(48, autotune_num_choices_displayed=1)
    one = _table_rows(capfd.readouterr().err)
    assert len(every) >= 3 and len(one) == 1
    assert any(r.split()[0].startswith("triton_") for r in every)  # npu's templates are in it


@pytest.mark.feature("A44")
def test_choice_statistics_reach_the_trace_events(fresh, monkeypatch):
    seen = []
    real = ChromiumEventLogger.add_event_data

    def spy(self, event_name, **kwargs):
        if "autotune_choices_stats" in kwargs:
            seen.append(json.loads(kwargs["autotune_choices_stats"]))
        return real(self, event_name, **kwargs)

    monkeypatch.setattr(ChromiumEventLogger, "add_event_data", spy)
    _autotune_mm(64, max_autotune_report_choices_stats=False)
    assert seen == []
    _autotune_mm(80, max_autotune_report_choices_stats=True)
    assert seen, "no autotune choice statistics were reported"
    stats = seen[-1]
    # the npu templates count as Triton choices, and the best one is named
    assert stats["num_choices"] >= 3 and stats["num_triton_choices"] >= 2 and stats["best_kernel"]
