"""The settings a cache is opened with, checked, in one place so the README can list them.

``Settings.from_config()`` reads ``npu_cache.config`` (a torch config module whose defaults
are the ``NPU_CACHE_*`` variables) when a cache is opened, so a process can set the keys
before its first compile; ``Settings.from_env(env)`` parses an explicit environment mapping
the same way (the CLI's and tests' children). Upstream's own flags (force_disable_caches,
file_lock_timeout, the cache directory) are read by policy.py at every call instead.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from npu_inductor_core import env_config as _env

# Our variables.
REDIS_URL = "NPU_CACHE_REDIS_URL"
REDIS_CA_FILE = "NPU_CACHE_REDIS_CA_FILE"
REDIS_CERT_FILE = "NPU_CACHE_REDIS_CERT_FILE"
REDIS_KEY_FILE = "NPU_CACHE_REDIS_KEY_FILE"
REDIS_TIMEOUT = "NPU_CACHE_REDIS_TIMEOUT"
REDIS_COOLDOWN = "NPU_CACHE_REDIS_COOLDOWN"
REDIS_PREFIX = "NPU_CACHE_REDIS_PREFIX"
CACHE_DIR = "NPU_CACHE_DIR"
HMAC_KEY = "NPU_CACHE_HMAC_KEY"
HMAC_KEY_FILE = "NPU_CACHE_HMAC_KEY_FILE"
WRITE_QUEUE = "NPU_CACHE_WRITE_QUEUE"
WRITE_QUEUE_BYTES = "NPU_CACHE_WRITE_QUEUE_BYTES"
EXIT_FLUSH_TIMEOUT = "NPU_CACHE_EXIT_FLUSH_TIMEOUT"
# Upstream's variables, honoured so one Redis setting serves both (remote_cache.py reads them).
UPSTREAM_REDIS_URL = "TORCHINDUCTOR_REDIS_URL"
UPSTREAM_REDIS_HOST = "TORCHINDUCTOR_REDIS_HOST"
UPSTREAM_REDIS_PORT = "TORCHINDUCTOR_REDIS_PORT"
UPSTREAM_CACHE_DIR = "TORCHINDUCTOR_CACHE_DIR"

SCHEMES = ("redis", "rediss", "unix")
_PREFIX_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


class ConfigError(ValueError):
    """A cache setting is invalid; the message names the variable."""


# our variable -> its npu_cache.config key
KEYS = {
    REDIS_URL: "redis_url",
    REDIS_CA_FILE: "redis_ca_file",
    REDIS_CERT_FILE: "redis_cert_file",
    REDIS_KEY_FILE: "redis_key_file",
    REDIS_TIMEOUT: "redis_timeout",
    REDIS_COOLDOWN: "redis_cooldown",
    REDIS_PREFIX: "redis_prefix",
    CACHE_DIR: "cache_dir",
    HMAC_KEY: "hmac_key",
    HMAC_KEY_FILE: "hmac_key_file",
    WRITE_QUEUE: "write_queue",
    WRITE_QUEUE_BYTES: "write_queue_bytes",
    EXIT_FLUSH_TIMEOUT: "exit_flush_timeout",
}


class _Source(dict):
    """Our variables' values (a mapping by variable name) and how a message names each one."""

    def label(self, name: str, raw) -> str:
        return f"${name}={raw!r}"


class _ConfigSource(_Source):
    def label(self, name: str, raw) -> str:
        return f"npu_cache.config.{KEYS[name]}={raw!r} (${name})"


def _config_source() -> _ConfigSource:
    from . import config

    values = _ConfigSource(_env.snapshot())  # upstream's variables, read now
    for name in KEYS:
        values.pop(name, None)
        value = getattr(config, KEYS[name])
        if value is not None:
            values[name] = value
    return values


def _float(env: _Source, name: str, default: float, minimum: float = 0.0) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    label = env.label(name, raw)
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise ConfigError(f"{label} is not a number")
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{label} is not a number") from None
    if value < minimum:
        raise ConfigError(f"{label} must be >= {minimum}")
    return value


def _int(env: _Source, name: str, default: int, minimum: int = 1) -> int:
    return int(_float(env, name, default, minimum))


def _text(env: _Source, name: str) -> str | None:
    raw = env.get(name)
    if raw is not None and not isinstance(raw, str):
        raise ConfigError(f"{env.label(name, raw)} must be a string")
    return raw or None


