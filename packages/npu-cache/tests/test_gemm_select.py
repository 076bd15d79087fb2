"""R07 end to end: npu GEMM autotuning (max_autotune_gemm over npu's Triton templates) asks
the shared GEMM cache before benchmarking and publishes what it tuned. Each "machine" is a
fresh process with its own Inductor, Triton and npu-cache directories; only Redis is shared."""

import pytest

from npu_cache import gemm_select

GEMM = {"max_autotune_gemm": True, "max_autotune_gemm_backends": "TRITON"}


def spec(shape, **flags):
    return {
        "fn": "matmul",
        "calls": [shape],
        "inductor": {**GEMM, "remote_gemm_autotune_cache": True, **flags},
    }


@pytest.mark.feature("R07")
def test_a_shape_never_profiled_here_uses_the_shared_config(npu_job):
    a = npu_job(spec([24, 32]), local="a", machine="a")
    assert a["ok"] == [True] and a["flushed"], a["error"]
    assert a["inductor"]["select_algorithm_autotune"] == 1  # a miss: tuned locally...
    assert a["npu_cache"]["gemm_autotune"]["tuned_locally"] == 1
    assert a["npu_cache"]["gemm_autotune"]["published"] == 1  # ...and shared
    # machine b: a shape it never profiled (M=N=20, same 32 buckets): nothing is benchmarked
    b = npu_job(spec([20, 32]), local="b", machine="b")
    assert b["ok"] == [True]
    assert b["npu_cache"]["gemm_autotune"]["served"] == 1
    assert "select_algorithm_autotune" not in b["inductor"]
    # another bucket (M=N=40 -> 64) is a miss there: local tuning
    c = npu_job(spec([40, 32]), local="c", machine="c")
    assert c["ok"] == [True] and c["inductor"]["select_algorithm_autotune"] == 1
    # the flag off: the shared config is neither asked for nor published
    d = npu_job(spec([20, 32], remote_gemm_autotune_cache=False), local="d", machine="d")
    assert d["ok"] == [True] and d["inductor"]["select_algorithm_autotune"] == 1
    assert (
        "served" not in d["npu_cache"]["gemm_autotune"]
        and "published" not in d["npu_cache"]["gemm_autotune"]
    )


@pytest.mark.feature("R07")
def test_a_max_autotune_compile_feeds_the_shared_cache_and_a_fresh_compile_reads_it(npu_job):
    # machine a: torch.compile(mode="max-autotune") of an MLP block (two addmm over npu's
    # templates, swap-A/B candidates among them: M=4 << N) tunes both GEMMs and publishes them
    run = {
        "fn": "mlp",
        "mode": "max-autotune",
        "calls": [[4, 32]],
        "inductor": {
            "remote_gemm_autotune_cache": True,
            "max_autotune_gemm_backends": "TRITON",
            "test_configs.max_mm_configs": 2,
            "triton.cudagraphs": False,
        },
    }
    a = npu_job(run, local="a", machine="a")
    assert a["ok"] == [True] and a["flushed"], a["error"]
    assert a["inductor"]["select_algorithm_autotune"] == 2
    assert (
        a["npu_cache"]["gemm_autotune"]["tuned_locally"] == 2
        and a["npu_cache"]["gemm_autotune"]["published"] == 2
    )
    # machine b: a fresh process with empty local caches, same model: both GEMMs served from
    # the shared cache, nothing benchmarked, the result still eager's
    b = npu_job(run, local="b", machine="b")
    assert b["ok"] == [True], b["error"]
    assert b["npu_cache"]["gemm_autotune"]["served"] == 2
    assert (
        "select_algorithm_autotune" not in b["inductor"]
        and "tuned_locally" not in b["npu_cache"]["gemm_autotune"]
    )
    # (the flag off: neither asked nor published, test_a_shape_never_profiled_here_uses_the_shared_config)


def test_gemm_keys_only_for_npu_gemms(npu):
    import torch
    from torch._inductor.ir import FixedLayout, InputBuffer

    def buf(size, stride, device="npu", dtype=torch.float16):
        return InputBuffer(name="x", layout=FixedLayout(torch.device(device), dtype, size, stride))

    out = FixedLayout(torch.device("npu"), torch.float16, [300, 1024], [1024, 1])
    key = gemm_select.gemm_key([buf([300, 4096], [4096, 1]), buf([4096, 1024], [1, 4096])], out)
    assert (key.op, key.m, key.n, key.k, key.layout_a, key.layout_b) == (
        "mm",
        300,
        1024,
        4096,
        "row",
        "col",
    )
    bias = buf([1024], [1])
    assert (
        gemm_select.gemm_key(
            [bias, buf([300, 4096], [4096, 1]), buf([4096, 1024], [1024, 1])], out
        ).op
        == "addmm"
    )
    bmm_out = FixedLayout(torch.device("npu"), torch.float16, [8, 300, 1024], [300 * 1024, 1024, 1])
    key = gemm_select.gemm_key(
        [buf([8, 300, 64], [19200, 64, 1]), buf([8, 64, 1024], [65536, 1024, 1])], bmm_out
    )
    assert (key.op, key.batch) == ("bmm", 8)
    # not a GEMM on npu: no key, so the choices pass through untouched
    cpu_out = FixedLayout(torch.device("cpu"), torch.float16, [300, 1024], [1024, 1])
    assert (
        gemm_select.gemm_key(
            [buf([300, 4096], [4096, 1], "cpu"), buf([4096, 1024], [1024, 1], "cpu")], cpu_out
        )
        is None
    )
    assert (
        gemm_select.gemm_key([buf([300, 64], [64, 1]), buf([32, 1024], [1024, 1])], out) is None
    )  # K mismatch
    conv = FixedLayout(torch.device("npu"), torch.float16, [1, 8, 4, 4], [128, 16, 4, 1])
    assert (
        gemm_select.gemm_key(
            [buf([1, 3, 6, 6], [108, 36, 6, 1]), buf([8, 3, 3, 3], [27, 9, 3, 1])], conv
        )
        is None
    )


@pytest.mark.feature("K01")
def test_force_disable_caches_reaches_every_cache_of_an_npu_gemm_compile(npu_job):
    # one "machine" compiles an npu GEMM three times in fresh processes on the same
    # directories and Redis: cold, warm, then with force_disable_caches
    flags = {"fx_graph_remote_cache": True, "autotune_remote_cache": True}
    cold = npu_job(spec([24, 32], **flags), machine="a")
    assert cold["ok"] == [True] and cold["inductor"]["select_algorithm_autotune"] == 1
    warm = npu_job(spec([24, 32], **flags), machine="a")
    assert warm["ok"] == [True] and warm["inner_calls"] == 0  # the FX graph cache served it
    off = npu_job(spec([24, 32], force_disable_caches=True, **flags), machine="a")
    assert off["ok"] == [True]
    assert off["inner_calls"] == 1  # FX graph caches (local and Redis): not read
    # GEMM template timings (upstream's local file, which obeys the flag in torch 2.13) and
    # the shared GEMM cache: not read
    assert off["inductor"]["select_algorithm_autotune"] == 1
    assert "served" not in off["npu_cache"]["gemm_autotune"]
    assert off["compiled_kernels"]["described"] >= 1  # the kernel-binary cache: not read
    assert not any(c.get("hit_local") or c.get("hit_remote") for c in off["npu_cache"]["caches"])
