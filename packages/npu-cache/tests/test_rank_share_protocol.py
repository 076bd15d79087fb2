"""ranks.py's protocol in one process: a leader and a follower SignedCache on one Redis and one
store (torch.distributed's HashStore, the in-memory Store), threads standing in for ranks.
The two-rank compiles on npu-sim are test_rank_share.py."""

from __future__ import annotations

import threading
import time

import pytest
import torch.distributed as dist

from npu_cache import config, ranks
from npu_cache.cache import SignedCache, location_of
from npu_cache.writer import Writer


@pytest.fixture
def share(make_settings, redis_url):
    """(leader cache, follower cache, leader, follower) for ``kind``, rank sharing on."""
    made = []

    def make(kind="fx-graph", leader_device=0, follower_device=0, timeout=10.0):
        settings = make_settings(redis_url, cache_dir=None)
        store = dist.HashStore()
        lead = ranks.Coordinator(store, 0, 2, leader_device)
        follow = ranks.Coordinator(store, 1, 2, follower_device)
        w = Writer()
        caches = [SignedCache(kind, settings, writer=w, local=False) for _ in range(2)]
        for cache, coordinator in zip(caches, (lead, follow)):  # each "rank" its own coordinator
            cache._rank_share = lambda c=coordinator, k=kind: c if k in ranks.KINDS else None
        made.append(w)
        return caches, lead, follow

    ranks.reset()
    with config.patch(rank_share=True, rank_share_timeout=10.0):
        yield make
    ranks.reset()
    for w in made:
        w.flush(10)


def test_follower_waits_for_the_leaders_put_and_hits_it(share):
    (c0, c1), lead, follow = share()
    assert c0.get("k") is None  # the leader's miss: remembered
    got = []
    t = threading.Thread(target=lambda: got.append(c1.get("k")))
    t.start()
    time.sleep(0.3)
    c0.put("k", b"rank 0's entry")
    t.join(10)
    assert got == [b"rank 0's entry"]
    snap = ranks.counters.snapshot()
    assert snap["fx-graph:served"] == 1 and snap["fx-graph:waited"] == 1
    assert snap["fx-graph:published_put"] == 1
    assert ranks.seconds_waited() >= 0.25


def test_leader_publishes_none_for_a_miss_it_never_puts(share):
    (c0, c1), lead, follow = share()
    ranks.use(lead)  # the per-compile hook finds the leader through ranks.current()
    try:
        c0.get("outer")  # missed before this compile started (AOTAutograd's, around compile_fx)
        with ranks.graph_context(None, None):
            c0.get("bypassed")  # missed in this compile, never put
    finally:
        ranks.use(None)
    start = time.monotonic()
    assert c1.get("bypassed") is None
    assert time.monotonic() - start < 2  # told, not timed out
    assert ranks.counters["fx-graph:not_published"] == 1 and ranks.counters["fx-graph:timeout"] == 0
    assert lead.owed() == {location_of("fx-graph", "outer")}  # the outer compile answers for it
    assert ranks.graph_context(None, None) is None  # no coordinator here: no context


def test_leader_hit_releases_the_follower(share):
    (c0, c1), lead, follow = share()
    c0.put("k", b"old")
    c0.flush(10)
    assert c1.get("k") == b"old"  # in Redis already: no wait at all
    assert ranks.counters["fx-graph:waited"] == 0


def test_timeout_then_the_follower_stops_waiting_for_that_kind(share):
    (c0, c1), lead, follow = share()
    with config.patch(rank_share_timeout=0.3):
        start = time.monotonic()
        assert c1.get("never") is None
        assert c1.get("never-either") is None
        took = time.monotonic() - start
    assert 0.3 <= took < 1.5, took  # one timeout, not two
    snap = ranks.counters.snapshot()
    assert snap["fx-graph:timeout"] == 1 and snap["fx-graph:gave_up"] == 1
    assert snap["fx-graph:not_waited_gave_up"] == 1


def test_device_keyed_kinds_are_not_waited_for_across_device_indices(share):
    (c0, c1), lead, follow = share("fx-graph", leader_device=0, follower_device=1)
    start = time.monotonic()
    assert c1.get("k") is None
    assert time.monotonic() - start < 1
    assert ranks.counters["fx-graph:other_device"] == 1
    # kernel keys hold no device index: waited for
    (k0, k1), lead, follow = share("kernel-binary", leader_device=0, follower_device=1)
    k0.get("kern")
    k0.put("kern", b"descriptor")
    assert k1.get("kern") == b"descriptor"


def test_no_wait_while_ranks_tune_gemms_together(share):
    from torch._inductor import config as inductor_config

    (c0, c1), lead, follow = share("gemm-autotune")
    with inductor_config.patch(distributed_max_autotune_gemm=True):
        start = time.monotonic()
        assert c1.get("g") is None
        assert time.monotonic() - start < 1
    assert ranks.counters["gemm-autotune:skipped_collective_compile"] == 1


def test_off_by_default_and_without_a_process_group(share, redis_url, make_settings):
    # the flag off: no coordinator, whatever is installed
    with config.patch(rank_share=False):
        ranks.use(ranks.Coordinator(dist.HashStore(), 1, 2))
        assert ranks.current() is None
        ranks.use(None)
    # on, but one process without a process group: nothing changes
    assert not dist.is_initialized()
    assert ranks.current() is None
    cache = SignedCache("fx-graph", make_settings(redis_url, cache_dir=None), local=False)
    start = time.monotonic()
    assert cache.get("absent") is None and time.monotonic() - start < 1
    assert ranks.stats() is None


def test_a_bad_flag_names_its_variable(share):
    with (
        config.patch(rank_share="yes"),
        pytest.raises(ValueError, match=r"rank_share \(\$NPU_CACHE_RANK_SHARE\)"),
    ):
        ranks.current()


def test_kinds_written_after_a_run_are_not_coordinated(share):
    (c0, c1), lead, follow = share("autotune")
    start = time.monotonic()
    assert c1.get("cfg") is None
    assert time.monotonic() - start < 1 and ranks.counters.snapshot() == {}


def test_location_is_the_redis_entrys():
    assert location_of("fx-graph", "k").startswith("fx-graph/")
