"""npu kernels launch through npu-launcher's pre-bound launch objects when it is installed
(upstream's use_static_triton_launcher / strict_static_triton_launcher flags)."""

import pytest
import torch

from npu_lowering.runtime import autotuner
from npu_lowering.runtime.autotuner import LAUNCHES


def _compile_and_run():
    torch._dynamo.reset()
    LAUNCHES.clear()
    autotuner._static_launches.clear()  # kernel objects outlive dynamo resets; bind afresh
    x = torch.randn(16, 48, device="npu")
    fn = torch.compile(lambda a: torch.softmax(a.sin(), -1) * 2)
    for _ in range(3):
        out = fn(x)
    torch.testing.assert_close(
        out.cpu(), torch.softmax(x.cpu().sin(), -1) * 2, atol=1e-5, rtol=1e-5
    )
    return [launch[-1] for launch in LAUNCHES]


@pytest.fixture
def counting_binder(monkeypatch):
    real = autotuner.static_binder()
    assert real is not None, "npu-launcher's bind_triton entry point is not installed"
    calls = []

    def binder(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(autotuner, "static_binder", lambda: binder)
    return calls


@pytest.mark.feature("L02")
def test_kernels_launch_through_pre_bound_native_launch_objects(counting_binder):
    with torch._inductor.config.patch(use_static_triton_launcher=True):
        static = _compile_and_run()
    assert static and all(static)  # every launch went through a launch object
    assert len(counting_binder) == len(
        set(map(id, counting_binder))
    )  # bound once per kernel, not per call
    launches = [launch for launch in autotuner._static_launches.values() if launch is not None]
    assert launches and all(type(l).__module__.startswith("npu_launcher") for l in launches)


def test_static_launch_off_uses_the_simulator_entry_point(counting_binder):
    with torch._inductor.config.patch(use_static_triton_launcher=False):
        static = _compile_and_run()
    assert static and not any(static) and not counting_binder


@pytest.mark.feature("L01")
def test_strict_static_launcher_raises_instead_of_falling_back(monkeypatch):
    def refuse(fn, *args, **kwargs):
        raise NotImplementedError("cannot launch this kernel statically")

    monkeypatch.setattr(autotuner, "static_binder", lambda: refuse)
    with torch._inductor.config.patch(
        use_static_triton_launcher=True, strict_static_triton_launcher=False
    ):
        assert not any(_compile_and_run())  # falls back, still correct
    with torch._inductor.config.patch(
        use_static_triton_launcher=True, strict_static_triton_launcher=True
    ):
        with pytest.raises(Exception, match="cannot be launched statically"):
            _compile_and_run()
