import contextlib
import importlib.util
import sys
from pathlib import Path

import pytest
import torch

TOLERANCE = {  # (atol, rtol) per dtype against eager on the CPU
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (5e-2, 2e-2),
}


@pytest.fixture(scope="session", autouse=True)
def npu():
    import npu_lowering
    import npu_sim

    npu_sim.start()
    npu_lowering.register()
    return torch.device("npu")


def to_cpu(x):
    if isinstance(x, torch.Tensor):
        return x.detach().cpu()
    if isinstance(x, (list, tuple)):
        return type(x)(to_cpu(v) for v in x)
    return x


def assert_matches(out, ref):
    outs = out if isinstance(out, (list, tuple)) else (out,)
    refs = ref if isinstance(ref, (list, tuple)) else (ref,)
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs):
        assert o.device.type == "npu", o.device
        o = o.detach().cpu()
        if r.dtype.is_floating_point:
            atol, rtol = TOLERANCE[r.dtype]
            torch.testing.assert_close(o, r, atol=atol, rtol=rtol, equal_nan=True)
        else:
            assert torch.equal(o, r)


@pytest.fixture
def check():
    """compile_and_check, for tests (test modules cannot import this conftest)."""
    return compile_and_check


def compile_and_check(fn, *args, **compile_kwargs):
    """Compile fn for npu, compare with eager on CPU copies, return the generated code."""
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    out, codes = run_and_get_code(torch.compile(fn, **compile_kwargs), *args)
    assert_matches(out, fn(*to_cpu(args)))
    kernels = [c for c in codes if "@triton.jit" in c]
    assert kernels, "no Triton kernel was generated"
    assert all("tl.extra.cuda" not in c for c in codes)
    return "\n".join(codes)


ASCEND_CHECK = Path(__file__).resolve().parents[1] / "ascend_check"


@contextlib.contextmanager
def ascend_check_script(name: str):
    """One of ascend_check/'s scripts (``check``, ``hivm``) as a fresh module, outside the
    package (they are scripts, not an installed module); ``sys.modules`` holds it meanwhile,
    where dataclasses look their module up."""
    spec = importlib.util.spec_from_file_location(
        f"npu_lowering_ascend_{name}_for_test", ASCEND_CHECK / f"{name}.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    try:
        spec.loader.exec_module(mod)
        yield mod
    finally:
        sys.modules.pop(spec.name, None)


@pytest.fixture(scope="module")
def ascend_check():
    with ascend_check_script("check") as mod:
        yield mod


@pytest.fixture
def ascend_hivm():
    with ascend_check_script("hivm") as mod:
        yield mod
