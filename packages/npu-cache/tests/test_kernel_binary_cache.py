"""R03-R05: npu kernel descriptors (npu-launcher's, through its entry points) in the signed
kernel-binary cache: uploaded, fetched before compiling (a hit skips the compile and the
kernel runs from the fetched descriptor), force-overwrite republishes; without npu-launcher
the cache degrades to misses."""

from importlib.metadata import entry_points

import pytest
import torch
import triton
import triton.language as tl
from torch._inductor import config

from npu_cache import SignedCache
from npu_cache.kernel_binary import KernelBinaryCache, _Codec


@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)


@triton.jit
def sub_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=mask) - tl.load(y + offs, mask=mask), mask=mask)


SIGNATURE = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}


@pytest.fixture
def launcher(npu):
    eps = {ep.name: ep for ep in entry_points(group="npu_inductor.kernel_launcher")}
    if not {"describe_triton", "bind_descriptor"} <= set(eps):
        pytest.skip("npu-launcher is not installed")
    return eps["describe_triton"].load(), eps["bind_descriptor"].load()


@pytest.fixture
def caches(make_settings, writer, redis_url, tmp_path):
    """Two machines sharing one Redis: each its own local directory."""

    def machine(name):
        settings = make_settings(redis_url, cache_dir=tmp_path / name)
        return KernelBinaryCache(SignedCache("kernel-binary", settings, writer=writer))

    return machine("a"), machine("b"), writer


def run(bind_descriptor, descriptor, npu):
    x, y = torch.randn(100), torch.randn(100)
    out = torch.zeros(100, device=npu)
    bind_descriptor(descriptor, 0)(2, 1, 1, None, x.to(npu), y.to(npu), out, 100)
    return out.cpu(), x, y


@pytest.mark.feature("R04", "R05")
def test_uploaded_descriptor_is_fetched_elsewhere_without_compiling(launcher, caches, npu):
    describe, bind_descriptor = launcher
    a, b, writer = caches
    compiles = []

    def compile_add():
        compiles.append(1)
        return describe(add_kernel, {"signature": SIGNATURE}, {"BLOCK": 64})

    with config.patch({"cutlass.upload_to_binary_remote_cache": True}):
        desc, hit = a.get_or_compile("add-v1/sim", compile_add)
        assert not hit and compiles == [1] and a.counters["uploaded"] == 1
        assert writer.flush(5)
        fetched, hit = b.get_or_compile("add-v1/sim", compile_add)  # machine b: empty local dir
    assert hit and compiles == [1]  # R05: the remote hit skipped the compile
    assert b.cache.counters["hit_remote"] == 1
    out, x, y = run(bind_descriptor, fetched, npu)
    torch.testing.assert_close(out, x + y)  # the fetched descriptor runs the kernel

    # flags off: nothing uploaded (R04) / the cache not consulted (R05)
    assert not a.publish("other", desc) and a.counters["upload_off"] == 1
    with config.patch({"cutlass.use_binary_remote_cache": False}):
        assert b.fetch("add-v1/sim") is None and b.counters["fetch_off"] == 1


@pytest.mark.feature("R03")
def test_force_write_republishes_an_existing_key(launcher, caches, npu):
    describe, bind_descriptor = launcher
    a, b, writer = caches
    wrong = describe(sub_kernel, {"signature": SIGNATURE}, {"BLOCK": 64})  # a polluted entry
    right = describe(add_kernel, {"signature": SIGNATURE}, {"BLOCK": 64})
    with config.patch({"cutlass.upload_to_binary_remote_cache": True}):
        assert a.publish("add-v2/sim", wrong)
        assert writer.flush(5)
        a.publish("add-v2/sim", right)  # an existing key is kept (locally and in Redis)...
        assert writer.flush(5)
        assert a.cache.counters["put_local_kept"] == 1 and a.cache.remote.counters["put_kept"] == 1
        out, x, y = run(bind_descriptor, b.fetch("add-v2/sim"), npu)
        torch.testing.assert_close(out, x - y)  # another machine still gets the wrong one
        with config.patch({"cutlass.binary_remote_cache_force_write": True}):
            a.publish("add-v2/sim", right)  # ...unless forced: overwritten
        assert writer.flush(5) and a.counters["uploaded_forced"] == 1
    b.cache.local = None  # machine b copied the old entry locally; ask Redis again
    out, x, y = run(bind_descriptor, b.fetch("add-v2/sim"), npu)  # another machine sees the new one
    torch.testing.assert_close(out, x + y)


