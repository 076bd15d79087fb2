"""Integrity through the cache: entries that are tampered, truncated, signed with another key,
written by other software or not ours at all are refused, counted by reason, logged, and
never unpickled, whether they sit in the local directory or in Redis."""

import logging
import os
import pickle

import pytest
import redis

from npu_cache import SignedCache, entry, fingerprint, location_of


class SideEffect:
    """Unpickling this creates a directory: proof that a payload was (or was not) unpickled."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def bad_blobs(cache, location, payload):
    good = entry.encode(
        payload,
        location=location,
        secret=cache.key.secret,
        fingerprint=fingerprint.canonical(fingerprint.current()),
    )
    tampered = bytearray(good)
    tampered[-entry.MAC_SIZE - 3] ^= 0xFF  # a byte inside the payload
    foreign_fp = fingerprint.canonical({**fingerprint.current(), "torch": "2.11.0"})
    return {
        entry.BAD_SIGNATURE: bytes(tampered),
        entry.TRUNCATED: good[:-10],
        entry.FOREIGN: entry.encode(
            payload, location=location, secret=cache.key.secret, fingerprint=foreign_fp
        ),
        "other-key": entry.encode(
            payload,
            location=location,
            secret=b"k" * 32,
            fingerprint=fingerprint.canonical(fingerprint.current()),
        ),
        entry.NOT_AN_ENTRY: payload,  # a bare pickle, as upstream's caches store them
    }


EXPECTED_REASON = {"other-key": entry.BAD_SIGNATURE}


def _check(cache, store_write, tmp_path, caplog, where):
    # control: a valid entry with the same kind of payload *is* unpickled (the probe works)
    ok_marker = tmp_path / f"unpickled-{where}-ok"
    cache.put_object("valid", SideEffect(ok_marker))
    cache.flush(10)
    assert cache.get_object("valid") is None  # os.mkdir returns None...
    assert ok_marker.is_dir()  # ...but it ran: the verified payload was unpickled

    for name in (
        entry.BAD_SIGNATURE,
        entry.TRUNCATED,
        entry.FOREIGN,
        "other-key",
        entry.NOT_AN_ENTRY,
    ):
        marker = tmp_path / f"unpickled-{where}-{name}"
        key = f"bad-{name}"
        loc = location_of(cache.kind, key)
        blob = bad_blobs(cache, loc, pickle.dumps(SideEffect(marker)))[name]
        store_write(loc, blob)
        reason = EXPECTED_REASON.get(name, name)
        before = cache.counters[f"refused_{reason}"]
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="npu_cache"):
            assert cache.get_object(key) is None
        assert not marker.exists(), f"{where}: a {name} entry was unpickled"
        assert cache.counters[f"refused_{reason}"] == before + 1
        assert any(reason in r.getMessage() and loc in r.getMessage() for r in caplog.records), (
            caplog.text
        )


@pytest.mark.feature("X01")
def test_local_directory_entries_are_verified_before_unpickling(
    make_settings, writer, tmp_path, caplog
):
    cache = SignedCache("fx-graph", make_settings(), writer=writer, remote=False)
    _check(cache, cache.local.write, tmp_path, caplog, "local")


@pytest.mark.feature("X01")
def test_redis_entries_are_verified_before_unpickling(
    make_settings, writer, redis_url, tmp_path, caplog
):
    cache = SignedCache("fx-graph", make_settings(redis_url), writer=writer, local=False)
    client = redis.Redis.from_url(redis_url)
    _check(
        cache, lambda loc, blob: client.set(cache.remote.key(loc), blob), tmp_path, caplog, "redis"
    )


@pytest.mark.feature("X01")
def test_a_bad_local_entry_falls_through_to_a_good_remote_one(make_settings, writer, redis_url):
    cache = SignedCache("autotune", make_settings(redis_url), writer=writer)
    cache.put("k", b"good")
    cache.flush(10)
    loc = location_of("autotune", "k")
    cache.local.write(loc, cache.local.read(loc)[:-1])  # truncated locally
    assert cache.get("k") == b"good"
    assert cache.counters["refused_truncated"] == 1 and cache.counters["hit_remote"] == 1
    assert (
        cache.get("k") == b"good" and cache.counters["hit_local"] == 1
    )  # the remote hit repaired it
