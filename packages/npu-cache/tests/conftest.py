"""Fixtures for npu-cache tests: real redis-server processes, TLS certificates made here,
a latency-injecting TCP proxy, and settings isolated per test (own dir, prefix and key).

The test command provides one shared server ($NPU_INDUCTOR_TEST_REDIS_URL); tests that need
their own (TLS, ACL, kill/restart) start them on free loopback ports in a temporary dir.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from npu_cache import Settings
from npu_cache.writer import Writer

URL_ENV = "NPU_INDUCTOR_TEST_REDIS_URL"
KEY = "test-key-" + "0123456789abcdef" * 2


def with_timeout(url: str, seconds: float) -> str:
    """``url`` with the Redis timeout in its query (the one way to give it outside Python)."""
    return f"{url}{'&' if '?' in url else '?'}socket_timeout={seconds}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """One redis-server process; ``conf`` lines go into its config file."""

    def __init__(
        self, workdir: Path, conf: list[str] = (), tls: bool = False, port: int | None = None
    ):
        self.workdir, self.conf, self.tls = workdir, list(conf), tls
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"{'rediss' if self.tls else 'redis'}://127.0.0.1:{self.port}/0"

    def start(self) -> "RedisServer":
        exe = shutil.which("redis-server")
        if not exe:
            pytest.skip("redis-server is not installed")
        self.workdir.mkdir(parents=True, exist_ok=True)
        ports = ["port 0", f"tls-port {self.port}"] if self.tls else [f"port {self.port}"]
        conf = self.workdir / "redis.conf"
        conf.write_text(
            "\n".join(
                [
                    "bind 127.0.0.1",
                    'save ""',
                    "appendonly no",
                    f"dir {self.workdir}",
                    f"logfile {self.workdir / 'redis.log'}",
                    *ports,
                    *self.conf,
                ]
            )
            + "\n"
        )
        self.proc = subprocess.Popen(
            [exe, str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    log = self.workdir / "redis.log"
                    raise RuntimeError(
                        f"redis-server failed: {log.read_text() if log.exists() else ''}"
                    ) from None
                time.sleep(0.02)
        return self

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


@pytest.fixture
def redis_server(tmp_path):
    """Factory: ``redis_server(conf=[...], tls=False, port=None, start=True)``; all stopped at teardown."""
    servers = []

    def make(conf=(), tls=False, port=None, start=True):
        srv = RedisServer(tmp_path / f"redis-{len(servers)}", conf, tls, port)
        servers.append(srv)
        return srv.start() if start else srv

    yield make
    for srv in servers:
        srv.stop()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """The test command's shared server, or one of our own when run by plain pytest."""
    if os.environ.get(URL_ENV):
        yield os.environ[URL_ENV]
        return
    srv = RedisServer(tmp_path_factory.mktemp("shared-redis")).start()
    yield srv.url
    srv.stop()


@pytest.fixture
def cache_env(monkeypatch):
    """Set one NPU_CACHE_* setting (None: unset) for this process's caches (npu_cache.config,
    whose environment defaults were read at import) and for processes it starts (the
    environment); both are undone after the test. (config.patch, not monkeypatch.setattr:
    pytest's undo deletes a config key it did not find in the module's __dict__.)"""
    from npu_cache import config
    from npu_cache.settings import KEYS

    with contextlib.ExitStack() as stack:

        def set_(name, value):
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, str(value))
            stack.enter_context(config.patch({KEYS[name]: value}))

        yield set_


@pytest.fixture
def make_settings(tmp_path):
    """Settings isolated to this test: own directory, own Redis key prefix, a fixed key."""
    prefix = f"npu-cache-test-{uuid.uuid4().hex[:12]}"

    def make(redis_url=None, cache_dir="default", **overrides):
        # the Redis timeout and TLS files go in redis_url's query (?socket_timeout=2)
        values = dict(
            redis_url=redis_url,
            redis_prefix=prefix,
            hmac_key=KEY,
            redis_cooldown=0.5,
            cache_dir=(tmp_path / "cache") if cache_dir == "default" else cache_dir,
        )
        values.update(overrides)
        return Settings(**values)

    return make


@pytest.fixture
def writer():
    w = Writer(max_items=64, max_bytes=64 << 20, exit_timeout=5)
    yield w
    w.flush(10)


