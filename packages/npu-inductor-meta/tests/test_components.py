"""The plugin contract: discovery, ordering, idempotence, failures named."""

import sys
from importlib import metadata

import pytest

import npu_inductor
from npu_inductor import components

CALLS: list[str] = []
# entry points need an importable module name; under importlib import mode ours is not one
FAKES = "npu_inductor_test_fake_components"


def reg_sim():
    CALLS.append("sim")


def reg_lowering():
    CALLS.append("lowering")


reg_lowering.after = ("sim", "not-installed")


def reg_broken():
    raise RuntimeError("no device")


def reg_cycle_a():
    pass


def reg_cycle_b():
    pass


reg_cycle_a.after = ("b",)
reg_cycle_b.after = ("a",)


def _eps(**targets):
    return [
        metadata.EntryPoint(name, f"{FAKES}:{attr}", components.GROUP)
        for name, attr in targets.items()
    ]


@pytest.fixture
def fake_components(monkeypatch):
    """Replace the installed entry points; return a setter."""
    monkeypatch.setattr(components, "_enabled", None)
    monkeypatch.setitem(sys.modules, FAKES, sys.modules[__name__])
    CALLS.clear()

    def use(**targets):
        eps = _eps(**targets)
        monkeypatch.setattr(components, "_entry_points", lambda: sorted(eps, key=lambda e: e.name))

    return use


def test_enable_orders_by_after_and_is_idempotent(fake_components):
    fake_components(lowering="reg_lowering", sim="reg_sim")
    assert npu_inductor.enable() == ["sim", "lowering"]
    assert npu_inductor.enable() == ["sim", "lowering"]
    assert CALLS == ["sim", "lowering"]  # the second enable() registered nothing again
    assert npu_inductor.enabled() == ["sim", "lowering"]


def test_failing_register_names_the_component(fake_components):
    fake_components(sim="reg_sim", broken="reg_broken")
    with pytest.raises(
        npu_inductor.ComponentError, match=r"'broken' \(.*:reg_broken\).*no device"
    ) as info:
        npu_inductor.enable()
    assert info.value.component == "broken"
    assert npu_inductor.enabled() is None  # nothing marked enabled after a failure


def test_unloadable_component_is_named(fake_components):
    fake_components(ghost="does_not_exist")
    with pytest.raises(npu_inductor.ComponentError, match="'ghost'"):
        npu_inductor.enable()


def test_after_cycle_is_reported(fake_components):
    fake_components(a="reg_cycle_a", b="reg_cycle_b")
    with pytest.raises(ValueError, match="cycle"):
        npu_inductor.enable()


def test_every_package_of_the_repository_is_an_installed_component():
    names = {c.name for c in npu_inductor.discover()}
    assert {
        "npu-sim",
        "npu-lowering",
        "npu-fusion",
        "npu-autotune",
        "npu-cache",
        "npu-launcher",
        "npu-graphtree",
    } <= names
    for c in npu_inductor.discover():
        assert c.version, c
