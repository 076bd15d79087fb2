"""Device "npu": properties, SoC choice, device count, refusal to start."""

import pytest
import torch

import npu_sim
from npu_sim import soc


def test_npu_is_a_device_with_real_host_memory():
    x = torch.arange(6, dtype=torch.float32, device="npu")
    assert x.device == torch.device("npu", 0) and x.is_npu
    assert torch.npu.is_available() and torch.npu.device_count() >= 1
    # data_ptr() is a real address: a CPU tensor built on it sees the values
    import ctypes

    raw = (ctypes.c_float * 6).from_address(x.data_ptr())
    assert list(raw) == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_default_soc_properties():
    props = torch.npu.get_device_properties(0)
    assert props.name == "Ascend910B2" == torch.npu.get_device_name()
    assert (props.vector_core_num, props.cube_core_num, props.ub_size) == (48, 24, 192 * 1024)
    assert props.L2_cache_size > 0 and props.total_memory > 0
    assert torch.npu.get_soc_version() == 221
    with pytest.raises(AssertionError, match="Invalid device id"):
        torch.npu.get_device_properties(torch.npu.device_count())


def test_soc_and_device_count_come_from_the_environment(run_python):
    proc = run_python(
        """
        import npu_sim, torch
        npu_sim.start()
        p = torch.npu.get_device_properties(1)
        print(torch.npu.device_count(), p.name, p.vector_core_num, p.ub_size)
    """,
        env={"NPU_SIM_SOC": "Ascend950", "NPU_SIM_DEVICE_COUNT": "2"},
    )
    assert proc.stdout.split() == ["2", "Ascend950", "64", str(256 * 1024)]
    bad = run_python("import npu_sim; npu_sim.start()", env={"NPU_SIM_SOC": "Ascend123"}, ok=False)
    assert bad.returncode != 0 and "not a known SoC" in bad.stderr
    bad = run_python("import npu_sim; npu_sim.start()", env={"NPU_SIM_DEVICE_COUNT": "0"}, ok=False)
    assert "expected an integer from 1 to 16" in bad.stderr


def test_two_devices_copies_guard_and_mixing(run_python):
    run_python(
        """
        import npu_sim, torch
        npu_sim.start()
        a = torch.arange(4.0, device="npu:0")
        b = a.to("npu:1")
        assert b.device == torch.device("npu", 1) and torch.equal(b.cpu(), a.cpu())
        assert b.data_ptr() != a.data_ptr()
        with torch.npu.device(1):
            c = torch.ones(2, device="npu")
            assert c.device.index == 1 and torch.npu.current_device() == 1
        assert torch.npu.current_device() == 0
        assert (b + 1).device.index == 1
        assert torch.npu.memory_allocated(1) > 0
        try:
            a + b
        except RuntimeError as e:
            assert "same device" in str(e), e
        else:
            raise AssertionError("mixing npu:0 and npu:1 must raise")
    """,
        env={"NPU_SIM_DEVICE_COUNT": "2"},
    )


def test_start_is_idempotent():
    npu_sim.start()
    npu_sim.start()
    assert npu_sim.is_started() and torch._C._get_privateuse1_backend_name() == "npu"


def test_refuses_when_torch_npu_is_installed(run_python, tmp_path):
    (tmp_path / "torch_npu").mkdir()
    (tmp_path / "torch_npu" / "__init__.py").write_text(
        "raise ImportError('must never be imported')\n"
    )
    proc = run_python(
        "import npu_sim; npu_sim.start()", env={"PYTHONPATH": str(tmp_path)}, ok=False
    )
    assert "torch_npu is installed" in proc.stderr and "must never be imported" not in proc.stderr


def test_refuses_when_privateuse1_is_taken(run_python):
    proc = run_python(
        """
        import torch
        torch.utils.rename_privateuse1_backend("foo")
        import npu_sim
        npu_sim.start()
    """,
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
        ok=False,
    )  # autoload would take PrivateUse1 first
    assert "already registered as 'foo'" in proc.stderr


def test_soc_table_is_consistent():
    for s in soc.SOCS.values():
        assert s.ub_size == (256 if s.soc_version >= 260 else 192) * 1024
        assert s.vector_core_num == 2 * s.cube_core_num
