"""R03-R05 end to end on npu-sim: the kernel-binary cache in the npu compile path.

Three "machines" (own HOME, Inductor, Triton and npu-cache directories; shared Redis and HMAC
key) compile the same function with the FX caches off, so each runs Inductor's codegen and
reaches every kernel's compile (describing it, on npu-sim):

  p  a faulty compiler (every stored value off by one) uploads what it built      (R04)
  q  a fixed compiler, cache not consulted, force-write: republishes every kernel (R03)
  r  an empty machine: every kernel comes from Redis, nothing is compiled         (R05)

Without force-write q's entries would be kept and r would run p's wrong kernels.
"""

import pytest
import redis

from npu_cache import entry

FRESH = {"fx_graph_cache": False, "fx_graph_remote_cache": False, "compile_threads": 1}
NO_AOT_CACHE = {"enable_autograd_cache": False}
UPLOAD = {"cutlass.upload_to_binary_remote_cache": True}
REPUBLISH = {
    **UPLOAD,
    "cutlass.use_binary_remote_cache": False,
    "cutlass.binary_remote_cache_force_write": True,
}


def entries(job):
    client = redis.Redis.from_url(job.redis_url)
    return {k: client.get(k) for k in client.scan_iter(f"{job.prefix}:v1:kernel-binary:*")}


@pytest.fixture(scope="module")
def runs(module_npu_job):
    job = module_npu_job

    def run(name, flags, **spec):
        return job(
            {
                "fn": "two_kernels",
                "calls": [[8, 32]],
                "inductor": {**FRESH, **flags},
                "functorch": NO_AOT_CACHE,
                **spec,
            },
            local=name,
            machine=name,
        )

    p = run("p", UPLOAD, miscompile=True)
    after_p = entries(job)
    q = run("q", REPUBLISH)
    after_q = entries(job)
    r = run("r", {})
    return {"p": p, "q": q, "r": r, "after_p": after_p, "after_q": after_q}


def kernel_binary(run):
    return run["npu_cache"]["kernel_binary"]


@pytest.mark.feature("R04")
def test_compiled_kernels_are_uploaded(runs):
    p, after_p = runs["p"], runs["after_p"]
    compiled = p["compiled_kernels"]["described"]
    assert compiled == 2 and p["flushed"]
    # every kernel p compiled is in Redis, as a signed entry
    assert kernel_binary(p)["uploaded"] == compiled and len(after_p) == compiled
    assert all(v[:4] == entry.MAGIC for v in after_p.values())


@pytest.mark.feature("R05")
def test_remote_kernel_binaries_skip_the_local_compile(runs):
    q, r = runs["q"], runs["r"]
    # r: empty local dirs and Triton cache; every kernel fetched before compiling, none compiled
    assert r["compiled_kernels"] == {"described": 0, "triton_compile": 0}
    assert kernel_binary(r)["hit"] == 2 and kernel_binary(r)["cache"]["hit_remote"] == 2
    assert r["ok"] == [True]  # and the fetched kernels compute the right result
    # q did not consult the cache (use_binary_remote_cache off): it compiled every kernel
    assert q["compiled_kernels"]["described"] == 2 and kernel_binary(q)["fetch_off"] == 2


@pytest.mark.feature("R03")
def test_force_write_republishes_over_polluted_entries(runs):
    p, q, after_p, after_q = runs["p"], runs["q"], runs["after_p"], runs["after_q"]
    assert p["ok"] == [False]  # p's kernels are wrong: its entries pollute the cache
    assert q["ok"] == [True] and kernel_binary(q)["uploaded_forced"] == 2
    # the same keys, every value replaced
    assert after_q.keys() == after_p.keys() and all(after_q[k] != after_p[k] for k in after_p)
    assert runs["r"]["ok"] == [True]  # a machine fetching now runs q's kernels


@pytest.mark.feature("R04", "R05")
def test_gemm_template_kernels_travel_too(npu_job):
    # npu GEMM templates (max_autotune_gemm): the chosen template, with its fused epilogue, and
    # every candidate benchmarked are npu kernels like any other: uploaded, then fetched.
    # Both machines pick the same winner (fixed_timings): with timings measured in the
    # interpreter, u could pick another config and compile its fused kernel, a true miss
    gemm = {**FRESH, "max_autotune_gemm": True, "max_autotune_gemm_backends": "TRITON"}

    def run(name, flags):
        return npu_job(
            {
                "fn": "matmul",
                "calls": [[24, 32]],
                "inductor": {**gemm, **flags},
                "functorch": NO_AOT_CACHE,
                "fixed_timings": True,
            },
            local=name,
            machine=name,
        )

    t = run("t", UPLOAD)
    built = t["compiled_kernels"]["described"]
    assert t["ok"] == [True] and built >= 2 and kernel_binary(t)["uploaded"] == built, (
        kernel_binary(t)
    )
    u = run("u", {})
    assert u["ok"] == [True] and u["inductor"]["select_algorithm_autotune"] == 1
    assert u["compiled_kernels"] == {"described": 0, "triton_compile": 0}, (
        t["described_names"],
        u["described_names"],
    )
    assert kernel_binary(u)["hit"] == built


@pytest.mark.feature("R04", "R05")
def test_triton_ascend_binaries_travel_too(npu_job, tmp_path):
    # on Ascend a kernel's compile is triton-ascend's (stood in for by npu-launcher's test
    # helpers): its npubin descriptors are uploaded, and another machine launches them
    # through the CANN runtime without compiling anything
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "npu-launcher" / "tests"))
    import fake_triton_ascend

    lib = fake_triton_ascend.fake_cann_library(tmp_path)

    def run(name, flags):
        log = tmp_path / f"{name}.log"
        out = npu_job(
            {
                "fn": "two_kernels",
                "calls": [[8, 32]],
                "ascend": True,
                "functorch": NO_AOT_CACHE,
                "inductor": {**FRESH, "use_static_triton_launcher": True, **flags},
            },
            local=name,
            machine=name,
            env={"NPU_LAUNCHER_CANN_LIBS": str(lib), "FAKE_CANN_LOG": str(log)},
        )
        return out, fake_triton_ascend.read_log(log)

    a, a_log = run("a", UPLOAD)
    built = a["compiled_kernels"]["triton_compile"]
    assert a["error"] is None and built >= 2 and kernel_binary(a)["uploaded"] == built, (
        kernel_binary(a)
    )
    b, b_log = run("b", {})
    assert b["error"] is None and b["compiled_kernels"]["triton_compile"] == 0, (
        b["ascend_compiles"],
        kernel_binary(b),
    )
    assert kernel_binary(b)["hit"] == built
    launched = {r[1] for r in b_log if r[0] == "launch"}
    assert launched and launched == {r[1] for r in a_log if r[0] == "launch"}
