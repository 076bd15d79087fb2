"""X17: the backend runs on the torch users have, torch 2.13, 2.14 and 2.15, each paired in the
packages' metadata with its Triton (npu-sim's wheel) and its torch_npu (npu-inductor's extras).
CI runs this module on each of the three (tools/internals.txt), so `npu-inductor features
--torch <series>` shows it per release."""

from __future__ import annotations

import importlib.metadata as md
import re

import pytest
import torch
import triton
from packaging.requirements import Requirement
from packaging.version import Version

from npu_inductor_core import torch_versions

DISTS = (
    "npu-inductor",
    "npu-inductor-core",
    "npu-sim",
    "npu-lowering",
    "npu-fusion",
    "npu-autotune",
    "npu-cache",
    "npu-launcher",
    "npu-graphtree",
)


def _requires(dist: str) -> list[Requirement]:
    return [Requirement(r) for r in md.requires(dist) or []]


@pytest.mark.feature("X17")
def test_every_package_takes_every_supported_torch_and_this_one():
    running = Version(torch.__version__.split("+")[0])
    assert torch_versions.series() in torch_versions.SUPPORTED
    for dist in DISTS:
        ranges = [r.specifier for r in _requires(dist) if r.name == "torch" and not r.marker]
        assert ranges, f"{dist} declares no torch"
        for series in torch_versions.SUPPORTED:
            assert all(Version(f"{series}.0") in s or "==" in str(s) for s in ranges), (
                dist,
                series,
                ranges,
            )
        assert all(running in s for s in ranges), (dist, torch.__version__, ranges)


@pytest.mark.feature("X17")
def test_npu_sim_is_built_for_this_torch_and_pins_its_triton():
    reqs = [r for r in _requires("npu-sim") if not r.marker]
    torch_pins = [
        str(r.specifier) for r in reqs if r.name == "torch" and str(r.specifier).startswith("==")
    ]
    assert torch_pins == [
        f"=={torch_versions.series()}.*"
    ]  # the series the C++ device was built against
    triton_pins = [
        r.specifier for r in reqs if r.name == "triton" and str(r.specifier).startswith("~=")
    ]
    assert len(triton_pins) == 1 and Version(triton.__version__) in triton_pins[0], (
        triton.__version__,
        triton_pins,
    )


@pytest.mark.feature("X17")
def test_each_torch_npu_extra_names_the_torch_that_torch_npu_requires():
    """torch_npu X.Y.Z requires torch==X.Y.Z.*: the extra ascend-torch2YY pins torch_npu 2.YY, and
    "ascend" is the newest one."""
    extras: dict[str, str] = {}
    for r in _requires("npu-inductor"):
        m = re.search(r'extra == "([^"]+)"', str(r.marker).replace("'", '"')) if r.marker else None
        if m and r.name.replace("_", "-") == "torch-npu":
            extras[m.group(1)] = str(r.specifier).lstrip("=")
    per_torch = {k: v for k, v in extras.items() if k.startswith("ascend-torch")}
    assert per_torch, extras
    for extra, npu in per_torch.items():
        series = f"{extra[len('ascend-torch')]}.{extra[len('ascend-torch') + 1 :]}"
        assert series in torch_versions.SUPPORTED and npu.startswith(series + "."), (extra, npu)
    assert extras["ascend"] == max(per_torch.values(), key=Version)


@pytest.mark.feature("X17")
def test_dev_environments_pin_the_torch_and_triton_of_their_constraints():
    """hatch.toml's environment per supported torch series (CI's too) installs the torch and
    Triton its constraints/torch<series>.txt names, and every supported series has one."""
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    envs = tomllib.loads((root / "hatch.toml").read_text(encoding="utf-8"))["envs"]
    seen = set()
    for name, env in envs.items():
        pins = env.get("extra-dependencies", [])
        constraint = env.get("env-vars", {}).get("PIP_CONSTRAINT", "")
        series = re.search(r"torch(\d+\.\d+)\.txt$", constraint).group(1)
        lines = (
            (root / "constraints" / f"torch{series}.txt").read_text(encoding="utf-8").splitlines()
        )
        assert sorted(pins) == sorted(ln for ln in lines if ln and not ln.startswith("#")), name
        assert any(p.startswith(f"torch=={series}.") for p in pins), (name, pins)
        assert env.get("env-vars", {}).get("PIP_BUILD_CONSTRAINT") == constraint, name
        seen.add(series)
    assert seen == set(torch_versions.SUPPORTED)


@pytest.mark.feature("X17")
def test_the_readme_commands_use_the_newest_supported_torch():
    """The README's commands run in hatch's default environment, which has the newest supported
    torch; every older supported torch has its environment and internals script (``hatch run
    test --older-torch`` runs them)."""
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    envs = tomllib.loads((root / "hatch.toml").read_text(encoding="utf-8"))["envs"]
    newest = max(torch_versions.SUPPORTED, key=lambda s: tuple(map(int, s.split("."))))
    assert any(p.startswith(f"torch=={newest}.") for p in envs["default"]["extra-dependencies"])
    readme = (root / "README.md").read_text(encoding="utf-8")
    test_cmd = readme.split("<!-- test-command -->")[1].split("<!-- /test-command -->")[0]
    demo_cmd = readme.split("<!-- demo-command -->")[1].split("<!-- /demo-command -->")[0]
    assert "hatch run test" in test_cmd and "hatch run demo" in demo_cmd  # the default env
    older = [s for s in torch_versions.SUPPORTED if s != newest]
    run_tests = (root / "tools" / "run_tests.py").read_text(encoding="utf-8")
    older_envs = re.search(r"^OLDER_TORCH = \(([^)]*)\)", run_tests, re.M).group(1)
    # each older torch's environment, with its internals script, is in the test command
    for series in older:
        name = f"torch{series.replace('.', '')}"
        assert f'"{name}"' in older_envs and name in envs, (series, older_envs)
        assert any(p.startswith(f"torch=={series}.") for p in envs[name]["extra-dependencies"]), (
            name
        )
    assert any("--internals" in c for c in envs["default"]["scripts"]["internals"])


def _readme_test_command() -> str:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text(encoding="utf-8")
    return readme.split("<!-- test-command -->")[1].split("<!-- /test-command -->")[0]


@pytest.mark.feature("X17")
def test_ci_tests_every_older_supported_torch():
    assert "--older-torch" in _readme_test_command()
