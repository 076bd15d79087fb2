"""The torch_npu provider checked against the torch_npu 2.13 wheel, read without importing it
(no NPU here: X06's torch_npu leg).

The adapter is driven through every operation the tree uses, over a recording stand-in for
``torch_npu._C`` and ``torch.npu``; each ``torch_npu._C`` function it calls must be exported
by the wheel's ``libtorch_npu.so`` and, where torch_npu's own Python calls it, be called with
an arity torch_npu uses; each ``torch.npu`` name it uses must be exported by
``torch_npu.npu``; ``NPUGraph.capture_begin`` must take the keywords we pass.

The wheel (~100 MB) is looked up in ``$NPU_GRAPHTREE_WHEEL_CACHE``, then in the cache
npu-launcher's fidelity test fills (same file, so CI downloads it once), else downloaded
there with ``pip download`` (no install).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import types
import warnings
import zipfile
from pathlib import Path

import pytest
import torch

from npu_graphtree import adapter as adapter_mod

WHEEL_GLOB = "torch_npu-2.13.0-*.whl"
CACHES = [
    Path(p)
    for p in (
        os.environ.get("NPU_GRAPHTREE_WHEEL_CACHE"),
        os.environ.get("NPU_LAUNCHER_WHEEL_CACHE"),
    )
    if p
] + [Path.home() / ".cache" / "npu_launcher" / "wheels"]


def _wheel() -> Path:
    for cache in CACHES:
        hits = sorted(cache.glob(WHEEL_GLOB))
        if hits:
            return hits[0]
    cache = CACHES[0]
    cache.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.11",
            "--implementation",
            "cp",
            "--platform",
            "manylinux_2_28_x86_64",
            "-d",
            str(cache),
            "torch_npu==2.13.0",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    hits = sorted(cache.glob(WHEEL_GLOB))
    if not hits:
        pytest.skip(f"torch_npu 2.13.0 wheel not available: {proc.stderr[-500:]}")
    return hits[0]


@pytest.fixture(scope="module")
def wheel():
    return zipfile.ZipFile(_wheel())


@pytest.fixture(scope="module")
def torch_npu_calls(wheel):
    """name -> arities of every ``torch_npu._C.<name>(...)`` call in torch_npu's Python."""
    calls: dict[str, set[int]] = {}
    for name in wheel.namelist():
        if not (name.startswith("torch_npu/") and name.endswith(".py")):
            continue
        try:
            with warnings.catch_warnings():  # torch_npu's sources have invalid escapes
                warnings.simplefilter("ignore")
                tree = ast.parse(wheel.read(name))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            f = getattr(node, "func", None)
            if (
                isinstance(node, ast.Call)
                and isinstance(f, ast.Attribute)
                and isinstance(f.value, ast.Attribute)
                and f.value.attr == "_C"
                and isinstance(f.value.value, ast.Name)
                and f.value.value.id == "torch_npu"
                and not any(isinstance(a, ast.Starred) for a in node.args)
            ):
                calls.setdefault(f.attr, set()).add(len(node.args) + len(node.keywords))
    return calls


@pytest.fixture(scope="module")
def libtorch_npu(wheel):
    return wheel.read("torch_npu/lib/libtorch_npu.so")


class _Recorder:
    """Stands in for ``torch_npu._C``: offers exactly the names ``libtorch_npu.so`` exports,
    each a function recording its calls (so capability checks see what torch_npu has)."""

    def __init__(self, library: bytes):
        self.calls: dict[str, set[int]] = {}
        self.library = library

    def __getattr__(self, name):
        if name.startswith("__") or b"\0" + name.encode() + b"\0" not in self.library:
            raise AttributeError(name)

        def fn(*args, **kwargs):
            self.calls.setdefault(name, set()).add(len(args) + len(kwargs))
            return types.SimpleNamespace(_cdata=1, untyped_storage=None)

        return fn


class _Npu(types.ModuleType):
    """Stands in for ``torch.npu`` (torch_npu.npu): records the names the adapter uses."""

    def __init__(self):
        super().__init__("torch_npu.npu")
        object.__setattr__(self, "used", set())

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        self.used.add(name)
        import contextlib

        if name in ("device", "stream"):
            return lambda *a, **k: contextlib.nullcontext()
        if name == "memory_snapshot":
            return lambda: []
        if name == "graph_pool_handle":
            return lambda: (0, 1)
        return lambda *a, **k: types.SimpleNamespace(
            capture_begin=lambda **kw: None, capture_end=lambda: None
        )


