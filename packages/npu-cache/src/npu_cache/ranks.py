"""One compile for all ranks: rank 0 compiles, the other ranks wait for its entries.

Without this, every rank of a distributed job compiles the same graphs at the same time, and
every rank misses the shared Redis (nothing is there yet). With ``rank_share`` on
(``$NPU_CACHE_RANK_SHARE=1``), a default process group of two or more ranks and a Redis URL,
a rank > 0 whose lookup misses waits, bounded, for rank 0 to publish that entry and then
reads it from Redis. The coordination runs on torch.distributed's own store (the default
process group's TCPStore / FileStore, under the prefix ``npu-cache/``): no second
rendezvous.

Protocol, per entry location (``<kind>/<sha256(key)>``, as in Redis):

- rank 0 (the leader) never waits. A miss of its own is remembered; when its put of that
  entry has reached Redis (on the background writer, after ``SET NX``) it sets
  ``done/<location>`` = ``put`` (``failed`` when the write failed or was dropped). A hit
  sets ``hit`` (the entry is in the cache already). A remembered miss with no put by the end
  of the compile it was made in (the compile bypassed the cache, or failed) sets ``none``.
- a rank > 0 (a follower), on a miss, waits at most ``rank_share_timeout`` seconds for
  ``done/<location>`` (polling the store; Redis is never polled). On ``put``/``hit`` it reads
  Redis again: a hit is counted ``served``. Anything else, or the timeout, and it compiles
  itself (``timeout``, ``not_published``). After a timeout it stops waiting for that kind
  in this process (``gave_up``): keys rank 0 never looks up (a rank-specific graph) cost
  one timeout, not one per graph.
- keys that hold the device index (``fx-graph``, ``aot-autograd``: upstream hashes the
  inputs' devices) cannot match when rank 0 compiles for another device index
  (``torch.npu.set_device(local_rank)`` instead of one visible device per rank): a follower
  compares its current device with rank 0's (``device/0`` in the store) and then waits only
  for the device-free kinds (``kernel-binary``, ``gemm-autotune``); counted ``other_device``.
- while ``distributed_max_autotune_gemm`` is on a compile talks to the other ranks itself
  (they tune GEMMs together): followers do not wait then (``skipped_collective_compile``).

Kinds coordinated: those written while a graph compiles, before it runs (a wait for an
entry written after a collective could only time out): ``fx-graph``, ``aot-autograd``,
``kernel-binary``, ``gemm-autotune``. Upstream's pointwise ``autotune`` entries are
written after the first run and are not waited for. A training graph's AOTAutograd entry is
saved at its first backward (torch 2.13), after ``compile_fx`` returned: rank 0 publishes
``none`` for it when ``compile_fx`` ends, and the other ranks trace AOTAutograd themselves
(then hit the FX graphs); inference entries are shared.

Counters: ``npu_cache.stats()["ranks"]`` (this rank: role, rank, world size, per-kind
counters, seconds waited); ``npu_cache.rank_hits()`` adds the hits of every cache per kind.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable

from .counters import Counters

log = logging.getLogger(__name__)

KINDS = frozenset({"fx-graph", "aot-autograd", "kernel-binary", "gemm-autotune"})
DEVICE_KEYED = frozenset({"fx-graph", "aot-autograd"})  # upstream hashes the inputs' device index
PREFIX = "npu-cache/"
POLL_S = 0.02  # the store is polled (check), never held in a blocking wait: the writer thread sets keys on it

counters = Counters()  # this process's rank-sharing counters, by "<kind>:<name>" and totals
_wait_s = [0.0]
_lock = threading.Lock()
_current: list = [None, None]  # [the process group it was made for, Coordinator]
_installed: list = [None]  # use()


def enabled() -> bool:
    """``npu_cache.config.rank_share``, checked (a bad value raises ValueError naming the key)."""
    from npu_inductor_core import env_config

    from . import config

    return env_config.check(
        config, "rank_share", env_config.is_bool, "True or False", "NPU_CACHE_RANK_SHARE"
    )


def timeout_s() -> float:
    from npu_inductor_core import env_config

    from . import config

    return float(
        env_config.check(
            config,
            "rank_share_timeout",
            env_config.is_number,
            "a number >= 0",
            "NPU_CACHE_RANK_SHARE_TIMEOUT",
        )
    )


class Coordinator:
    """Rank sharing on one store. ``rank`` 0 leads; ``device_index`` is this rank's current
    device index (None: unknown, treated as matching)."""

    def __init__(self, store, rank: int, world: int, device_index: int | None = None):
        self.store, self.rank, self.world, self.device_index = store, rank, world, device_index
        self._owed: dict[str, bool] = {}  # leader: location missed -> a put of it was queued
        self._owed_lock = threading.Lock()
        self._gave_up: set[str] = set()
        self._same_device: bool | None = None
        if rank == 0:
            self._set("device/0", "" if device_index is None else str(device_index))

    @property
    def leader(self) -> bool:
        return self.rank == 0

    def _set(self, key: str, value: str) -> None:
        try:
            self.store.set(key, value)
        except Exception as exc:  # the store is the job's: a failure here must not fail a compile
            counters.add("store_error")
            log.warning("npu-cache: rank sharing could not set %s on the store: %s", key, exc)

    # -- leader ------------------------------------------------------------------------------
    def leader_hit(self, location: str) -> None:
        self._set(f"done/{location}", "hit")
        counters.add(f"{location.split('/', 1)[0]}:published_hit")

    def leader_missed(self, location: str) -> None:
        with self._owed_lock:
            self._owed.setdefault(location, False)

    def leader_put(self, location: str, job: Callable[[], bool]) -> Callable[[], bool]:
        """The writer job for ``location``, publishing to the followers once it ran."""
        with self._owed_lock:
            self._owed[location] = True

        def publishing_job():
            ok = False
            try:
                ok = job() is not False
                return ok
            finally:
                self._published(location, "put" if ok else "failed")

        return publishing_job

    def leader_put_dropped(self, location: str) -> None:
        self._published(location, "failed")

    def _published(self, location: str, how: str) -> None:
        with self._owed_lock:
            self._owed.pop(location, None)
        self._set(f"done/{location}", how)
        counters.add(f"{location.split('/', 1)[0]}:published_{how}")
        counters.add("published")

    def owed(self) -> set[str]:
        with self._owed_lock:
            return set(self._owed)

    def end_of_graph(self, before: set[str] = frozenset()) -> None:
        """Leader: misses made since ``owed()`` gave ``before`` (during one compile) that no put
        was queued for will never be published."""
        with self._owed_lock:
            unput = [loc for loc, queued in self._owed.items() if not queued and loc not in before]
        for loc in unput:
            self._published(loc, "none")

    # -- follower ----------------------------------------------------------------------------
    def _device_matches(self, deadline: float) -> bool:
        if self._same_device is None:
            got = self._poll("device/0", deadline)
            if got is None:
                return False  # rank 0 has not started any coordinated lookup: treated as a miss
            theirs = got.decode() or None
            self._same_device = (
                theirs is None or self.device_index is None or int(theirs) == self.device_index
            )
        return self._same_device

    def _poll(self, key: str, deadline: float) -> bytes | None:
        while True:
            try:
                if self.store.check([key]):
                    return self.store.get(key)
            except Exception as exc:
                counters.add("store_error")
                log.warning(
                    "npu-cache: rank sharing could not read %s from the store: %s", key, exc
                )
                return None
            if time.monotonic() >= deadline:
                return None
            time.sleep(POLL_S)

    def follower_wait(self, location: str) -> bool:
        """After a miss of ``location``: True when rank 0 has published it (read Redis again)."""
        kind = location.split("/", 1)[0]
        if kind in self._gave_up:
            counters.add(f"{kind}:not_waited_gave_up")
            return False
        if _collective_compile():
            counters.add(f"{kind}:skipped_collective_compile")
            return False
        start = time.monotonic()
        deadline = start + timeout_s()
        try:
            if kind in DEVICE_KEYED and not self._device_matches(deadline):
                counters.add(
                    f"{kind}:other_device" if self._same_device is False else f"{kind}:timeout"
                )
                if self._same_device is None:
                    self._give_up(kind)
                return False
            how = self._poll(f"done/{location}", deadline)
        finally:
            waited = time.monotonic() - start
            with _lock:
                _wait_s[0] += waited
        counters.add(f"{kind}:waited")
        if how is None:
            counters.add(f"{kind}:timeout")
            self._give_up(kind)
            return False
        if how.decode() in ("put", "hit"):
            return True
        counters.add(f"{kind}:not_published")
        return False

    def _give_up(self, kind: str) -> None:
        if kind not in self._gave_up:
            self._gave_up.add(kind)
            counters.add(f"{kind}:gave_up")
            log.warning(
                "npu-cache: rank %d waited %gs for rank 0's %s entry in vain; it compiles %s entries "
                "itself from now on (npu_cache.config.rank_share_timeout)",
                self.rank,
                timeout_s(),
                kind,
                kind,
            )


def _collective_compile() -> bool:
    import sys

    config = sys.modules.get("torch._inductor.config")  # not imported: no Inductor compile runs
    return bool(getattr(config, "distributed_max_autotune_gemm", False))


def _device_index() -> int | None:
    try:
        import torch

        mod = getattr(torch, "npu", None)
        return int(mod.current_device()) if mod is not None and mod.is_available() else None
    except Exception:
        return None


def current() -> Coordinator | None:
    """This rank's coordinator, or None (the flag off, no process group of 2+ ranks, or no
    store). Cheap when off: the flag is read first."""
    if not enabled():
        return None
    with _lock:
        if _installed[0] is not None:
            return _installed[0]
    try:
        import torch.distributed as dist
        from torch.distributed import distributed_c10d as c10d

        if not dist.is_available() or not dist.is_initialized():
            return None
        group = c10d._get_default_group()
    except Exception:
        return None
    with _lock:
        if _current[0] is group:
            return _current[1]
    world = dist.get_world_size()
    coordinator = None
    if world > 1:
        try:
            store = dist.PrefixStore(PREFIX, c10d._get_default_store())
            coordinator = Coordinator(store, dist.get_rank(), world, _device_index())
        except Exception as exc:
            log.warning(
                "npu-cache: rank sharing off: no store of the default process group (%s)", exc
            )
    with _lock:
        _current[:] = [group, coordinator]
    return coordinator


def use(coordinator: Coordinator | None) -> None:
    """Use ``coordinator`` in this process instead of one made from the default process group
    (a job coordinating on a store of its own; tests); None goes back to the default. The
    ``rank_share`` flag still decides whether it is used."""
    with _lock:
        _installed[0] = coordinator


def _active() -> Coordinator | None:
    with _lock:
        return _installed[0] or _current[1]


def graph_context(gm, example_inputs):
    """Around each ``compile_fx`` and each graph it compiles (npu-inductor-core's
    ``around_compile_fx`` / ``around_compile_graph``): at its end the leader publishes ``none``
    for the misses made inside it that nothing was put for (AOTAutograd's entry is put by
    ``compile_fx`` after its graphs: the outer context answers for it). None (no context)
    unless this rank leads."""
    coordinator = current()
    if coordinator is None or not coordinator.leader:
        return None

    @contextlib.contextmanager
    def ctx():
        before = coordinator.owed()
        try:
            yield
        finally:
            coordinator.end_of_graph(before)

    return ctx()


def stats() -> dict | None:
    """This rank's counters (None when rank sharing never ran in this process)."""
    coordinator, waited = _active(), seconds_waited()
    snap = counters.snapshot()
    if coordinator is None and not snap:
        return None
    out: dict = {"seconds_waited": round(waited, 6), "counters": snap}
    if coordinator is not None:
        out.update(
            rank=coordinator.rank,
            world=coordinator.world,
            role="leader" if coordinator.leader else "follower",
        )
    return out


def seconds_waited() -> float:
    with _lock:
        return _wait_s[0]


def reset() -> None:
    """Forget the coordinator and the counters (tests)."""
    with _lock:
        _current[:] = [None, None]
        _installed[0] = None
        _wait_s[0] = 0.0
    counters.clear()
