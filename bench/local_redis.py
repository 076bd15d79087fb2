"""A throwaway redis-server on a free loopback port, for the benches that share a remote cache."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_redis(workdir: Path) -> tuple[subprocess.Popen, str]:
    """(process, URL) of a new redis-server keeping nothing on disk; exits when there is none."""
    exe = shutil.which("redis-server")
    if not exe:
        sys.exit("redis-server not found: pass --redis-url")
    port = free_port()
    proc = subprocess.Popen(
        [
            exe,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, f"redis://127.0.0.1:{port}/0"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("redis-server did not start")