def _default_cache_dir(env: dict) -> Path:
    # Upstream's cache_dir() also writes $TORCHINDUCTOR_CACHE_DIR into os.environ; we only
    # read, so opening a cache never changes what a cpu/cuda compile sees.
    base = env.get(UPSTREAM_CACHE_DIR)
    if not base:
        try:
            from torch._inductor.runtime.cache_dir_utils import default_cache_dir

            base = default_cache_dir()
        except Exception:  # never fail over a default
            import tempfile

            base = os.path.join(tempfile.gettempdir(), f"torchinductor_uid_{os.getuid()}")
    return Path(base).absolute() / "npu-cache"


def _redis_url(env: dict) -> str | None:
    url = _text(env, REDIS_URL) or env.get(UPSTREAM_REDIS_URL)
    if not url and (env.get(UPSTREAM_REDIS_HOST) or env.get(UPSTREAM_REDIS_PORT)):
        url = f"redis://{env.get(UPSTREAM_REDIS_HOST, 'localhost')}:{env.get(UPSTREAM_REDIS_PORT, '6379')}/0"
    if not url:
        return None
    scheme = urlsplit(url).scheme
    if scheme not in SCHEMES:
        raise ConfigError(
            f"Redis URL scheme {scheme!r} is not one of {', '.join(s + '://' for s in SCHEMES)}"
        )
    return url


def redact(url: str | None) -> str | None:
    """The URL with its password replaced, for logs, stats and the CLI."""
    if not url:
        return url
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, f"{user}:***@{host}", parts.path, parts.query, parts.fragment))


@dataclass(frozen=True)
class Settings:
    redis_url: str | None = None
    redis_ca_file: str | None = None
    redis_cert_file: str | None = None
    redis_key_file: str | None = None
    redis_timeout: float = 1.0  # seconds, per connect and per command
    redis_cooldown: float = 5.0  # seconds the circuit stays open before one retry
    redis_prefix: str = "npu-cache"
    cache_dir: Path | None = None  # None: no local directory cache
    hmac_key: str | None = field(default=None, repr=False)
    hmac_key_file: str | None = None
    write_queue: int = 64  # pending remote writes, entries
    write_queue_bytes: int = 256 << 20  # pending remote writes, bytes
    exit_flush_timeout: float = 10.0

    @classmethod
    def from_config(cls, **overrides) -> "Settings":
        """From ``npu_cache.config`` now (its patches included) and upstream's variables."""
        return cls._parse(_config_source(), overrides)

    @classmethod
    def from_env(cls, env: dict | None = None, **overrides) -> "Settings":
        """From an environment mapping (this process's now when None), as a child process
        given ``env`` would see it; a cache opened in this process uses ``from_config``."""
        return cls._parse(_Source(_env.snapshot() if env is None else env), overrides)

    @classmethod
    def _parse(cls, env: _Source, overrides: dict) -> "Settings":
        prefix = _text(env, REDIS_PREFIX) or "npu-cache"
        if not _PREFIX_RE.match(prefix):
            raise ConfigError(
                f"{env.label(REDIS_PREFIX, prefix)}: use letters, digits, '_', '.', '-'"
            )
        cache_dir = _text(env, CACHE_DIR)
        values = dict(
            redis_url=_redis_url(env),
            redis_ca_file=_text(env, REDIS_CA_FILE),
            redis_cert_file=_text(env, REDIS_CERT_FILE),
            redis_key_file=_text(env, REDIS_KEY_FILE),
            redis_timeout=_float(env, REDIS_TIMEOUT, 1.0, 0.001),
            redis_cooldown=_float(env, REDIS_COOLDOWN, 5.0),
            redis_prefix=prefix,
            # NPU_CACHE_DIR=off (or 0/none) disables the local directory cache
            cache_dir=(
                None
                if cache_dir and cache_dir.lower() in ("off", "0", "none")
                else Path(cache_dir).absolute()
                if cache_dir
                else _default_cache_dir(env)
            ),
            hmac_key=_text(env, HMAC_KEY),
            hmac_key_file=_text(env, HMAC_KEY_FILE),
            write_queue=_int(env, WRITE_QUEUE, 64),
            write_queue_bytes=_int(env, WRITE_QUEUE_BYTES, 256 << 20),
            exit_flush_timeout=_float(env, EXIT_FLUSH_TIMEOUT, 10.0),
        )
        values.update(overrides)
        return cls(**values)
