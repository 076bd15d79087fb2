"""The settings a cache is opened with, checked, in one place so the README can list them.

``Settings.from_config()`` reads ``npu_cache.config`` (a torch config module whose defaults
are the ``NPU_CACHE_*`` variables) when a cache is opened, so a process can set the keys
before its first compile; ``Settings.from_env(env)`` parses an explicit environment mapping
the same way (the CLI's and tests' children). Upstream's own flags (force_disable_caches,
file_lock_timeout, the cache directory) are read by policy.py at every call instead.

The Redis TLS files and timeout have no variable of their own (issue 35): they go in the Redis
URL's query, as redis-py reads it (``rediss://h:6380/0?ssl_ca_certs=/ca.pem&ssl_certfile=
/c.pem&ssl_keyfile=/k.pem&socket_timeout=2``), or in their config keys (``URL_OPTIONS``).
``Settings`` merges the two: a TLS file given by only one of them is used; given by both, the
values must agree (else ``ConfigError``). ``redis_timeout`` at its default (1.0) yields to the
URL's ``socket_timeout``; set to anything else, it must agree with the URL's too.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit, urlunsplit

from npu_inductor_core import env_config as _env

# Our variables.
REDIS_URL = "NPU_CACHE_REDIS_URL"
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

# npu_cache.config keys with no variable -> the redis-py URL query option that gives the same
# setting (redis-py's parse_url: ssl_* as strings, socket_timeout as a float)
URL_OPTIONS = {
    "redis_ca_file": "ssl_ca_certs",
    "redis_cert_file": "ssl_certfile",
    "redis_key_file": "ssl_keyfile",
    "redis_timeout": "socket_timeout",
}
DEFAULT_REDIS_TIMEOUT = 1.0

SCHEMES = ("redis", "rediss", "unix")
_PREFIX_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


class ConfigError(ValueError):
    """A cache setting is invalid; the message names the variable."""


# our variable -> its npu_cache.config key
KEYS = {
    REDIS_URL: "redis_url",
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
        if name in URL_OPTIONS:  # a key with no variable, held under its own name
            return f"npu_cache.config.{name}={raw!r}"
        return f"npu_cache.config.{KEYS[name]}={raw!r} (${name})"


def _config_source() -> _ConfigSource:
    from . import config

    values = _ConfigSource(_env.snapshot())  # upstream's variables, read now
    for name in KEYS:
        values.pop(name, None)
        value = getattr(config, KEYS[name])
        if value is not None:
            values[name] = value
    for key in URL_OPTIONS:
        values.pop(key, None)
        value = getattr(config, key)
        if value is not None:
            values[key] = value
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


def _url_options(url: str | None) -> dict[str, str]:
    """The ``URL_OPTIONS`` query options of ``url`` as redis-py reads them (the first value of
    each non-empty one), by config key."""
    if not url:
        return {}
    query = parse_qs(urlsplit(url).query)
    return {key: query[opt][0] for key, opt in URL_OPTIONS.items() if query.get(opt)}


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
    redis_timeout: float = DEFAULT_REDIS_TIMEOUT  # seconds, per connect and per command
    redis_cooldown: float = 5.0  # seconds the circuit stays open before one retry
    redis_prefix: str = "npu-cache"
    cache_dir: Path | None = None  # None: no local directory cache
    hmac_key: str | None = field(default=None, repr=False)
    hmac_key_file: str | None = None
    write_queue: int = 64  # pending remote writes, entries
    write_queue_bytes: int = 256 << 20  # pending remote writes, bytes
    exit_flush_timeout: float = 10.0

    def __post_init__(self):
        """Merge the TLS files and timeout given in the Redis URL's query into their fields,
        so these hold what the connection uses; ``ConfigError`` where the two disagree."""
        where = f"the Redis URL {redact(self.redis_url)!r}"
        for key, raw in _url_options(self.redis_url).items():
            opt, ours = URL_OPTIONS[key], getattr(self, key)
            if key == "redis_timeout":
                try:
                    value = float(raw)
                except ValueError:
                    raise ConfigError(f"{where}: {opt}={raw!r} is not a number") from None
                if not value >= 0.001:
                    raise ConfigError(f"{where}: {opt}={raw!r} must be >= 0.001")
                given = ours != DEFAULT_REDIS_TIMEOUT  # the default yields to the URL
            else:
                value, given = raw, ours is not None
            if given and ours != value:
                raise ConfigError(
                    f"npu_cache.config.{key}={ours!r} and {where} ({opt}={raw!r}) disagree: "
                    "give it in one place"
                )
            object.__setattr__(self, key, value)

    @classmethod
    def from_config(cls, **overrides) -> "Settings":
        """From ``npu_cache.config`` now (its patches included) and upstream's variables."""
        return cls._parse(_config_source(), overrides)

    @classmethod
    def from_env(cls, env: dict | None = None, **overrides) -> "Settings":
        """From an environment mapping (this process's now when None), as a child process
        given ``env`` would see it; a cache opened in this process uses ``from_config``."""
        env = _env.snapshot() if env is None else env
        # the keys with no variable are not read from a mapping of variables
        return cls._parse(
            _Source({k: v for k, v in env.items() if k not in URL_OPTIONS}), overrides
        )

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
            # keys only (from_config); the URL's query merges in Settings.__post_init__
            redis_ca_file=_text(env, "redis_ca_file"),
            redis_cert_file=_text(env, "redis_cert_file"),
            redis_key_file=_text(env, "redis_key_file"),
            redis_timeout=_float(env, "redis_timeout", DEFAULT_REDIS_TIMEOUT, 0.001),
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
