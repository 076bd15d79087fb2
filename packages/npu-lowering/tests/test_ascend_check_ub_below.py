"""The Ascend check fails its run on any config whose UB estimate is below bishengir's."""

from __future__ import annotations

from types import SimpleNamespace

import pytest


@pytest.fixture(scope="module")
def check(ascend_check):
    return ascend_check


def _result(ours_910b: int, theirs: int, required: bool = False):
    key = "ub_required_bytes" if required else "ub_bytes"
    cfg = SimpleNamespace(
        index=0,
        kwargs={"XBLOCK": 64},
        ub_body={"910B": ours_910b, "950": 4096},
        targets={"910B2": {key: theirs}, "950": {"ub_bytes": 2048}},
    )
    return SimpleNamespace(name="npu_kernel_x", path="/k.py", configs=[cfg])


@pytest.mark.feature("X07")
def test_a_config_estimated_below_bishengir_is_named(check):
    targets = [SimpleNamespace(name="910B2"), SimpleNamespace(name="950")]
    assert check.ub_below([_result(9000, 8000)], targets) == []
    below = check.ub_below([_result(7000, 8000)], targets)
    assert below == ["npu_kernel_x cfg0 {'XBLOCK': 64} [910B2]: ours 7000 < bishengir 8000 (/k.py)"]
    # an overflow's requirement counts as bishengir's figure too
    assert check.ub_below([_result(7000, 8000, required=True)], targets)
