"""Sibling version ranges (npu_inductor.versions): a component whose sibling is outside its
declared range fails at enable() naming both versions and the pip command that fixes it;
doctor shows the installed matrix.

"Told its sibling is too old": a folder put first on sys.path holds an ``npu-launcher``
distribution record of version 0.0.1; importlib.metadata resolves a name to the first
distribution found, so every lookup in that process sees npu-launcher 0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata

import pytest

from npu_inductor import versions

SIBLING = "npu-launcher"
COMPONENT = (
    "npu-lowering"  # talks to npu-launcher through npu_inductor.kernel_launcher (extra 'siblings')
)


def _old_sibling(tmp_path, version="0.0.1"):
    info = tmp_path / f"{SIBLING.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {SIBLING}\nVersion: {version}\n")
    return str(tmp_path)


def _python(code: str, path: str | None):
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [path, env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
    )


def _range() -> str:
    """npu-lowering's declared range for npu-launcher, read from its installed metadata."""
    rows = [r for r in versions.declared(metadata.distribution(COMPONENT)) if r.sibling == SIBLING]
    assert len(rows) == 1, rows
    return rows[0].spec


@pytest.mark.feature("X16")
def test_enable_fails_when_a_sibling_is_too_old(tmp_path):
    spec = _range()
    proc = _python("import npu_inductor; npu_inductor.enable()", _old_sibling(tmp_path))
    assert proc.returncode != 0
    err = proc.stderr
    assert "ComponentError" in err, err[-3000:]
    assert f"{COMPONENT} {metadata.version(COMPONENT)} works with {SIBLING}{spec}" in err, err[
        -3000:
    ]
    assert f"{SIBLING} 0.0.1 is installed (too old)" in err
    assert f'Fix: pip install "{SIBLING}{spec}"' in err


def test_enable_passes_with_the_siblings_in_range():
    proc = _python("import npu_inductor; print(npu_inductor.enable())", None)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert COMPONENT in proc.stdout and SIBLING in proc.stdout


def test_doctor_shows_the_installed_matrix(tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "npu-inductor")
    ok = subprocess.run([exe, "doctor", "--json"], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr[-3000:]
    rows = json.loads(ok.stdout)["components"]["versions"]
    row = next(r for r in rows if r["package"] == COMPONENT and r["sibling"] == SIBLING)
    assert row == {
        "package": COMPONENT,
        "version": metadata.version(COMPONENT),
        "sibling": SIBLING,
        "range": _range(),
        "installed": metadata.version(SIBLING),
        "status": "ok",
    }
    # npu-inductor depends on every component: each one's installed version is in its matrix
    assert {r["sibling"] for r in rows if r["package"] == "npu-inductor"} >= {
        COMPONENT,
        SIBLING,
        "npu-graphtree",
    }

    env = dict(os.environ, PYTHONPATH=_old_sibling(tmp_path))
    bad = subprocess.run([exe, "doctor"], capture_output=True, text=True, env=env, timeout=300)
    assert bad.returncode == 1
    assert f"{SIBLING} 0.0.1 (too old: needs {_range()})" in bad.stdout, bad.stdout[-3000:]


@pytest.mark.parametrize(
    ("spec", "version", "status"),
    [
        (">=0.1,<0.2", "0.1.0", versions.OK),
        (">=0.1,<0.2", "0.1.7+torch2.13", versions.OK),
        (">=0.1,<0.2", "0.0.9", versions.TOO_OLD),
        (">=0.1,<0.2", "0.2.0", versions.TOO_NEW),
        ("==2.13.*", "2.13.1", versions.OK),
        ("==2.13.*", "2.14.0", versions.TOO_NEW),
        ("~=0.3.1", "0.3.5", versions.OK),
        ("~=0.3.1", "0.4.0", versions.TOO_NEW),
        ("~=0.3.1", "0.3.0", versions.TOO_OLD),
        ("!=0.1.1", "0.1.1", versions.EXCLUDED),
    ],
)
def test_range_arithmetic(spec, version, status):
    assert versions.contains(spec, version) == status