def _drive(adapter) -> None:
    """Every adapter operation the tree performs."""
    fake = types.SimpleNamespace(_cdata=7)
    adapter.device = lambda index: (
        "npu",
        index,
    )  # no "npu" device type here (nor needed by the stand-in)
    adapter.new_pool()
    adapter.new_stream(0)
    adapter.begin_pool(0, (0, 1))
    adapter.end_pool(0, (0, 1))
    adapter.release_pool(0, (0, 1))
    with adapter.allocate_to_pool(0, (0, 1), None):
        pass
    adapter.checkpoint(0, (0, 1))
    adapter.live_blocks(0, (0, 1))
    adapter.check_live_blocks(0, (0, 1), set())
    adapter.restore(0, object(), [fake], [(1024, 64)], stale=[fake])
    adapter.storage_maker(0)(1024, 64)
    prepare, make = adapter.tensor_maker()
    make(prepare((torch.float32, (2,), (1,), 0)), fake)
    assert adapter.native_access_errors()
    adapter.set_tensor_access_error(object(), "msg")
    adapter.free_and_poison_storage(7, "msg")
    adapter.current_stream()
    adapter.synchronize()


@pytest.mark.feature("X06")
def test_torch_npu_provider_calls_what_the_wheel_exports(torch_npu_calls, libtorch_npu):
    C, npu = _Recorder(libtorch_npu), _Npu()
    a = adapter_mod.DeviceAdapter(
        "npu", npu, C, prefix="_npu_", begin_increfs_pool=True, provider="torch_npu"
    )
    _drive(a)
    assert C.calls, "the adapter called nothing on torch_npu._C"
    problems = []
    for name, arities in sorted(C.calls.items()):
        if name.encode() not in libtorch_npu:
            problems.append(f"torch_npu._C.{name}: not in libtorch_npu.so")
        elif name in torch_npu_calls and not arities <= torch_npu_calls[name]:
            problems.append(
                f"torch_npu._C.{name}: we pass {sorted(arities)} args, torch_npu {sorted(torch_npu_calls[name])}"
            )
    assert not problems, problems
    # the ones torch_npu's own graph tree uses are all among them, with its arities
    for name in (
        "_npu_beginAllocateCurrentThreadToPool",
        "_npu_endAllocateToPool",
        "_npu_releasePool",
        "_npu_getCheckpointState",
        "_npu_setCheckpointPoolState",
        "_npu_npuCachingAllocator_raw_delete",
        "_construct_storage_from_data_pointer",
        "_construct_NPU_Tensor_From_Storage_And_Metadata",
        "_set_storage_access_error_msg",
        "_free_And_Remove_DeleterFn",
    ):
        assert name in C.calls and name in torch_npu_calls, name


@pytest.mark.feature("X06")
def test_torch_npu_module_and_graph_api_match_the_wheel(wheel, libtorch_npu):
    C, npu = _Recorder(libtorch_npu), _Npu()
    a = adapter_mod.DeviceAdapter(
        "npu", npu, C, prefix="_npu_", begin_increfs_pool=True, provider="torch_npu"
    )
    _drive(a)
    a.new_graph()
    init = ast.parse(wheel.read("torch_npu/npu/__init__.py"))
    exported = set()
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "__all__" for t in node.targets
        ):
            exported |= {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    missing = sorted(npu.used - exported)
    assert not missing, (
        f"torch.npu names the adapter uses that torch_npu.npu does not export: {missing}"
    )
    graphs = ast.parse(wheel.read("torch_npu/npu/graphs.py"))
    (cls,) = [n for n in graphs.body if isinstance(n, ast.ClassDef) and n.name == "NPUGraph"]
    methods = {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}
    assert {"capture_begin", "capture_end", "replay", "reset"} <= set(methods)
    params = {arg.arg for arg in methods["capture_begin"].args.args}
    assert {"pool", "capture_error_mode"} <= params  # what DeviceAdapter.capture_begin passes


def test_torch_npu_is_the_provider_when_loaded(monkeypatch):
    """With torch_npu imported, device "npu" is torch_npu's (it counts a pool user per begin)."""
    fake = types.ModuleType("torch_npu")
    fake._C = types.SimpleNamespace(_npu_beginAllocateCurrentThreadToPool=lambda *a: None)
    monkeypatch.setitem(sys.modules, "torch_npu", fake)
    monkeypatch.setattr(adapter_mod, "_adapters", {})
    monkeypatch.setattr(torch, "npu", types.ModuleType("torch_npu.npu"), raising=False)
    a = adapter_mod.get_adapter("npu")
    assert a.provider == "torch_npu" and a.C is fake._C and a.begin_increfs_pool
