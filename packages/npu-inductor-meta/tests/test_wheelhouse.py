"""The release wheels, as a user installs them (issue 36, catalogue X16).

tools/build_dists.py builds every package's sdist and wheel into a wheelhouse (it runs
``twine check --strict`` on all of them). Then, in fresh venvs made from the base Python:
- with no C/C++ compiler (CC=false CXX=false, and gcc/g++/cc/c++/clang shims first on PATH
  that fail and log the call): this environment's torch and Triton (the root conftest's
  ``fresh_venv``: linked, not installed again), what else our wheels require from the
  machine's index (pip's own config), then ``pip install --no-index --find-links <wheelhouse>
  --only-binary :all: "npu-inductor[sim]"``; in that venv ``npu-inductor demo`` compiles the
  reference transformer block on npu (npu-sim) and matches eager, ``npu-inductor doctor`` is
  clean, and no compiler was ever called;
- ``npu-graphtree`` alone from the wheelhouse: it and npu-inductor-core, nothing else of ours.

Slow by nature (two native builds, two venvs): a few minutes on 2 cores.
``NPU_INDUCTOR_WHEELHOUSE=dist`` tests a wheelhouse already built (``hatch run dist``) instead.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
COMPILERS = (
    "gcc",
    "g++",
    "cc",
    "c++",
    "clang",
    "clang++",
    "c89",
    "c99",
    "x86_64-linux-gnu-gcc",
    "x86_64-linux-gnu-g++",
    "x86_64-linux-gnu-gcc-12",
    "x86_64-linux-gnu-g++-12",
)
OURS = re.compile(r"^npu[-_]")


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory):
    if os.environ.get(
        "NPU_INDUCTOR_WHEELHOUSE"
    ):  # one built by `hatch run dist`, to rerun these tests quickly
        return Path(os.environ["NPU_INDUCTOR_WHEELHOUSE"])
    out = tmp_path_factory.mktemp("wheelhouse") / "dist"
    proc = subprocess.run(
        # in this environment: isolated builds are what creating it did (tools/build_dists.py)
        [
            sys.executable,
            str(ROOT / "tools" / "build_dists.py"),
            "--no-isolation",
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    return out


def _wheels(wheelhouse: Path) -> dict[str, Path]:
    return {w.name.split("-")[0].replace("_", "-"): w for w in wheelhouse.glob("*.whl")}


def _metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as z:
        return z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()


def _clean_env(extra_path: list[Path] = ()) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(
            ("PIP_BUILD", "PYTHON", "VIRTUAL_ENV", "NPU_LOWERING_SAVE", "TORCHINDUCTOR_", "TRITON_")
        )
    }
    env["PATH"] = os.pathsep.join([*map(str, extra_path), "/usr/local/bin", "/usr/bin", "/bin"])
    return env


def _pip(bin_dir: Path, env: dict[str, str], *args: str) -> None:
    proc = subprocess.run(
        [
            str(bin_dir / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            *args,
        ],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]


def _third_party(wheelhouse: Path) -> list[str]:
    """What our wheels need from the index (torch, Triton, redis), at this environment's torch and Triton."""
    reqs = {
        f"torch=={metadata.version('torch').split('+')[0]}",
        f"triton=={metadata.version('triton')}",
    }
    for wheel in wheelhouse.glob("*.whl"):
        for line in re.findall(r"^Requires-Dist: (.*)$", _metadata(wheel), re.M):
            req, _, marker = line.partition(";")
            if OURS.match(req) or (marker and "extra" in marker and '"sim"' not in marker):
                continue
            reqs.add(req.strip())
    return sorted(reqs)


def _installed_ours(bin_dir: Path, env: dict[str, str]) -> set[str]:
    proc = subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "list", "--format", "json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return {
        p["name"].replace("_", "-").lower()
        for p in json.loads(proc.stdout)
        if OURS.match(p["name"])
    }


