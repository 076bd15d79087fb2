"""$ASCEND_RT_VISIBLE_DEVICES (torch_npu's CUDA_VISIBLE_DEVICES): what npu-autotune's tuning
workers use to see one device each (A11)."""

import pytest

from npu_sim import config, soc


@pytest.mark.feature("A11")
def test_visible_devices_narrow_the_simulated_devices(run_python):
    proc = run_python(
        """
        import npu_sim, torch
        npu_sim.start()
        print(torch.npu.device_count(), torch.ones(1, device="npu:0").device)
    """,
        env={"NPU_SIM_DEVICE_COUNT": "4", "ASCEND_RT_VISIBLE_DEVICES": "2"},
    )
    assert proc.stdout.split() == ["1", "npu:0"]


def test_visible_devices_parsing(monkeypatch):
    with config.patch(device_count=4):  # a config key (its default is $NPU_SIM_DEVICE_COUNT)
        _check_visible_devices(monkeypatch)


def _check_visible_devices(monkeypatch):
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    assert soc.visible_devices() == [0, 1, 2, 3] and soc.device_count() == 4
    monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", "3,1")
    assert soc.visible_devices() == [3, 1] and soc.device_count() == 2
    for bad in ("4", "1,1", "x", "-1"):
        monkeypatch.setenv("ASCEND_RT_VISIBLE_DEVICES", bad)
        with pytest.raises(ValueError, match="distinct device ids from 0 to 3"):
            soc.device_count()
