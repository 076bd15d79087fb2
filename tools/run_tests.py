"""The test command: start the services tests need, run every package's tests, stop them.

Run it through ``hatch run test [--older-torch] [pytest args]`` (README). Services:
- redis-server (Debian package, installed when absent) on a free loopback port; tests read
  its URL from $NPU_INDUCTOR_TEST_REDIS_URL.
Temporary files: every process of the run (pytest, the Ascend check, the older torch releases'
environments) writes them under one folder that is removed at the end (``own_temp_folder``).
Results: test-results/junit.xml and test-results/features.json (read by
``npu-inductor features``).

Ascend validity (issue 4 item 6, catalogue X04): every npu kernel the tests generate is
saved ($NPU_LOWERING_SAVE_KERNELS=test-results/npu-kernels; Inductor's caches point at a
fresh folder for the run, since a cache hit generates no kernel), then, whether pytest
passed or not, packages/npu-lowering/ascend_check/check.py takes every config of each one
TTIR -> linalg with triton-ascend 3.2.0's front end, then linalg -> HIVM with bishengir
(ascendnpu-ir 1.2.0) for a 910B2 and a 950 SoC (catalogue X07), in its own venv
(.venv-ascend/, made by ascend_check/setup.py while pytest starts). The check follows the
kernel folder while pytest runs (one bishengir process beside pytest; the suite's pytest
leaves the second core mostly idle) and finishes with two processes once pytest is done. The
run fails when a config fails either stage for either SoC, naming kernel, config, SoC and
the compiler's message, or when the full suite generated no kernel. A config bishengir
rejects only for a UB overflow is reported as dropped (as the Ascend compile path drops it,
npu_lowering/runtime/ub_fit.py); a kernel left with no config fails. Known failures of
Ascend's compiler (check.py's KNOWN_FAILURES) are reported as xfail. Report (with our UB
estimate vs bishengir's per config): test-results/ascend-check.json, full output:
test-results/ascend-check.log.

Older torch releases (``--older-torch``, what CI runs: README "Supported torch releases"):
beside the main run on this environment's torch (the newest supported), each older supported
torch's hatch environment (torch214, then torch213: hatch.toml) is made or reused and runs its
``internals`` script: the tests of upstream internals (tools/internals.txt) and the model tests
(``--internals`` below), then the demo. This runs in the background while the main suite runs
(both environments are made first, then each one's tests, one after the other); each one's
output goes to test-results/<env>.log, and the run fails when one fails.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "test-results"
REDIS_ENV = "NPU_INDUCTOR_TEST_REDIS_URL"
ASCEND_CHECK = ROOT / "packages" / "npu-lowering" / "ascend_check"
KERNELS = RESULTS / "npu-kernels"
SAVE_ENV = "NPU_LOWERING_SAVE_KERNELS"
DONE = RESULTS / "pytest-done"  # written when pytest ends: the ascend check stops following


def _log(msg: str) -> None:  # with the UTC time: CI's phases are timed from these lines
    print(f"[run_tests {time.strftime('%H:%M:%S', time.gmtime())}] {msg}", flush=True)


def _ensure_redis_server() -> str:
    exe = shutil.which("redis-server")
    if exe:
        return exe
    _log("redis-server not found: installing the Debian package")
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run([*sudo, "apt-get", "update", "-q"], check=True, env=env)
    subprocess.run(
        [*sudo, "apt-get", "install", "-y", "-q", "--no-install-recommends", "redis-server"],
        check=True,
        env=env,
    )
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
                workdir,
                "--logfile",
                os.path.join(workdir, "redis.log"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
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


class _AscendCheck(threading.Thread):
    """The triton-ascend venv is made (or reused) while pytest runs; then check.py --follow
    checks each kernel as pytest writes it (one bishengir at a time beside pytest), and
    finishes the rest with two once ``finish`` says pytest is done."""

    def __init__(self):
        super().__init__(name="ascend-check", daemon=True)
        DONE.unlink(missing_ok=True)
        with open(RESULTS / "ascend-setup.log", "w") as log:
            self.setup = subprocess.Popen(
                [sys.executable, str(ASCEND_CHECK / "setup.py")],
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
            )
        self.proc: subprocess.Popen | None = None
        self.failed_setup = False
        self.start()

    def run(self) -> None:
        out, _ = self.setup.communicate()
        if self.setup.returncode or not out.strip():
            self.failed_setup = True
            return
        python = out.strip().splitlines()[-1]
        cmd = [
            python,
            str(ASCEND_CHECK / "check.py"),
            str(KERNELS),
            "--json",
            str(RESULTS / "ascend-check.json"),
            "--jobs",
            "2",
            "--ub-overflow",
            "drop",
            "--follow",
            str(DONE),
        ]
        _log(" ".join(cmd))
        with open(RESULTS / "ascend-check.log", "w") as log:
            self.proc = subprocess.Popen(
                cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True
            )

    def kill(self) -> None:
        self.setup.kill()  # an unfinished venv has no stamp: the next run builds it again
        DONE.touch()
        self.join()
        if self.proc is not None:
            self.proc.kill()

    def finish(self, require_kernels: bool) -> int:
        """0 when every config of every kernel got through both stages for both SoCs."""
        DONE.touch()
        self.join()
        if self.failed_setup:
            _log(f"ascend check: creating the triton-ascend venv failed ({self.setup.returncode}):")
            print((RESULTS / "ascend-setup.log").read_text()[-4000:], flush=True)
            return 1
        returncode = self.proc.wait()
        for line in (RESULTS / "ascend-check.log").read_text().splitlines():
            if not line.startswith(
                "ok "
            ):  # one line per kernel config is in the log; show the rest
                print(line, flush=True)
        if returncode == 2 and not require_kernels:
            _log("ascend check: the selected tests generated no npu kernel; nothing to check")
            return 0
        if returncode:
            _log(f"ascend check failed ({returncode}): see test-results/ascend-check.log")
        return returncode


INTERNALS = ROOT / "tools" / "internals.txt"
OLDER_TORCH = ("torch214", "torch213")  # hatch environments of the older supported torch releases


class _OlderTorch(threading.Thread):
    """``--older-torch``: ``hatch env create <env>`` for each older torch, then ``hatch run <env>:internals``."""

    def __init__(self):
        super().__init__(name="older-torch", daemon=True)
        hatch = shutil.which("hatch")
        if hatch is None:
            raise SystemExit("--older-torch needs hatch on PATH (python3 -m pip install hatch)")
        self.cmd = [hatch]
        # hatch makes each environment's own variables; none of this environment's may leak in
        venv = os.environ.get("VIRTUAL_ENV", "")
        self.env = {
            k: v
            for k, v in os.environ.items()
            if k
            not in ("VIRTUAL_ENV", "HATCH_ENV_ACTIVE", "PIP_CONSTRAINT", "PIP_BUILD_CONSTRAINT")
        }
        self.env["PATH"] = os.pathsep.join(
            p
            for p in os.environ.get("PATH", "").split(os.pathsep)
            if not venv or not p.startswith(venv)
        )
        self.results: dict[str, int] = {}
        self.start()

    def _hatch(self, name: str, args: list[str], log) -> int:
        began = time.monotonic()
        code = subprocess.run(
            [*self.cmd, *args], cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT
        ).returncode
        _log(
            f"{name}: hatch {' '.join(args)} {'done' if code == 0 else f'FAILED ({code})'} "
            f"in {time.monotonic() - began:.0f} s (test-results/{name}.log)"
        )
        return code

    def run(self) -> None:
        # every environment first: their editable installs build npu-launcher in the build folder
        # the suite's wheel build uses too (packages/npu-launcher/build/), so early in the run
        logs = {name: open(RESULTS / f"{name}.log", "w") for name in OLDER_TORCH}
        try:
            created = {
                name: self._hatch(name, ["env", "create", name], logs[name]) for name in OLDER_TORCH
            }
            for name in OLDER_TORCH:
                self.results[name] = created[name] or self._hatch(
                    name, ["run", f"{name}:internals"], logs[name]
                )
        finally:
            for log in logs.values():
                log.close()

    def finish(self) -> int:
        self.join()
        failed = [name for name in OLDER_TORCH if self.results.get(name, 1)]
        for name in failed:
            _log(f"{name} failed: the end of test-results/{name}.log:")
            print((RESULTS / f"{name}.log").read_text()[-6000:], flush=True)
        return 1 if failed else 0


def _torch_series() -> str:
    import torch

    return ".".join(torch.__version__.split("+")[0].split(".")[:2])


def internals(argv: list[str]) -> int:
    """``--internals``: the tests of upstream internals (tools/internals.txt) on this
    environment's torch, for CI on the older supported releases; results go to
    test-results/torch<series>/ (``npu-inductor features --torch <series>`` reads them). The
    Ascend check runs on the newest torch's kernels only (the main run)."""
    paths = [
        line.strip()
        for line in INTERNALS.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    results = RESULTS / f"torch{_torch_series()}"
    results.mkdir(parents=True, exist_ok=True)
    with (
        redis_server() as url,
        tempfile.TemporaryDirectory(prefix="npu-inductor-test-cache-") as cache,
    ):
        env = dict(os.environ, **{REDIS_ENV: url, "TORCHINDUCTOR_CACHE_DIR": cache})
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            f"--junitxml={results / 'junit.xml'}",
            f"--feature-results={results / 'features.json'}",
            *paths,
            *argv,
        ]
        _log(" ".join(cmd))
        code = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    return 1 if code == 5 else code


