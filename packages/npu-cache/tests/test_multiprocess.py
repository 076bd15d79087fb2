"""Several processes writing and reading the same keys in one Redis and one local directory at
the same moment: every read is a whole, verified entry, and every stored entry verifies."""

import hashlib
import json
import os
import subprocess
import sys
import textwrap

from npu_cache import SignedCache, entry

PROCS, KEYS, ROUNDS = 4, 12, 3

SCRIPT = textwrap.dedent("""
    import hashlib, json, os, sys, time
    import npu_cache
    from npu_cache import fingerprint, policy
    me, barrier, keys, rounds, procs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    policy.caches_disabled(), fingerprint.current()
    cache = npu_cache.open_cache("fx-graph")
    open(os.path.join(barrier, str(me)), "w").close()
    while len(os.listdir(barrier)) < procs:  # all processes start writing together
        time.sleep(0.01)
    seen = bad = 0
    for r in range(rounds):
        for k in range(keys):
            body = os.urandom(32 * 1024 + 997 * k + 13 * me)  # sizes differ: a torn write shows
            cache.put(f"key-{k}", f"{me}:{k}:".encode() + hashlib.sha256(body).digest() + body)
            got = cache.get(f"key-{(k + me) % keys}")
            if got is not None:
                seen += 1
                who, kk, rest = got.split(b":", 2)
                bad += int(kk) != (k + me) % keys or hashlib.sha256(rest[32:]).digest() != rest[:32]
    assert npu_cache.flush(60)
    st = npu_cache.stats()
    print(json.dumps({"seen": seen, "bad": bad, "caches": st["caches"], "writer": st["writer"],
                      "fp": fingerprint.canonical(fingerprint.current()).hex()}))
""")


def test_processes_sharing_one_redis_and_one_directory(make_settings, redis_url, tmp_path, writer):
    s = make_settings(redis_url)
    env = dict(
        os.environ,
        NPU_CACHE_REDIS_URL=f"{redis_url}?socket_timeout=10",
        NPU_CACHE_REDIS_PREFIX=s.redis_prefix,
        NPU_CACHE_DIR=str(s.cache_dir),
        NPU_CACHE_HMAC_KEY=s.hmac_key,
    )
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                SCRIPT,
                str(i),
                str(barrier),
                str(KEYS),
                str(ROUNDS),
                str(PROCS),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i in range(PROCS)
    ]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))

    for r in results:
        assert r["bad"] == 0
        (c,) = r["caches"]
        assert not [k for k in c if k.startswith("refused_")], (
            c
        )  # no process ever read a broken entry
        assert c["remote"]["circuit"] == "closed" and c["remote"]["put_ok"] == KEYS * ROUNDS
        assert r["writer"]["written"] == KEYS * ROUNDS and r["writer"].get("dropped", 0) == 0
    assert sum(r["seen"] for r in results) > 0

    # every stored entry, in both stores, is whole and verifies
    cache = SignedCache("fx-graph", s, writer=writer)
    # the writers' fingerprint: this process may have a device up (its SoC is part of ours)
    fp = bytes.fromhex(results[0]["fp"])
    assert all(r["fp"] == results[0]["fp"] for r in results)
    for store in (cache.local, cache.remote):
        locations = list(store.locations("fx-graph"))
        assert len(locations) == KEYS, store
        for loc in locations:
            payload = entry.decode(
                store.read(loc), location=loc, secret=cache.key.secret, fingerprint=fp
            )
            who, k, rest = payload.split(b":", 2)
            assert int(who) in range(PROCS) and loc.endswith(
                hashlib.sha256(f"key-{int(k)}".encode()).hexdigest()
            )
            assert hashlib.sha256(rest[32:]).digest() == rest[:32]
    leftovers = [p for p in s.cache_dir.rglob("*") if p.name.endswith(".tmp")]
    assert not leftovers


def test_eight_processes_compiling_one_model_on_one_directory_and_one_redis(
    npu_job, tmp_path, monkeypatch, capsys, npu
):
    # issue 7 item 8: eight fresh processes compile the same npu model at the same time on one
    # Inductor directory, one npu-cache directory and one Redis: every compile succeeds with
    # eager's result, and afterwards every stored entry (local and Redis) verifies
    from concurrent.futures import ThreadPoolExecutor

    from npu_inductor import cli

    shared = tmp_path / "npu-cache"
    env = {"NPU_CACHE_DIR": str(shared)}
    spec = {
        "fn": "two_kernels",
        "inductor": {"fx_graph_remote_cache": True, "autotune_remote_cache": True},
    }
    with ThreadPoolExecutor(8) as pool:
        outs = list(
            pool.map(lambda _: npu_job(spec, local="shared", env=env, timeout=600), range(8))
        )
    assert all(o["ok"] == [True] and o["error"] is None and o["flushed"] for o in outs)
    assert not [
        k for o in outs for c in o["npu_cache"]["caches"] for k in c if k.startswith("refused_")
    ]
    for name, value in {
        "NPU_CACHE_REDIS_URL": npu_job.redis_url,
        "NPU_CACHE_REDIS_PREFIX": npu_job.prefix,
        "NPU_CACHE_DIR": str(shared),
        "NPU_CACHE_HMAC_KEY": npu_job.hmac_key,
    }.items():
        monkeypatch.setenv(name, value)
    code = cli.main(["cache", "verify", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0, data
    assert (
        data["stores"]["remote"]["checked"] >= 1
    )  # the routed FX/autotune entries are remote-only
    # what they left is usable: from the shared Inductor directory, and from Redis alone
    again = npu_job(spec, local="shared", env=env)
    remote_only = npu_job(spec, local="empty", env=env)
    for out in (again, remote_only):
        assert out["ok"] == [True] and out["inductor"].get("fxgraph_cache_hit") == 1, out[
            "inductor"
        ]
        assert "fxgraph_cache_miss" not in out["inductor"]
