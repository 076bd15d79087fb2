"""npu-sim is installed with its C++ device built (pip install ran build_device.py): nothing is
compiled at start, the distribution pins the torch series it was built against, and a missing,
mismatched or stale build says how to rebuild. No test here builds the device."""

import importlib.metadata
import json
import os
import subprocess
import sys

import pytest
import torch

from npu_sim import _build


def test_distribution_pins_the_torch_it_was_built_against():
    record = json.loads(
        _build._record(torch.__version__).read_text(encoding="utf-8")
    )  # the one loaded
    assert record["torch"] == torch.__version__
    assert sorted(record["sources"]) == sorted(p.name for p in _build.CSRC.glob("*.cpp"))
    requires = importlib.metadata.requires("npu-sim")
    assert f"torch=={_build.series(torch.__version__)}.*" in requires, requires


def test_start_in_a_fresh_process_compiles_nothing(tmp_path):
    # a HOME and extension cache of its own: a JIT build would have to start from nothing
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "TORCH_EXTENSIONS_DIR": str(tmp_path / "ext"),
    }
    env.pop("XDG_CACHE_HOME", None)
    check = (
        "import json, sys, npu_sim, torch; npu_sim.start(); print(json.dumps(["
        "(torch.ones(3, device='npu') + 1).cpu().tolist(), "
        "'torch.utils.cpp_extension' in sys.modules, npu_sim._runtime._C.__file__]))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, timeout=300, env=env
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    values, builder_imported, extension = json.loads(proc.stdout.strip().splitlines()[-1])
    assert values == [2.0, 2.0, 2.0]
    assert not builder_imported  # cpp_extension, which JIT builds use, was not even imported
    assert extension.startswith(str(_build.HERE)) and extension.endswith(".so")
    assert (
        not (tmp_path / "ext").exists()
        and not (tmp_path / "home" / ".cache" / "torch_extensions").exists()
    )


def test_another_torch_series_is_refused_with_the_rebuild_command():
    _build.check("2.13.0+cpu", "2.13.1")  # the series the wheel pins: accepted
    with pytest.raises(
        _build.ExtensionUnavailable, match=r"built against torch 2\.11\.0.*build_device\.py"
    ):
        _build.check("2.11.0", "2.13.0+cpu")


def test_missing_build_says_how_to_build(monkeypatch, tmp_path):
    monkeypatch.setattr(_build, "INFO", tmp_path / "_C_build.json")
    monkeypatch.setattr(_build, "BUILT", tmp_path / "_built")
    with pytest.raises(_build.ExtensionUnavailable, match=r"not built.*build_device\.py"):
        _build.load()


def test_checkout_built_for_another_torch_names_both_and_the_fix(monkeypatch, tmp_path):
    """torch changed under an editable npu-sim (a venv of another torch release sharing the
    checkout): the error names the torch it was built for, the running one, and the command."""
    import torch

    other = "2.11.0" if not torch.__version__.startswith("2.11") else "2.15.0"
    record = tmp_path / "_built" / f"torch{_build.series(other)}" / "npu_sim" / "_C_build.json"
    record.parent.mkdir(parents=True)
    record.write_text(json.dumps({"torch": other, "sources": []}))
    monkeypatch.setattr(_build, "INFO", tmp_path / "_C_build.json")
    monkeypatch.setattr(_build, "BUILT", tmp_path / "_built")
    with pytest.raises(_build.ExtensionUnavailable) as err:
        _build.load()
    assert f"built against torch {other}" in str(err.value)
    assert f"runs torch {torch.__version__}" in str(err.value) and "build_device.py" in str(
        err.value
    )


def test_sources_changed_since_the_build_are_named(monkeypatch, tmp_path):
    csrc = tmp_path / "csrc"
    csrc.mkdir()
    for name in ("a.cpp", "b.cpp", "new.cpp"):
        (csrc / name).write_text("")
    os.utime(csrc / "a.cpp", (0, 0))
    monkeypatch.setattr(_build, "CSRC", csrc)
    assert _build.stale_sources({"sources": ["a.cpp", "b.cpp", "gone.cpp"]}, built_at=1.0) == [
        "gone.cpp",
        "new.cpp",
        "b.cpp",
    ]


def _build_device_module():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "build_device.py"
    spec = importlib.util.spec_from_file_location("npu_sim_build_device", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_unity_units_include_every_source_once_and_keep_unchanged_units(tmp_path):
    """The unity build (build_device.unity_units): each .cpp in exactly one unit, the units
    balanced by size, and a unit whose text did not change is not rewritten (ninja then
    recompiles only units whose included files changed)."""
    device = _build_device_module()
    sources = sorted(device.CSRC.glob("*.cpp"))
    units = device.unity_units(sources, tmp_path, 2)
    assert len(units) == 2
    included = [
        line.split('"')[1]
        for u in units
        for line in u.read_text().splitlines()
        if line.startswith("#include")
    ]
    assert sorted(included) == sorted(str(s) for s in sources)
    sizes = [sum(os.path.getsize(i) for i in u.read_text().split('"')[1::2]) for u in units]
    assert max(sizes) <= min(sizes) + max(s.stat().st_size for s in sources), sizes
    stamps = [u.stat().st_mtime_ns for u in units]
    os.utime(units[0], ns=(1, 1))
    again = device.unity_units(sources, tmp_path, 2)
    assert (
        again == units
        and units[0].stat().st_mtime_ns == 1
        and units[1].stat().st_mtime_ns == stamps[1]
    )
    assert device.unity_units(sources, tmp_path, 1) == [
        tmp_path / "unity_0.cpp"
    ]  # the stale unit goes
    assert sorted(tmp_path.glob("unity_*.cpp")) == [tmp_path / "unity_0.cpp"]
