"""``npu-inductor cache stats|verify|clear`` through the real CLI and its entry point."""

import json
import os
import pickle

import pytest
import redis
from npu_inductor import cli

from npu_cache import SignedCache, entry, fingerprint, location_of


class SideEffect:
    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (os.mkdir, (self.path,))


@pytest.fixture
def populated(make_settings, writer, redis_url, monkeypatch, tmp_path):
    s = make_settings(redis_url)
    monkeypatch.setenv("NPU_CACHE_REDIS_URL", redis_url)
    monkeypatch.setenv("NPU_CACHE_REDIS_PREFIX", s.redis_prefix)
    monkeypatch.setenv("NPU_CACHE_DIR", str(s.cache_dir))
    monkeypatch.setenv("NPU_CACHE_HMAC_KEY", s.hmac_key)
    fx = SignedCache("fx-graph", s, writer=writer)
    kb = SignedCache("kernel-binary", s, writer=writer)
    for i in range(3):
        fx.put(f"g{i}", pickle.dumps(SideEffect(tmp_path / f"unpickled-g{i}")))
    kb.put("k0", b"binary")
    assert writer.flush(10)
    return s, fx, kb


def run(capsys, *argv):
    code = cli.main(["cache", *argv])
    out = capsys.readouterr().out
    return code, (json.loads(out) if "--json" in argv else out)


def test_the_command_is_an_entry_point():
    assert "cache" in cli._commands()


def test_stats(populated, capsys):
    code, data = run(capsys, "stats", "--json")
    assert code == 0
    for where in ("local", "remote"):
        st = data["stores"][where]
        assert st["reachable"] and st["entries"] == 4
        assert (
            st["kinds"]["fx-graph"]["entries"] == 3 and st["kinds"]["kernel-binary"]["entries"] == 1
        )
        assert st["kinds"]["kernel-binary"]["bytes"] > len(b"binary")
    assert data["stores"]["remote"]["server"]["redis_version"]
    assert data["fingerprint"] == fingerprint.current()
    code, text = run(capsys, "stats", "--kind", "kernel-binary", "--where", "local")
    assert (
        code == 0
        and "local       1 entries" in text
        and "remote" not in text.split("fingerprint")[1]
    )


@pytest.mark.feature("X01")
def test_verify_reports_every_bad_entry_without_unpickling(populated, capsys, tmp_path):
    s, fx, kb = populated
    assert run(capsys, "verify", "--json")[0] == 0
    # truncate a local entry, tamper with a Redis entry, plant a foreign one and a bare pickle
    loc0, loc1, loc2 = (location_of("fx-graph", f"g{i}") for i in range(3))
    fx.local.write(loc0, fx.local.read(loc0)[:-5])
    client = redis.Redis.from_url(s.redis_url)
    blob = bytearray(client.get(fx.remote.key(loc1)))
    blob[40] ^= 0xFF
    client.set(fx.remote.key(loc1), bytes(blob))
    foreign = entry.encode(
        b"x",
        location=loc2,
        secret=fx.key.secret,
        fingerprint=fingerprint.canonical({**fingerprint.current(), "cann": "7.0"}),
    )
    client.set(fx.remote.key(loc2), foreign)
    client.set(
        fx.remote.key("fx-graph/" + "e" * 64), pickle.dumps(SideEffect(tmp_path / "unpickled-bare"))
    )

    code, data = run(capsys, "verify", "--json")
    assert code == 1 and data["status"] == "bad entries"
    local, remote = data["stores"]["local"], data["stores"]["remote"]
    assert local["checked"] == 4 and [(b["location"], b["reason"]) for b in local["bad"]] == [
        (loc0, "truncated")
    ]
    assert remote["checked"] == 5 and sorted(
        (b["location"], b["reason"]) for b in remote["bad"]
    ) == sorted(
        [
            (loc1, "bad-signature"),
            (loc2, "foreign-fingerprint"),
            ("fx-graph/" + "e" * 64, "not-an-entry"),
        ]
    )
    assert "cann='7.0'" in next(b["detail"] for b in remote["bad"] if b["location"] == loc2)
    assert not list(tmp_path.glob("unpickled-*"))  # verify never unpickles

    code, text = run(capsys, "verify")
    assert code == 1 and text.count("BAD ") == 4 and "bad-signature" in text

    code, data = run(capsys, "verify", "--delete-bad", "--json")
    assert code == 1 and all(
        b["deleted"] for w in ("local", "remote") for b in data["stores"][w]["bad"]
    )
    code, data = run(capsys, "verify", "--json")
    assert (
        code == 0
        and data["stores"]["local"]["checked"] == 3
        and data["stores"]["remote"]["checked"] == 2
    )


def test_verify_with_another_key_flags_everything(populated, capsys, monkeypatch):
    monkeypatch.setenv("NPU_CACHE_HMAC_KEY", "a different key for this process")
    code, data = run(capsys, "verify", "--json", "--where", "remote")
    assert code == 1 and {b["reason"] for b in data["stores"]["remote"]["bad"]} == {"bad-signature"}
    assert "local" not in data["stores"]


def test_clear(populated, capsys):
    code, data = run(capsys, "clear", "--kind", "fx-graph", "--json")
    assert (
        code == 0
        and data["stores"]["local"]["deleted"] == 3
        and data["stores"]["remote"]["deleted"] == 3
    )
    code, data = run(capsys, "stats", "--json")
    assert data["stores"]["local"]["entries"] == 1 and data["stores"]["remote"]["entries"] == 1
    assert run(capsys, "clear", "--json")[1]["stores"]["remote"]["deleted"] == 1
    assert run(capsys, "stats", "--json")[1]["stores"]["remote"]["entries"] == 0


def test_unreachable_redis_and_missing_key(populated, capsys, monkeypatch, free_port, tmp_path):
    monkeypatch.setenv("NPU_CACHE_REDIS_URL", f"redis://u:hidden@127.0.0.1:{free_port()}/0")
    code, data = run(capsys, "verify", "--json")
    assert code == 2 and data["stores"]["remote"]["reachable"] is False
    assert data["stores"]["local"]["checked"] == 4
    assert "hidden" not in json.dumps(data)
    monkeypatch.delenv("NPU_CACHE_HMAC_KEY")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "empty-config"))
    code, text = run(capsys, "verify")
    assert code == 2 and "no cache HMAC key" in text
    assert not (tmp_path / "empty-config").exists()  # verify does not invent a key