@pytest.fixture(scope="session")
def tls_certs(tmp_path_factory):
    """A throw-away CA, a server certificate for 127.0.0.1 and a client certificate."""
    if not shutil.which("openssl"):
        pytest.skip("openssl is not installed")
    d = tmp_path_factory.mktemp("tls")

    def ssl(*args):
        subprocess.run(["openssl", *args], cwd=d, check=True, capture_output=True)

    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    ssl(
        "req",
        "-x509",
        *ec,
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=npu-cache test CA",
    )
    for name, ext in (
        ("server", "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth"),
        ("client", "extendedKeyUsage=clientAuth"),
    ):
        ssl(
            "req",
            "-new",
            *ec,
            "-keyout",
            f"{name}.key",
            "-out",
            f"{name}.csr",
            "-subj",
            f"/CN=npu-cache {name}",
        )
        (d / f"{name}.ext").write_text(ext + "\n")
        ssl(
            "x509",
            "-req",
            "-in",
            f"{name}.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            f"{name}.crt",
            "-days",
            "2",
            "-extfile",
            f"{name}.ext",
        )
    # a second CA that signed nothing the server presents
    ssl(
        "req",
        "-x509",
        *ec,
        "-keyout",
        "other.key",
        "-out",
        "other-ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=other CA",
    )
    return d


class DelayProxy:
    """TCP proxy on loopback that holds every chunk ``delay`` seconds before forwarding it:
    a slow network in front of a healthy Redis. ``delay`` can change while running."""

    def __init__(self, target_port: int, delay: float = 0.0):
        self.target_port, self.delay = target_port, delay
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self._closed = False
        self._conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self._closed:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port))
            except OSError:
                client.close()
                continue
            self._conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src, dst):
        try:
            while data := src.recv(65536):
                if self.delay:
                    time.sleep(self.delay)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def close(self):
        self._closed = True
        self.sock.close()
        for c in self._conns:
            try:
                c.close()
            except OSError:
                pass


@pytest.fixture
def delay_proxy():
    proxies = []

    def make(target_port, delay=0.0):
        p = DelayProxy(target_port, delay)
        proxies.append(p)
        return p

    yield make
    for p in proxies:
        p.close()


@pytest.fixture(name="free_port")
def free_port_fixture():
    """A loopback port nothing listens on (yet)."""
    return free_port


@pytest.fixture
def port_of():
    return lambda url: int(url.rsplit(":", 1)[1].split("/")[0])


@pytest.fixture
def random_key():
    return lambda: secrets.token_hex(8)


JOBS = Path(__file__).parent / "jobs"


class NpuJobs:
    """Run ``jobs/<script>`` in fresh processes compiling on npu-sim; each returns its JSON line.

    ``jobs(spec, local="a", redis="shared", env={...})``: ``local`` names the process's
    Inductor cache directory (same name = same directory), Redis is the shared test server
    under a key prefix private to this object unless ``redis`` says otherwise (None: no Redis).
    ``machine`` names a "machine": its own HOME (so npu-launcher's and Triton's home caches),
    Triton cache and npu-cache directory; processes of two machines share only Redis and the
    HMAC key.
    """

    def __init__(self, base: Path, redis_url: str):
        self.base, self.redis_url = base, redis_url
        self.prefix = f"npu-cache-test-{uuid.uuid4().hex[:12]}"
        self.hmac_key = KEY

    def __call__(
        self,
        spec,
        local="a",
        redis="shared",
        env=None,
        script="npu_compile.py",
        timeout=300,
        machine=None,
    ):
        import json
        import sys

        environ = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("NPU_CACHE_", "TORCHINDUCTOR_", "TORCH_COMPILE"))
        }
        environ.update(
            TORCHINDUCTOR_CACHE_DIR=str(self.base / f"inductor-{local}"),
            NPU_CACHE_DIR="off",
            NPU_CACHE_REDIS_PREFIX=self.prefix,
            NPU_CACHE_HMAC_KEY=KEY,
            NPU_CACHE_REDIS_COOLDOWN="0.5",
        )
        if machine is not None:
            home = self.base / f"machine-{machine}"
            environ.update(
                HOME=str(home / "home"),
                TRITON_CACHE_DIR=str(home / "triton"),
                NPU_CACHE_DIR=str(home / "npu-cache"),
            )
            environ.pop("XDG_CONFIG_HOME", None), environ.pop("XDG_CACHE_HOME", None)
            environ.pop("NPU_LAUNCHER_CACHE_DIR", None), environ.pop("TRITON_HOME", None)
        if redis == "shared":
            environ["NPU_CACHE_REDIS_URL"] = with_timeout(self.redis_url, 0.5)
        elif redis:
            environ["NPU_CACHE_REDIS_URL"] = with_timeout(redis, 0.5)
        environ.update(env or {})
        proc = subprocess.run(
            [sys.executable, str(JOBS / script), json.dumps(spec)],
            env=environ,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert proc.returncode == 0, proc.stderr[-6000:]
        return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def npu_job(tmp_path, redis_url):
    return NpuJobs(tmp_path, redis_url)


@pytest.fixture(scope="module")
def module_npu_job(tmp_path_factory, redis_url):
    return NpuJobs(tmp_path_factory.mktemp("npu-jobs"), redis_url)


@pytest.fixture(scope="session")
def npu():
    """Device "npu" in this process (npu-sim here), every component registered."""
    import torch

    import npu_inductor

    npu_inductor.enable()
    if torch._C._get_privateuse1_backend_name() != "npu":
        pytest.skip("no npu device")
    return torch.device("npu")
