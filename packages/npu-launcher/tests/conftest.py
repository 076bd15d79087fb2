"""Fixtures of npu-launcher's tests: a tiny Triton kernel, a fake npu-sim launch entry point
(Triton's interpreter on CPU tensors), and its CUDA compilation without a GPU."""

from __future__ import annotations

import sys
from importlib import metadata

import pytest
import triton
import triton.language as tl

import npu_launcher.config as launcher_config
from npu_launcher import sim

# entry points need an importable module name; under importlib import mode ours is not one
FAKE_SIM = "npu_launcher_test_fake_sim"
SIM_CALLS: list = []


@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@triton.jit
def _twice(v):
    return v * SCALE


SCALE = tl.constexpr(2.0)


@triton.jit
def scale_kernel(x, out, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, _twice(tl.load(x + offs, mask=m)) * alpha, mask=m)


ADD_SIGNATURE = {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"}
ALIGNED = {"x": 16, "y": 16, "out": 16}


def fake_sim_launch(fn, grid, args, constexprs):
    """What npu-sim's entry point does, on CPU tensors: run fn in Triton's interpreter."""
    SIM_CALLS.append((fn, grid, args, dict(constexprs)))
    fn[grid](*args, **constexprs)


@pytest.fixture
def fake_sim(monkeypatch, tmp_path):
    """Installs the fake npu_inductor.sim_launch entry point; kernels rebuild interpreted."""
    monkeypatch.setitem(sys.modules, FAKE_SIM, sys.modules[__name__])
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(sim, "_modules", {})
    eps = [metadata.EntryPoint(sim.NAME, f"{FAKE_SIM}:fake_sim_launch", sim.GROUP)]
    monkeypatch.setattr(sim, "_entry_points", lambda: eps)
    SIM_CALLS.clear()
    # config.patch, not monkeypatch.setattr: pytest's undo deletes a config key it did not
    # find in the module's __dict__, which hides the key
    with launcher_config.patch(cache_dir=str(tmp_path / "cache")):
        yield SIM_CALLS


@pytest.fixture
def sim_add_descriptor():
    from npu_launcher import sim_descriptor

    return sim_descriptor(
        add_kernel, ADD_SIGNATURE, {"BLOCK": 64}, divisibility=ALIGNED, device_type="cpu"
    )


def compile_add_for_cuda(arch: int = 90):
    """A real cubin from Triton (3.8 compiles for a CUDA target without a GPU)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    src = ASTSource(
        add_kernel,
        signature={**ADD_SIGNATURE, "BLOCK": "constexpr"},
        constexprs={"BLOCK": 1024},
        attrs={
            (0,): [["tt.divisibility", 16]],
            (1,): [["tt.divisibility", 16]],
            (2,): [["tt.divisibility", 16]],
        },
    )
    return triton.compile(src, target=GPUTarget("cuda", arch, 32))


@pytest.fixture(scope="session")
def cuda_add_kernel():
    return compile_add_for_cuda()


@pytest.fixture(scope="session")
def kernels():
    """The kernels and signatures above (test modules cannot import conftest by name)."""
    import types

    return types.SimpleNamespace(
        add_kernel=add_kernel,
        scale_kernel=scale_kernel,
        ADD_SIGNATURE=ADD_SIGNATURE,
        ALIGNED=ALIGNED,
        compile_add_for_cuda=compile_add_for_cuda,
    )


@pytest.fixture(scope="session")
def c_decls():
    """tests/c_decls.py, loaded by path (tests/ is not a package)."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "npu_launcher_test_c_decls", Path(__file__).with_name("c_decls.py")
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
