"""R07: best GEMM configs stored and queried by device fingerprint, M/N/K buckets, dtypes
and layouts in the signed cache on a real Redis; a machine that never profiled a shape gets
the shared config, a miss falls back to local tuning. (No npu GEMM template calls it yet:
see the README.)"""

import pytest
from torch._inductor import config

from npu_cache import SignedCache
from npu_cache.gemm_autotune import GemmAutotuneCache, GemmKey, bucket, device_fingerprint

ON = {"remote_gemm_autotune_cache": True}


@pytest.fixture
def machines(make_settings, writer, redis_url, tmp_path):
    def machine(name):
        return GemmAutotuneCache(
            SignedCache(
                "gemm-autotune", make_settings(redis_url, cache_dir=tmp_path / name), writer=writer
            )
        )

    return machine("a"), machine("b"), writer, machine


def key(**kw):
    base = dict(
        device="Ascend910B2/cube24/vector48",
        m=300,
        n=1024,
        k=4096,
        dtype_a="float16",
        dtype_b="float16",
        dtype_out="float16",
    )
    return GemmKey(**{**base, **kw})


def test_buckets():
    assert [bucket(s) for s in (1, 16, 17, 300, 512, 513)] == [16, 16, 32, 512, 512, 1024]
    with pytest.raises(ValueError, match="positive int"):
        bucket(0)
    with pytest.raises(ValueError, match="layout_a"):
        key(layout_a="diagonal")
    with pytest.raises(ValueError, match="dtype name"):
        key(dtype_a="torch.float16")
    with pytest.raises(ValueError, match="device fingerprint"):
        key(device="")


@pytest.mark.feature("R07")
def test_shared_best_config_for_a_shape_never_profiled_here(machines):
    a, b, writer, machine = machines
    tuned = []

    def tune(cfg, us):
        return lambda: tuned.append(cfg) or (cfg, us)

    with config.patch(ON):
        best = a.best_config(
            key(m=300), tune({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64}, 41.0)
        )
        assert tuned and a.counters["tuned_locally"] == 1
        assert writer.flush(5)
        # machine b, empty local dir, a different M in the same bucket: no tuning
        got = b.best_config(key(m=500), tune({"BLOCK_M": 16}, 99.0))
        assert got == best and len(tuned) == 1 and b.cache.counters["hit_remote"] == 1
        assert b.query(key(m=500))["tuned_shape"] == [1, 300, 1024, 4096]
        # every other key field separates entries: each is a miss that tunes locally
        for other in (
            key(m=600),
            key(dtype_a="bfloat16"),
            key(layout_b="col"),
            key(dtype_out="float32"),
            key(device="Ascend910_9392/cube24/vector48"),
            key(op="addmm"),
        ):
            assert b.query(other) is None
        # a slower result never replaces a faster one; a faster one does
        assert not b.publish(key(m=400), {"BLOCK_M": 64}, 50.0) and b.counters["kept_faster"] == 1
        assert b.publish(key(m=400), {"BLOCK_M": 64}, 30.0)
        assert writer.flush(5)
        # a machine without a local copy gets the faster config (one with a copy keeps its own)
        assert machine("c").query(key(m=300))["config"] == {"BLOCK_M": 64}
    # the upstream flag off: never consulted, local tuning
    assert a.best_config(key(m=300), tune({"BLOCK_M": 32}, 10.0)) == {"BLOCK_M": 32}
    assert a.counters["flag_off"] >= 1


def test_device_fingerprint_from_the_npu(npu):
    fp = device_fingerprint()
    assert fp.startswith("Ascend") and "/cube" in fp and "/vector" in fp and "None" not in fp


def test_other_components_find_these_caches_by_entry_point():
    from importlib.metadata import entry_points

    from npu_cache import gemm_autotune, kernel_binary, policy

    eps = {ep.name: ep.load() for ep in entry_points(group="npu_inductor.caches")}
    assert eps["gemm_autotune"] is gemm_autotune.open_gemm_autotune_cache
    assert eps["kernel_binary"] is kernel_binary.open_kernel_binary_cache
    assert (
        eps["caches_disabled"] is policy.caches_disabled
        and eps["lock_timeout"] is policy.lock_timeout
    )
