"""Shape padding of npu GEMMs with upstream's autoheuristic (pad_mm.py): A04
``autoheuristic_collect.pad_mm`` writes upstream's training log from npu timings, A05 at
``autoheuristic_log_path``, A07 ``autoheuristic_use.pad_mm`` lets a learned heuristic decide."""

from collections import defaultdict

import pytest
import torch
from torch._inductor import config
from torch._inductor.utils import run_and_get_code

from npu_autotune import _compat, pad_mm

needs_autoheuristic = pytest.mark.skipif(
    not _compat.autoheuristic_builds(),
    reason="this torch (2.11) builds upstream's AutoHeuristic only with a CUDA device "
    "(test_without_an_autoheuristic_the_padding_is_timed covers it)",
)


def _compile_mm(**flags):
    """130 x 130 x 130 fp32 (not a multiple of the 8-element fp32 fractal; compute bound
    enough to be considered): (padded?, result checked against eager)."""
    torch.manual_seed(0)
    a, b = torch.randn(130, 130, device="npu"), torch.randn(130, 130, device="npu")
    torch._dynamo.reset()
    with config.patch(flags):
        out, code = run_and_get_code(torch.compile(lambda x, y: x @ y), a, b)
    torch.testing.assert_close(out.cpu(), a.cpu() @ b.cpu(), rtol=1e-4, atol=1e-4)
    return "aten.constant_pad_nd" in code[0]


def _pad_mm_flag(kind: str, on: bool) -> dict:
    """The flag naming pad_mm in upstream's ``autoheuristic_<kind>`` (collect, use): torch 2.13
    has one flag per heuristic (``autoheuristic_<kind>.pad_mm``); torch 2.11 only: a string of
    comma-separated names (``config.collect_autoheuristic``/``use_autoheuristic`` split it)."""
    name = f"autoheuristic_{kind}"
    if isinstance(getattr(config, name), str):  # torch 2.11 only
        return {name: "pad_mm" if on else ""}
    return {f"{name}.pad_mm": on}


@pytest.fixture
def timings(monkeypatch):
    """Each npu timing of the pass: (call number) -> ms; orig runs first, then pad."""
    calls = []

    def fake(fn):
        fn()
        calls.append(fn)
        return 1.0 if len(calls) % 2 else 5.0  # the unpadded mm is faster

    monkeypatch.setattr(pad_mm, "_do_bench", fake)
    return calls


@pytest.mark.feature("A04", "A05")
@needs_autoheuristic
def test_collect_writes_the_pad_mm_log_from_npu_timings(fresh, tmp_path, timings):
    log = tmp_path / "ah" / "pad_mm.txt"
    log.parent.mkdir()
    assert not _compile_mm(**{"autoheuristic_log_path": str(log)})  # timed, not padded...
    assert not log.exists()  # ...and nothing collected
    timings.clear()
    assert not _compile_mm(**_pad_mm_flag("collect", True), autoheuristic_log_path=str(log))
    text = log.read_text()
    assert '"name": "pad_mm"' in text and len(timings) == 2
    rows = [r.split(",") for r in text.splitlines()[2:]]
    # one row per variant with the shape, the padding, the choice and its npu time
    assert sorted(r[-2] for r in rows) == ["orig", "pad"]
    assert all(r[:3] == ["130", "130", "130"] and r[7:10] == ["6", "6", "6"] for r in rows)
    assert {float(r[-1]) for r in rows} == {1.0, 5.0}


@pytest.mark.feature("A07")
@needs_autoheuristic
@pytest.mark.parametrize("decision", ["pad", "orig"])
def test_use_lets_a_learned_heuristic_decide_npu_padding(fresh, monkeypatch, timings, decision):
    # upstream ships learned pad_mm heuristics only for an A100 and an H100; one learned from
    # npu data (collected as above) decides in their place: here a stand-in for it
    from torch._inductor.autoheuristic.learned_heuristic_controller import (
        LearnedHeuristicController,
    )

    class Learned:
        def check_precondition(self, metadata, context):
            return context.get_value("m") == 130

        def get_decision(self, context, choices):
            return decision

    monkeypatch.setattr(
        LearnedHeuristicController,
        "existing_heuristics",
        defaultdict(list, {"pad_mm": [Learned()]}),
    )
    monkeypatch.setattr(LearnedHeuristicController, "heuristics_initialized", True)
    padded = _compile_mm(**_pad_mm_flag("use", True))
    assert padded == (decision == "pad") and timings == []  # decided without timing
    # without "use", the timings decide (the unpadded mm is faster here): not padded
    assert not _compile_mm(**_pad_mm_flag("use", False)) and len(timings) == 2


@pytest.mark.skipif(
    _compat.autoheuristic_builds(), reason="this torch builds upstream's AutoHeuristic"
)
def test_without_an_autoheuristic_the_padding_is_timed(fresh, monkeypatch, tmp_path, timings):
    # torch 2.11 only, without a CUDA device: collect/use "pad_mm" warn once, the timings decide
    monkeypatch.delattr(pad_mm._autoheuristic_usable, "warned", raising=False)
    log = tmp_path / "pad_mm.txt"
    with pytest.warns(UserWarning, match="needs a CUDA device"):
        assert not _compile_mm(**_pad_mm_flag("collect", True), autoheuristic_log_path=str(log))
    assert len(timings) == 2 and not log.exists()


@pytest.mark.feature("A07")
def test_padding_is_npus_and_upstream_flags_rule_it(fresh, timings):
    assert pad_mm.alignment(torch.float32) == 8 and pad_mm.alignment(torch.float16) == 16
    assert _compile_mm(force_shape_pad=True) and timings == []  # padded, nothing timed
    assert not _compile_mm(shape_padding=False, force_shape_pad=True)
