"""Create (or reuse) the triton-ascend venv the Ascend validity check runs in.

    python packages/npu-lowering/ascend_check/setup.py [--venv PATH] [--quiet]

Prints the venv's Python on the last line of stdout. The venv (default ``.venv-ascend/``
at the repository root) holds torch 2.13.0 (the CPU build), triton-ascend 3.2.0 (it
installs the module ``triton``, so it cannot share the main ``.venv`` with NVIDIA's Triton)
and pybind11. npu-lowering itself is not installed there: the checker puts this checkout's
``packages/npu-lowering/src`` (and ``packages/npu-inductor-core/src``, which it imports) on
``sys.path``, so it always checks the code under test.

Idempotent and fast: a stamp file written after a successful install records the
requirements; when it matches (and the Python and ``triton-adapter-opt`` are there) nothing
runs. Otherwise the venv is removed and built again. A lock file in the temp directory
serializes concurrent callers (the test command and the X04 test may both ask for it).

Extra pip arguments (e.g. ``--find-links DIR`` for a local triton-ascend wheel) can be
given in $NPU_ASCEND_CHECK_PIP_ARGS.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DEFAULT_VENV = ROOT / ".venv-ascend"
# ascendnpu-ir: bishengir-compile/-opt (910B/910_93) and bishengir-compile-a5/-opt-a5 (950),
# the linalg -> HIVM stage; pinned, it is a ~160 MB wheel (cp311 only)
REQUIREMENTS = ("torch==2.13.0", "triton-ascend==3.2.0", "pybind11", "ascendnpu-ir==1.2.0")
STAMP = "npu-ascend-check.json"
PIP_ARGS_ENV = "NPU_ASCEND_CHECK_PIP_ARGS"
# what the venv must be able to do; a CUDA torch build is refused (never download one)
PROBE = (
    "import importlib.metadata as m, os, torch, triton.backends.ascend.compiler as c, pybind11;"
    "assert m.version('triton-ascend') == '3.2.0', m.version('triton-ascend');"
    "assert torch.__version__.startswith('2.13.0'), torch.__version__;"
    "assert torch.version.cuda is None, 'CUDA torch build: ' + torch.__version__;"
    "p = c._get_triton_adapter_opt_path(); assert os.access(p, os.X_OK), p"
)


def _log(msg: str, quiet: bool) -> None:
    if not quiet:
        print(f"[ascend_check.setup] {msg}", file=sys.stderr, flush=True)


def python_of(venv: Path) -> Path:
    return venv / "bin" / "python"


def _wanted() -> dict:
    return {
        "requirements": list(REQUIREMENTS),
        "pip_args": os.environ.get(PIP_ARGS_ENV, ""),
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
    }


def is_ready(venv: Path) -> bool:
    stamp = venv / STAMP
    try:
        have = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return False
    have.pop("seconds", None)
    want = _wanted()
    return (
        have.get("requirements") == want["requirements"]
        and have.get("python") == want["python"]
        and python_of(venv).exists()
        and any(venv.glob("lib/python*/site-packages/triton/backends/ascend/triton-adapter-opt"))
    )


def _base_python() -> str:
    """A Python to build the venv from: this interpreter's base (not a venv's)."""
    return getattr(sys, "_base_executable", None) or sys.executable


def create(venv: Path, quiet: bool = False) -> Path:
    t0 = time.monotonic()
    if venv.exists():
        _log(f"rebuilding {venv} (stamp missing or out of date)", quiet)
        shutil.rmtree(venv)
    _log(f"creating {venv}: {' '.join(REQUIREMENTS)}", quiet)
    out = subprocess.DEVNULL if quiet else sys.stderr
    subprocess.run([_base_python(), "-m", "venv", str(venv)], check=True, stdout=out, stderr=out)
    py = str(python_of(venv))
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-input"]
    extra = shlex.split(os.environ.get(PIP_ARGS_ENV, ""))
    # this venv pins its own torch (triton-ascend's): a dev environment's pip constraints
    # (hatch.toml's, torch 2.15 in the default one) would make its install impossible
    env = {
        k: v for k, v in os.environ.items() if k not in ("PIP_CONSTRAINT", "PIP_BUILD_CONSTRAINT")
    }
    proc = subprocess.run(
        [*pip, *extra, *REQUIREMENTS],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    if proc.returncode:
        raise SystemExit(
            f"ascend_check setup: pip install failed ({proc.returncode}):\n{proc.stdout[-4000:]}"
        )
    probe = subprocess.run(
        [py, "-W", "ignore", "-c", PROBE],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    if probe.returncode:
        raise SystemExit(f"ascend_check setup: the new venv does not work:\n{probe.stdout[-4000:]}")
    stamp = {**_wanted(), "seconds": round(time.monotonic() - t0, 1)}
    (venv / STAMP).write_text(json.dumps(stamp, indent=1))
    _log(f"ready in {stamp['seconds']}s", quiet)
    return python_of(venv)


def ensure(venv: Path = DEFAULT_VENV, quiet: bool = False) -> Path:
    """The venv's Python, creating the venv first when needed (serialized by a lock)."""
    venv = Path(venv).absolute()
    if is_ready(venv):
        return python_of(venv)
    key = hashlib.sha256(str(venv).encode()).hexdigest()[:16]
    lock_path = Path(tempfile.gettempdir()) / f"npu-ascend-check-{key}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_ready(venv):  # built by whoever held the lock
            return python_of(venv)
        return create(venv, quiet)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--venv", type=Path, default=DEFAULT_VENV)
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    print(ensure(args.venv, args.quiet))
    return 0


if __name__ == "__main__":
    sys.exit(main())
