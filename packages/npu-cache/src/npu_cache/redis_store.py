"""Signed entries in Redis through redis-py, configured by URL; never raises, never hangs.

URLs: redis://[[user]:password@]host:port/db, rediss://... (TLS; the CA from
``?ssl_ca_certs=`` or the ``redis_ca_file`` key, a client certificate from ``?ssl_certfile=`` /
``?ssl_keyfile=`` or ``redis_cert_file`` / ``redis_key_file``), unix:///path; the timeout from
``?socket_timeout=`` or ``redis_timeout``. ``Settings`` has merged these query options into its
fields already (a disagreement is its ``ConfigError``), so the connect and command timeouts
are one value; other query options win over ours (redis-py's rule).

Every call is bounded by the connect and command timeouts (no redis-py retries: one try per
call, so a get waits at most about 2 x timeout) and guarded by a circuit breaker, so a dead,
slow or misconfigured server costs a compile one timeout per cool-down, not one per lookup.
Failures become misses and counters, logged once per outage.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

from .breaker import Breaker
from .counters import Counters
from .settings import Settings, redact

log = logging.getLogger(__name__)
LAYOUT = "v1"


def _classify(exc: BaseException) -> tuple[str, bool]:
    """(counter name, whether the server is unusable and the circuit should open)."""
    import redis

    e = redis.exceptions
    if isinstance(exc, e.TimeoutError):
        return "timeout", True
    if isinstance(exc, (e.AuthenticationError, e.AuthorizationError)):
        return "auth", True  # wrong user/password: every call would fail the same way
    if isinstance(exc, (e.ConnectionError, OSError)):
        return "connection", True
    if isinstance(exc, e.NoPermissionError):
        return "denied", False  # an ACL refused this key or command; the server is fine
    if isinstance(exc, e.ResponseError):
        return "rejected", False
    return "error", True


class RedisStore:
    def __init__(self, settings: Settings):
        if not settings.redis_url:
            raise ValueError("RedisStore needs a Redis URL")
        self.url = settings.redis_url
        self.timeout = settings.redis_timeout
        self.prefix = f"{settings.redis_prefix}:{LAYOUT}:"
        self._settings = settings
        self.breaker = Breaker(settings.redis_cooldown)
        self.counters = Counters()
        self.last_error: str | None = None
        self._client = None
        self._client_lock = threading.Lock()
        self._warned: set[tuple[str, str]] = set()

    def __repr__(self) -> str:
        return f"RedisStore({redact(self.url)!r})"

    # -- connection -----------------------------------------------------------------------
    def _connect(self):
        with self._client_lock:
            if self._client is None:
                import redis
                from redis.backoff import NoBackoff
                from redis.retry import Retry

                kwargs = dict(
                    socket_timeout=self.timeout,
                    socket_connect_timeout=self.timeout,
                    retry=Retry(NoBackoff(), 0),
                    health_check_interval=0,
                )
                s = self._settings
                if s.redis_ca_file:
                    kwargs["ssl_ca_certs"] = s.redis_ca_file
                if s.redis_cert_file:
                    kwargs["ssl_certfile"] = s.redis_cert_file
                if s.redis_key_file:
                    kwargs["ssl_keyfile"] = s.redis_key_file
                if not self.url.startswith("rediss://"):
                    kwargs = {k: v for k, v in kwargs.items() if not k.startswith("ssl_")}
                # from_url does not connect: an absent server shows up at the first call
                self._client = redis.Redis.from_url(self.url, **kwargs)
            return self._client

    def _call(self, op: str, fn, default=None):
        """Run ``fn(client)`` under the breaker; on any failure count it and return ``default``."""
        if not self.breaker.allow():
            self.counters.add(f"{op}_skipped")  # circuit open: answered without the server
            return default
        try:
            result = fn(self._connect())
        except Exception as exc:
            kind, down = _classify(exc)
            self.counters.add(f"{op}_{kind}")
            self.last_error = f"{op}: {kind}: {type(exc).__name__}: {exc}"
            if not down:
                self.breaker.success()
                if (op, kind) not in self._warned:
                    self._warned.add((op, kind))
                    log.warning(
                        "npu-cache: Redis %s refused a %s: %s",
                        redact(self.url),
                        op,
                        self.last_error,
                    )
                return default
            was_closed = self.breaker.state == "closed"
            self.breaker.failure()
            if was_closed:  # once per outage; failed trials after a cool-down only count
                log.warning(
                    "npu-cache: Redis %s unusable (%s); skipping it for %gs",
                    redact(self.url),
                    self.last_error,
                    self.breaker.cooldown,
                )
            return default
        if self.breaker.state != "closed":
            log.warning("npu-cache: Redis %s reachable again", redact(self.url))
        self.breaker.success()
        return result

    # -- entries --------------------------------------------------------------------------
    def key(self, location: str) -> str:
        kind, digest = location.split("/", 1)
        return f"{self.prefix}{kind}:{digest}"

    def location(self, key: str) -> str | None:
        rest = key[len(self.prefix) :] if key.startswith(self.prefix) else None
        if rest is None or ":" not in rest:
            return None
        kind, digest = rest.split(":", 1)
        return f"{kind}/{digest}"

    def read(self, location: str) -> bytes | None:
        value = self._call("get", lambda c: c.get(self.key(location)))
        if value is not None:
            self.counters.add("get_ok")
        return value

    def write(self, location: str, blob: bytes, overwrite: bool = True) -> bool:
        """True when stored, or kept because ``overwrite`` is off and an entry exists (SET NX:
        one atomic call, so two writers racing keep the first)."""
        result = self._call(
            "put",
            lambda c: c.set(self.key(location), blob, nx=not overwrite) or "kept",
            default=False,
        )
        if result == "kept":
            self.counters.add("put_kept")
            return True
        if result:
            self.counters.add("put_ok")
        return bool(result)

    def delete(self, location: str) -> bool:
        return bool(self._call("delete", lambda c: c.unlink(self.key(location)), default=0))

    def ping(self) -> bool:
        return bool(self._call("ping", lambda c: c.ping(), default=False))

    def locations(self, kind: str | None = None) -> Iterator[str]:
        """Every entry under our prefix (SCAN, never KEYS: the server stays responsive)."""
        pattern = f"{self.prefix}{kind}:*" if kind else f"{self.prefix}*"
        keys = self._call(
            "scan", lambda c: list(c.scan_iter(match=pattern, count=1000)), default=[]
        )
        for key in sorted(k.decode() if isinstance(k, bytes) else k for k in keys):
            loc = self.location(key)
            if loc:
                yield loc

    def size(self, location: str) -> int:
        return int(self._call("strlen", lambda c: c.strlen(self.key(location)), default=0))

    def server_info(self) -> dict | None:
        info = self._call("info", lambda c: c.info("server"))
        return {"redis_version": info.get("redis_version")} if info else None

    def stats(self) -> dict:
        return {
            "url": redact(self.url),
            "circuit": self.breaker.state,
            "circuit_opened": self.breaker.opened,
            "circuit_recovered": self.breaker.recovered,
            "last_error": self.last_error,
            **self.counters.snapshot(),
        }