@pytest.mark.feature("R05")
def test_without_npu_launcher_the_cache_degrades(caches, monkeypatch):
    a, _, _ = caches
    codec = _Codec()
    monkeypatch.setattr("npu_cache.kernel_binary.entry_points", lambda group: [])
    a.codec = codec
    compiled = []
    desc, hit = a.get_or_compile("k", lambda: compiled.append(1) or "descriptor")
    assert (desc, hit) == ("descriptor", False) and compiled == [1]  # local compile, no error
    assert a.counters["no_codec"] == 2  # the fetch and the upload were skipped


@pytest.mark.feature("R05")
def test_the_codec_loads_once_for_threads_compiling_at_once(monkeypatch):
    # npu-autotune compiles a kernel's configs in threads: none may see a half-loaded codec
    # (and compile without the cache) while another loads it
    import threading
    import time

    from importlib.metadata import EntryPoint

    slow_calls = []

    def slow_entry_points(group):  # a slow lookup of a codec (stand-ins: no npu-launcher needed)
        slow_calls.append(group)
        time.sleep(0.2)
        return [
            EntryPoint("descriptor_to_bytes", "json:dumps", group),
            EntryPoint("descriptor_from_bytes", "json:loads", group),
        ]

    monkeypatch.setattr("npu_cache.kernel_binary.entry_points", slow_entry_points)
    codec, answers = _Codec(), []
    threads = [threading.Thread(target=lambda: answers.append(codec.load())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == [True] * 4 and len(slow_calls) == 1


@pytest.mark.feature("R05")
def test_triton_kernel_key_separates_what_changes_the_binary(caches):
    a, _, _ = caches
    meta = {"signature": SIGNATURE, "device": 0, "constants": {}}
    cfg = triton.Config({"BLOCK": 64}, num_warps=1)
    key = a.triton_kernel_key(add_kernel, meta, cfg, "npu/interpreter")
    assert key == a.triton_kernel_key(
        add_kernel, {**meta, "device": 3}, cfg, "npu/interpreter"
    )  # index: no
    for other in (
        a.triton_kernel_key(sub_kernel, meta, cfg, "npu/interpreter"),
        a.triton_kernel_key(add_kernel, {**meta, "constants": {"n": 1}}, cfg, "npu/interpreter"),
        a.triton_kernel_key(
            add_kernel, meta, triton.Config({"BLOCK": 32}, num_warps=1), "npu/interpreter"
        ),
        a.triton_kernel_key(add_kernel, meta, cfg, "npu/ascend910b"),
    ):
        assert other != key


def test_no_redis_no_kernel_binary_cache(monkeypatch, cache_env, tmp_path):
    """Without a Redis URL the default cache is off: no directory, no key file, plain compiles."""
    from npu_cache import kernel_binary

    cache_env("NPU_CACHE_REDIS_URL", None)
    for name in ("TORCHINDUCTOR_REDIS_URL", "TORCHINDUCTOR_REDIS_HOST", "TORCHINDUCTOR_REDIS_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    monkeypatch.setattr(kernel_binary, "_default", None)
    kb = kernel_binary.open_kernel_binary_cache()
    assert kb.cache is None and not any(tmp_path.iterdir())
    assert kb.descriptor_for_triton(add_kernel, {}, None, "t", lambda: "built") == "built"
    assert kb.counters["no_remote"] == 1
