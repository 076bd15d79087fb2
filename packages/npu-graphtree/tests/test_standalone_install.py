"""npu-graphtree installs and imports with torch and npu-inductor-core (the shared seam every
component may depend on; its patch registry) alone: no other npu-inductor package."""

import subprocess
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
CORE = (
    PACKAGE.parent / "npu-inductor-core"
)  # a dependency, not on an index: installed from its folder
OTHERS = (
    "npu_sim",
    "npu_lowering",
    "npu_fusion",
    "npu_autotune",
    "npu_cache",
    "npu_launcher",
    "npu_inductor",
)


def test_pip_install_alone_in_a_fresh_venv(tmp_path, fresh_venv):
    py = fresh_venv(tmp_path / "venv") / "python"  # torch there already (root conftest)
    torch_pin = f"torch=={__import__('torch').__version__.split('+')[0]}"
    proc = subprocess.run(
        [py, "-m", "pip", "install", "-q", torch_pin, str(CORE), str(PACKAGE)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    check = (
        "import importlib.util, npu_graphtree; npu_graphtree.register(); "
        f"present = [m for m in {OTHERS!r} if importlib.util.find_spec(m)]; "
        "assert not present, present; print('ok')"
    )
    proc = subprocess.run([py, "-c", check], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
