"""The Ascend check fails its run on any config whose UB estimate is below bishengir's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

CHECK = Path(__file__).resolve().parents[1] / "ascend_check" / "check.py"


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location("npu_lowering_ascend_check_for_test", CHECK)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    try:
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.modules.pop(spec.name, None)


def _result(ours_910b: int, theirs: int, required: bool = False):
    key = "ub_required_bytes" if required else "ub_bytes"
    cfg = SimpleNamespace(index=0, kwargs={"XBLOCK": 64}, ub_body={"910B": ours_910b, "950": 4096},
                          targets={"910B2": {key: theirs}, "950": {"ub_bytes": 2048}})
    return SimpleNamespace(name="npu_kernel_x", path="/k.py", configs=[cfg])


@pytest.mark.feature("X07")
def test_a_config_estimated_below_bishengir_is_named(check):
    targets = [SimpleNamespace(name="910B2"), SimpleNamespace(name="950")]
    assert check.ub_below([_result(9000, 8000)], targets) == []
    below = check.ub_below([_result(7000, 8000)], targets)
    assert below == ["npu_kernel_x cfg0 {'XBLOCK': 64} [910B2]: ours 7000 < bishengir 8000 (/k.py)"]
    # an overflow's requirement counts as bishengir's figure too
    assert check.ub_below([_result(7000, 8000, required=True)], targets)