@contextmanager
def own_temp_folder():
    """Every process of the run writes its temporary files under one folder, removed at the end:
    upstream keeps C++ precompiled headers (about 300 MB each, one per venv and flag set) in
    the default cache folder under $TMPDIR whatever TORCHINDUCTOR_CACHE_DIR says, and a test or
    compiler killed mid-way leaves its folders; on a shared disk, runs must not add up."""
    folder = tempfile.mkdtemp(prefix="npu-inductor-test-tmp-")
    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = None  # gettempdir() reads $TMPDIR again
    try:
        free = shutil.disk_usage(folder).free / 2**30
        _log(f"temporary files under {folder} ({free:.1f} GiB free on its disk)")
        yield
    finally:
        if saved is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved
        tempfile.tempdir = None
        shutil.rmtree(folder, ignore_errors=True)


def main(argv: list[str]) -> int:
    with own_temp_folder():
        return _run(argv)


def _run(argv: list[str]) -> int:
    if argv[:1] == ["--internals"]:
        return internals(argv[1:])
    RESULTS.mkdir(exist_ok=True)
    older = _OlderTorch() if argv[:1] == ["--older-torch"] else None
    argv = argv[1:] if older else argv
    shutil.rmtree(KERNELS, ignore_errors=True)
    KERNELS.mkdir()
    began = time.monotonic()
    check = _AscendCheck()
    try:
        with (
            redis_server() as url,
            tempfile.TemporaryDirectory(prefix="npu-inductor-test-cache-") as cache,
        ):
            # a fresh Inductor cache: a cache hit skips codegen, and so the saving of its kernels
            env = dict(
                os.environ,
                **{REDIS_ENV: url, SAVE_ENV: str(KERNELS), "TORCHINDUCTOR_CACHE_DIR": cache},
            )
            cmd = [
                sys.executable,
                "-m",
                "pytest",
                f"--junitxml={RESULTS / 'junit.xml'}",
                f"--feature-results={RESULTS / 'features.json'}",
                "--durations=30",  # the slowest tests in the log: where CI's hour goes
                *argv,
            ]
            _log(" ".join(cmd))
            code = subprocess.run(cmd, cwd=ROOT, env=env).returncode
        _log(f"pytest took {time.monotonic() - began:.0f} s")
    except BaseException:
        check.kill()
        raise
    if code == 5:
        _log("no tests collected: failing")
        code = 1
    # checked whether pytest passed or not; a run of the whole suite must have generated kernels
    ascend = check.finish(require_kernels=not argv)
    _log(f"the ascend check ended {time.monotonic() - began:.0f} s after pytest started")
    failed_older = older.finish() if older else 0
    if older:
        _log(
            f"the older torch releases ended {time.monotonic() - began:.0f} s after pytest started"
        )
    return code or (1 if ascend or failed_older else 0)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
