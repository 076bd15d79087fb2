"""The test command: start the services tests need, run every package's tests, stop them.

Run it through ``hatch run test [pytest args]`` (README). Services:
- redis-server (Debian package, installed when absent) on a free loopback port; tests read
  its URL from $NPU_INDUCTOR_TEST_REDIS_URL.
Results: test-results/junit.xml and test-results/features.json (read by
``npu-inductor features``).
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


def main(argv: list[str]) -> int:
    RESULTS.mkdir(exist_ok=True)
    with redis_server() as url:
        env = dict(os.environ, **{REDIS_ENV: url})
        cmd = [sys.executable, "-m", "pytest",
               f"--junitxml={RESULTS / 'junit.xml'}", f"--feature-results={RESULTS / 'features.json'}", *argv]
        _log(" ".join(cmd))
        code = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    if code == 5:
        _log("no tests collected: failing")
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
