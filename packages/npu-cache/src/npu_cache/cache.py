"""SignedCache: one kind of entry (fx-graph, autotune, kernel-binary...) in a local directory
and/or Redis, every entry signed and fingerprinted.

get: local directory first, then Redis (a verified remote hit is copied into the local
directory). Only verified payloads leave this class; refused entries are counted by reason,
logged, and read as misses. put: the local write is synchronous (file lock) and the
Redis write goes to the background writer (for a cache without a local directory the
signing happens there too). Remote failures never raise; a local lock
timeout raises :class:`~npu_cache.locks.LockTimeout` (upstream's file_lock_timeout contract).
Both obey ``force_disable_caches`` (policy.py) at every call.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
import re
import threading
from typing import Any

from . import entry, fingerprint, policy, ranks
from .counters import Counters
from .local_store import LocalStore
from .redis_store import RedisStore
from .settings import Settings
from .signing import Key, load_key
from .writer import Writer, get_writer

log = logging.getLogger(__name__)
KIND_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")

_registry_lock = threading.Lock()
_registry: list["SignedCache"] = []  # for npu_cache.stats()


def location_of(kind: str, key: str) -> str:
    return f"{kind}/{hashlib.sha256(key.encode('utf-8')).hexdigest()}"


class SignedCache:
    def __init__(
        self,
        kind: str,
        settings: Settings | None = None,
        *,
        key: Key | None = None,
        writer: Writer | None = None,
        local: bool = True,
        remote: bool = True,
    ):
        if not KIND_RE.match(kind):
            raise ValueError(f"cache kind {kind!r}: use lowercase letters, digits and '-'")
        self.kind = kind
        self.settings = settings = settings or Settings.from_config()
        self.key = key or load_key(settings)
        self.local = LocalStore(settings.cache_dir) if local and settings.cache_dir else None
        self.remote = RedisStore(settings) if remote and settings.redis_url else None
        self._writer = writer
        self.counters = Counters()
        if self.remote is not None:
            self.writer.start()  # here, not in the first put (a no-op once register() started it)
        with _registry_lock:
            _registry.append(self)

    def __repr__(self) -> str:
        return f"SignedCache({self.kind!r}, local={self.local}, remote={self.remote})"

    @property
    def writer(self) -> Writer:
        return self._writer or get_writer()

    def _fp(self) -> bytes:
        return fingerprint.canonical(fingerprint.current())

    def _verify(self, blob: bytes, location: str, where: str) -> bytes | None:
        try:
            return entry.decode(
                blob, location=location, secret=self.key.secret, fingerprint=self._fp()
            )
        except entry.Refused as r:
            self.counters.add(f"refused_{r.reason}")
            log.warning("npu-cache: refused %s entry %s from %s: %s", self.kind, location, where, r)
            return None

    # -- bytes ----------------------------------------------------------------------------
    def get(self, key: str) -> bytes | None:
        """The verified payload stored under ``key``, or None (miss, refused, disabled, down)."""
        if policy.caches_disabled():
            self.counters.add("disabled")
            return None
        location = location_of(self.kind, key)
        share = self._rank_share()
        if self.local is not None:
            try:
                blob = self.local.read(location)
            except OSError as exc:
                self.counters.add("local_error")
                log.warning("npu-cache: cannot read %s: %s", self.local.path(location), exc)
                blob = None
            if blob is not None:
                payload = self._verify(blob, location, "local directory")
                if payload is not None:
                    self.counters.add("hit_local")
                    if share is not None and share.leader:
                        share.leader_hit(location)
                    return payload
        if self.remote is not None:
            payload = self._remote_get(location)
            if payload is not None:
                if share is not None and share.leader:
                    share.leader_hit(location)
                return payload
            if share is not None:
                if share.leader:
                    share.leader_missed(location)
                elif share.follower_wait(location):
                    # rank 0 published it: read Redis again (ranks.py)
                    payload = self._remote_get(location)
                    if payload is not None:
                        ranks.counters.add(f"{self.kind}:served")
                        return payload
        self.counters.add("miss")
        return None

    def _remote_get(self, location: str) -> bytes | None:
        blob = self.remote.read(location)
        if blob is None:
            return None
        payload = self._verify(blob, location, "Redis")
        if payload is not None:
            self.counters.add("hit_remote")
            if self.local is not None:
                self._fill_local(location, blob)
        return payload

    def _rank_share(self) -> "ranks.Coordinator | None":
        """This rank's coordinator for our kind (ranks.py), or None: one compile for all ranks
        needs Redis, a coordinated kind, ``rank_share`` on and a process group."""
        if self.remote is None or self.kind not in ranks.KINDS:
            return None
        return ranks.current()

    def put(self, key: str, payload: bytes, overwrite: bool = True) -> None:
        """Sign and store ``payload``: local now, Redis in the background. ``overwrite=False``
        keeps an entry that is already there (a valid one locally; any one in Redis)."""
        if policy.caches_disabled():
            self.counters.add("disabled")
            return
        location = location_of(self.kind, key)
        payload = bytes(payload)
        if self.local is not None:
            blob = entry.encode(
                payload, location=location, secret=self.key.secret, fingerprint=self._fp()
            )
            if overwrite or not self._valid_local(location):
                self._write_local(location, blob)
            else:
                self.counters.add("put_local_kept")
            job = lambda remote=self.remote: remote.write(location, blob, overwrite)
        else:
            # remote only: signing (HMAC over the payload) happens on the writer thread too, so
            # the caller pays only for queueing
            def job(remote=self.remote):
                return remote.write(
                    location,
                    entry.encode(
                        payload, location=location, secret=self.key.secret, fingerprint=self._fp()
                    ),
                    overwrite,
                )

        if self.remote is not None:
            share = self._rank_share()
            if share is not None and share.leader:
                job = share.leader_put(location, job)  # the followers learn when it is in Redis
            if self.writer.submit(job, len(payload), f"{self.kind} {location}"):
                self.counters.add("put_remote_queued")
            else:
                self.counters.add("put_remote_dropped")
                if share is not None and share.leader:
                    share.leader_put_dropped(location)

    def _valid_local(self, location: str) -> bool:
        try:
            blob = self.local.read(location)
            return (
                blob is not None
                and entry.decode(
                    blob, location=location, secret=self.key.secret, fingerprint=self._fp()
                )
                is not None
            )
        except (OSError, entry.Refused):
            return False

    def _write_local(self, location: str, blob: bytes) -> None:
        try:
            self.local.write(location, blob)
            self.counters.add("put_local")
        except OSError as exc:  # LockTimeout is a TimeoutError, not an OSError: a lock wait past its timeout propagates
            if isinstance(exc, TimeoutError):
                raise
            self.counters.add("local_error")
            log.warning("npu-cache: cannot write %s: %s", self.local.path(location), exc)

    def _fill_local(self, location: str, blob: bytes) -> None:
        # copying a remote hit is an optimisation: a held lock skips it instead of failing the get
        try:
            self._write_local(location, blob)
        except TimeoutError as exc:
            self.counters.add("local_lock_timeout")
            log.warning("%s", exc)

    # -- objects: unpickled only after verification -----------------------------------------
    def get_object(self, key: str) -> Any:
        payload = self.get(key)
        return None if payload is None else pickle.loads(payload)

    def put_object(self, key: str, obj: Any) -> None:
        self.put(key, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))

    def flush(self, timeout: float | None = None) -> bool:
        return self.writer.flush(timeout)

    def stats(self) -> dict:
        out = {"kind": self.kind, **self.counters.snapshot()}
        if self.local is not None:
            out["local"] = str(self.local.root)
        if self.remote is not None:
            out["remote"] = self.remote.stats()
        return out


def all_stats() -> dict:
    """This process's counters: every cache opened so far and the writer."""
    with _registry_lock:
        caches = list(_registry)
    from . import writer as _w

    w = _w._writer
    return {"caches": [c.stats() for c in caches], "writer": w.stats() if w else None}