@pytest.mark.feature("X16")
def test_wheels_are_release_ready(wheelhouse):
    """Every package: an sdist and a wheel; pure ones py3-none-any, native ones manylinux; the
    license in every wheel; npu-sim pinned to the torch minor it was built against."""
    folders = sorted(p for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").is_file())
    wheels = _wheels(wheelhouse)
    assert len(wheels) == len(folders) == len(list(wheelhouse.glob("*.tar.gz"))), sorted(
        wheelhouse.iterdir()
    )
    torch_minor = ".".join(metadata.version("torch").split(".")[:2])
    for name, wheel in wheels.items():
        meta = _metadata(wheel)
        with zipfile.ZipFile(wheel) as z:
            assert any(n.endswith(".dist-info/licenses/LICENSE") for n in z.namelist()), wheel.name
        assert (
            "Requires-Python: >=3.10" in meta and "Classifier: " in meta and "Project-URL: " in meta
        ), name
        if name in ("npu-sim", "npu-launcher"):
            assert re.search(r"-cp3\d+-cp3\d+-manylinux_\d+_\d+_x86_64\.whl$", wheel.name), (
                wheel.name
            )
        else:
            assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    sim = _metadata(wheels["npu-sim"])
    assert f"Requires-Dist: torch=={torch_minor}.*" in sim
    assert re.search(rf"^Version: \d+\.\d+\.\d+\+torch{re.escape(torch_minor)}$", sim, re.M)


@pytest.mark.feature("X16")
def test_install_without_a_compiler_and_compile_on_npu(wheelhouse, tmp_path, fresh_venv):
    shims, calls = tmp_path / "no-compiler", tmp_path / "compiler-calls.log"
    shims.mkdir()
    for name in COMPILERS:
        shim = shims / name
        shim.write_text(
            f'#!/bin/sh\necho "$0 $*" >> "{calls}"\necho "no C/C++ compiler here" >&2\nexit 1\n'
        )
        shim.chmod(0o755)
    env = _clean_env([shims])
    env.update(CC="false", CXX="false")
    bin_dir = fresh_venv(tmp_path / "venv", env)
    env["PATH"] = os.pathsep.join([str(shims), str(bin_dir), env["PATH"]])
    env["VIRTUAL_ENV"] = str(tmp_path / "venv")
    # caches of its own: the compile below generates its code, no cache hit of another environment
    env["TORCHINDUCTOR_CACHE_DIR"], env["TRITON_CACHE_DIR"] = (
        str(tmp_path / "inductor"),
        str(tmp_path / "triton"),
    )

    _pip(bin_dir, env, *_third_party(wheelhouse))  # from the index pip is configured with
    _pip(
        bin_dir,
        env,
        "--no-index",
        "--find-links",
        str(wheelhouse),
        "--only-binary",
        ":all:",
        "npu-inductor[sim]",
    )
    assert _installed_ours(bin_dir, env) >= {
        "npu-inductor",
        "npu-sim",
        "npu-launcher",
        "npu-lowering",
        "npu-inductor-core",
        "npu-graphtree",
    }

    run = tmp_path / "run"  # not the checkout: nothing importable from the source tree
    run.mkdir()
    where = subprocess.run(
        [
            str(bin_dir / "python"),
            "-c",
            "import torch, npu_sim._C, npu_launcher._native as n; "
            "print(npu_sim._C.__file__); print(n.__file__)",
        ],
        cwd=run,
        env=env,
        capture_output=True,
        text=True,
    )
    assert where.returncode == 0, where.stderr[-4000:]
    assert all(line.startswith(str(tmp_path / "venv")) for line in where.stdout.split()), (
        where.stdout
    )

    demo = subprocess.run(
        [
            str(bin_dir / "npu-inductor"),
            "demo",
            "--json",
            "--calls",
            "1",
            "--dim",
            "32",
            "--heads",
            "2",
            "--seq",
            "8",
        ],
        cwd=run,
        env=env,
        capture_output=True,
        text=True,
    )
    assert demo.returncode == 0, (demo.stdout + demo.stderr)[-6000:]
    data = json.loads(demo.stdout)
    assert (
        data["matches_eager"] and data["provider"] == "npu_sim" and data["generated_kernels"] > 0
    ), data

    doctor = subprocess.run(
        [str(bin_dir / "npu-inductor"), "doctor"], cwd=run, env=env, capture_output=True, text=True
    )
    assert doctor.returncode == 0 and "doctor: ok" in doctor.stdout, (
        doctor.stdout + doctor.stderr
    )[-6000:]
    assert not calls.exists(), calls.read_text()


@pytest.mark.feature("X16")
def test_graphtree_installs_alone(wheelhouse, tmp_path, fresh_venv):
    env = _clean_env()
    bin_dir = fresh_venv(tmp_path / "venv", env)
    env["PATH"] = os.pathsep.join([str(bin_dir), env["PATH"]])
    _pip(
        bin_dir,
        env,
        "--no-index",
        "--find-links",
        str(wheelhouse),
        "--only-binary",
        ":all:",
        "npu-graphtree",
    )
    assert _installed_ours(bin_dir, env) == {"npu-graphtree", "npu-inductor-core"}
    proc = subprocess.run(
        [
            str(bin_dir / "python"),
            "-c",
            "import torch, npu_graphtree; npu_graphtree.register(); print(npu_graphtree.__file__)",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.strip().startswith(str(tmp_path / "venv"))
