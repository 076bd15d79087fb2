"""The test command: start the services tests need, run every package's tests, stop them.

Run it through ``hatch run test [pytest args]`` (README). Services:
- redis-server (Debian package, installed when absent) on a free loopback port; tests read
  its URL from $NPU_INDUCTOR_TEST_REDIS_URL.
Results: test-results/junit.xml and test-results/features.json (read by
``npu-inductor features``).

Ascend validity (issue 4 item 6, catalogue X04): every npu kernel the tests generate is
saved ($NPU_LOWERING_SAVE_KERNELS=test-results/npu-kernels; Inductor's caches point at a
fresh folder for the run, since a cache hit generates no kernel), then, whether pytest
passed or not, packages/npu-lowering/ascend_check/check.py takes every config of each one
TTIR -> linalg with triton-ascend 3.2.0's front end, then linalg -> HIVM with bishengir
(ascendnpu-ir 1.2.0) for a 910B2 and a 950 SoC (catalogue X07), two bishengir processes at
once, in its own venv (.venv-ascend/, made by ascend_check/setup.py while pytest runs). The
run fails when a config fails either stage for either SoC, naming kernel, config, SoC and
the compiler's message, or when the full suite generated no kernel. A config bishengir
rejects only for a UB overflow is reported as dropped (as the Ascend compile path drops it,
npu_lowering/runtime/ub_fit.py); a kernel left with no config fails. Known failures of
Ascend's compiler (check.py's KNOWN_FAILURES) are reported as xfail. Report (with our UB
estimate vs bishengir's per config): test-results/ascend-check.json, full output:
test-results/ascend-check.log.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "test-results"
REDIS_ENV = "NPU_INDUCTOR_TEST_REDIS_URL"
ASCEND_CHECK = ROOT / "packages" / "npu-lowering" / "ascend_check"
KERNELS = RESULTS / "npu-kernels"
SAVE_ENV = "NPU_LOWERING_SAVE_KERNELS"


def _log(msg: str) -> None:
    print(f"[run_tests] {msg}", flush=True)


def _ensure_redis_server() -> str:
    exe = shutil.which("redis-server")
    if exe:
        return exe
    _log("redis-server not found: installing the Debian package")
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run([*sudo, "apt-get", "update", "-q"], check=True, env=env)
    subprocess.run([*sudo, "apt-get", "install", "-y", "-q", "--no-install-recommends", "redis-server"],
                   check=True, env=env)
    exe = shutil.which("redis-server")
    if not exe:
        raise SystemExit("redis-server still missing after apt-get install")
    return exe


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def redis_server():
    exe = _ensure_redis_server()
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="npu-inductor-redis-") as workdir:
        proc = subprocess.Popen(
            [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", workdir, "--logfile", os.path.join(workdir, "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 20
            while not _ping(port):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"redis-server did not start on port {port}")
                time.sleep(0.05)
            _log(f"redis-server on 127.0.0.1:{port}")
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _start_ascend_setup() -> subprocess.Popen:
    """Create (or reuse) the triton-ascend venv in the background, while pytest runs."""
    log = open(RESULTS / "ascend-setup.log", "w")
    return subprocess.Popen([sys.executable, str(ASCEND_CHECK / "setup.py")], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=log, text=True)


def _ascend_check(setup: subprocess.Popen, require_kernels: bool) -> int:
    """Every saved kernel through triton-ascend's front end and bishengir (910B2, 950); 0 when
    every config of every kernel gets through both stages."""
    out, _ = setup.communicate()
    if setup.returncode or not out.strip():
        _log(f"ascend check: creating the triton-ascend venv failed ({setup.returncode}):")
        print((RESULTS / "ascend-setup.log").read_text()[-4000:], flush=True)
        return 1
    python = out.strip().splitlines()[-1]
    cmd = [python, str(ASCEND_CHECK / "check.py"), str(KERNELS), "--json", str(RESULTS / "ascend-check.json"),
           "--jobs", "2", "--ub-overflow", "drop"]
    _log(" ".join(cmd))
    proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    (RESULTS / "ascend-check.log").write_text(proc.stdout)
    for line in proc.stdout.splitlines():  # one line per kernel config is in the log; show failures
        if not line.startswith("ok "):
            print(line, flush=True)
    if proc.returncode == 2 and not require_kernels:
        _log("ascend check: the selected tests generated no npu kernel; nothing to check")
        return 0
    if proc.returncode:
        _log(f"ascend check failed ({proc.returncode}): see test-results/ascend-check.log")
    return proc.returncode


def main(argv: list[str]) -> int:
    RESULTS.mkdir(exist_ok=True)
    shutil.rmtree(KERNELS, ignore_errors=True)
    KERNELS.mkdir()
    setup = _start_ascend_setup()
    try:
        with redis_server() as url, tempfile.TemporaryDirectory(prefix="npu-inductor-test-cache-") as cache:
            # a fresh Inductor cache: a cache hit skips codegen, and so the saving of its kernels
            env = dict(os.environ, **{REDIS_ENV: url, SAVE_ENV: str(KERNELS), "TORCHINDUCTOR_CACHE_DIR": cache})
            cmd = [sys.executable, "-m", "pytest",
                   f"--junitxml={RESULTS / 'junit.xml'}", f"--feature-results={RESULTS / 'features.json'}", *argv]
            _log(" ".join(cmd))
            code = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    except BaseException:
        setup.kill()  # an unfinished venv has no stamp: the next run builds it again
        raise
    if code == 5:
        _log("no tests collected: failing")
        code = 1
    # checked whether pytest passed or not; a run of the whole suite must have generated kernels
    ascend = _ascend_check(setup, require_kernels=not argv)
    return code or (1 if ascend else 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
