"""Arguments Triton specialized into constants (issue 16 item 1): an int equal to 1 (Triton's
JIT and Inductor's ``equal_1_arg_indices``) or a None is still passed by the call but is not
an argument of the binary. Descriptors record them (``specialized``), launch objects and grid
slots take the call's arguments, drop those and check their value, and Inductor's launcher
code (the Ascend route) passes the call through unchanged, as Triton's own launcher does."""

import pytest
import torch
import triton
import triton.language as tl

# imported here, not under a test's TRITON_INTERPRET=1 (fake_sim): Inductor's Triton helpers
# would stay interpreter functions for every later test of the session
from torch._inductor.runtime import triton_heuristics

from npu_launcher import (
    DescriptorError,
    KernelDescriptor,
    bind,
    descriptor_from_compiled,
    sim_descriptor,
)
from npu_launcher.descriptor import ArgSpec, SpecializedArg, Target
from npu_launcher.errors import KernelArgumentError, KernelArgumentTypeError
from npu_launcher.inductor import upstream_shaped_launcher


@triton.jit
def axpy(x, out, xnumel, alpha, rnumel, BLOCK: tl.constexpr):
    # xnumel sits between other runtime arguments: dropping it must not shift them
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < xnumel * rnumel
    tl.store(out + offs, tl.load(x + offs, mask=m) * alpha, mask=m)


SIG = {"x": "*fp32", "out": "*fp32", "alpha": "fp32", "rnumel": "i32"}


@pytest.fixture
def launch(fake_sim):
    desc = sim_descriptor(axpy, SIG, {"BLOCK": 8}, device_type="cpu", specialized={"xnumel": 1})
    return bind(desc)


def test_sim_descriptor_records_the_specialized_argument_in_place():
    d = sim_descriptor(axpy, SIG, {"BLOCK": 8}, device_type="cpu", specialized={"xnumel": 1})
    assert [a.name for a in d.args] == ["x", "out", "alpha", "rnumel"]
    assert d.specialized == (SpecializedArg(2, "xnumel", 1, True),)
    assert d.call_arg_names() == ["x", "out", "xnumel", "alpha", "rnumel"]
    assert "xnumel" not in d.constexprs
    back = KernelDescriptor.from_bytes(d.to_bytes())
    assert back == d and back.specialized == d.specialized


def test_launch_drops_the_specialized_argument_and_runs(launch, fake_sim):
    x, out = torch.arange(6.0), torch.zeros(6)
    assert launch.arg_names == ("x", "out", "alpha", "rnumel")
    assert launch.specialized == ((2, "xnumel", 1),)
    launch(1, 1, 1, None, x, out, 1, 2.0, 6)  # the call passes xnumel=1 where the kernel has it
    torch.testing.assert_close(out, x * 2)
    # the interpreter gets the call's arguments (its Python kernel takes xnumel)
    assert fake_sim[-1][2][2] == 1 and len(fake_sim[-1][2]) == 5


def test_a_different_value_is_refused_not_run(launch, fake_sim):
    x, out = torch.arange(6.0), torch.zeros(6)
    for bad in (3, True, 1.0, None):
        with pytest.raises(
            KernelArgumentError,
            match=r"kernel 'axpy': argument 'xnumel' \(#2\) was specialized "
            r"to 1 .* got " + repr(bad),
        ):
            launch(1, 1, 1, None, x, out, bad, 2.0, 6)
    assert not fake_sim and not out.any()


def test_count_errors_name_the_specialized_argument(launch):
    with pytest.raises(
        KernelArgumentTypeError,
        match=r"takes grid_x, grid_y, grid_z, stream and 5 kernel arguments "
        r"\(x, out, xnumel \(specialized to 1\), alpha, rnumel\); got 8",
    ):
        launch(1, 1, 1, None, torch.zeros(6), torch.zeros(6), 2.0, 6)  # xnumel left out


def test_grid_slot_takes_the_call_with_specialized_and_trailing_arguments(launch, fake_sim):
    x, out = torch.arange(6.0), torch.zeros(6)
    slot = launch.at(1, 1, 1, 2)  # a template's two trailing grid literals
    slot(None, x, out, 1, 3.0, 6, "g0", "g1")
    torch.testing.assert_close(out, x * 3)
    with pytest.raises(KernelArgumentError, match="was specialized to 1"):
        slot(None, x, out, 4, 3.0, 6, "g0", "g1")
    with pytest.raises(
        KernelArgumentTypeError, match=r"\(at its fixed grid\) stream and 5 kernel arguments"
    ):
        slot(None, x, out, 3.0, 6, "g0", "g1")


def test_none_and_unchecked_values(fake_sim):
    # None is specialized too (a user kernel's optional pointer); a value that is not plain
    # (a dtype) is recorded but only dropped, as Triton's launcher drops every constexpr
    d = KernelDescriptor(
        name="k",
        target=Target("cuda", "90", 32),
        binary_format="cubin",
        binary=b"\x7fELF",
        args=(ArgSpec("p", "*fp32"),),
        specialized=(SpecializedArg(0, "bias", None), SpecializedArg(2, "dt", "fp16", False)),
    )
    assert d.call_arg_names() == ["bias", "p", "dt"]
    assert KernelDescriptor.from_bytes(d.to_bytes()).specialized == d.specialized


@pytest.mark.parametrize("positions", [(0, 0), (5,), (-1,)])
def test_bad_specialized_positions_are_refused(positions):
    with pytest.raises(DescriptorError, match="specialized argument positions"):
        KernelDescriptor(
            name="k",
            target=Target("cuda", "90", 32),
            binary_format="cubin",
            binary=b"\x7fELF",
            args=(ArgSpec("p", "*fp32"),),
            specialized=tuple(SpecializedArg(i, f"s{i}", 1) for i in positions),
        )


@pytest.mark.feature("L04")
def test_a_compiled_kernel_with_an_argument_equal_to_1_records_it(kernels):
    """Triton compiles n == 1 as a constant (its equal-to-1 specialization): the binary has no
    n, the descriptor says the call still passes it, and the bytes keep that."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from npu_launcher import descriptor_from_compiled

    src = ASTSource(
        kernels.add_kernel,
        signature={**kernels.ADD_SIGNATURE, "n": "constexpr", "BLOCK": "constexpr"},
        constexprs={"n": 1, "BLOCK": 1024},
        attrs={(0,): [["tt.divisibility", 16]]},
    )
    compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32))
    d = descriptor_from_compiled(compiled)
    assert [a.name for a in d.args] == ["x", "y", "out"]
    assert d.specialized == (SpecializedArg(3, "n", 1, True),) and d.constexprs == {"BLOCK": 1024}
    ptx = compiled.asm["ptx"]
    entry = ptx[ptx.index(".entry") : ptx.index(")", ptx.index(".entry"))]
    assert entry.count(".param") == len(d.args) + d.trailing_null_params  # n is not in the binary
    back = KernelDescriptor.from_bytes(d.to_bytes())
    assert back.specialized == d.specialized and back.call_arg_names() == ["x", "y", "out", "n"]


def test_inductors_launcher_code_passes_the_call_through(fake_sim, monkeypatch):
    """The Ascend route's launcher (upstream's generated code around the launch object):
    the runner gets the call's arguments, specialized ones in place, so the direct-launch
    probe hands the wrapper's own arguments back and its slot can be promoted; a user
    kernel's None that Inductor leaves out of the call is passed as its constant."""
    CompileResult, Config = triton_heuristics.CompileResult, triton.Config
    names = ["x", "out", "xnumel", "alpha", "rnumel", "BLOCK"]
    meta = {
        "constants": {"xnumel": 1, "BLOCK": 8},
        "signature": {
            "x": "*fp32",
            "out": "*fp32",
            "xnumel": "constexpr",
            "alpha": "fp32",
            "rnumel": "i32",
            "BLOCK": "constexpr",
        },
    }
    result = CompileResult(
        None, Config({}), meta, {"grid_type": "FixedGrid", "fixed_grid": ["1", "1", "1"]}
    )
    desc = sim_descriptor(axpy, SIG, {"BLOCK": 8}, device_type="cpu", specialized={"xnumel": 1})
    calls = []
    launcher = upstream_shaped_launcher(result, desc, lambda *a: calls.append(a), names, [5])
    x, out = torch.arange(6.0), torch.zeros(6)
    launcher(x, out, 1, 2.0, 6, stream=None)
    assert calls[-1][4:] == (x, out, 1, 2.0, 6)
    launch, grid, args = launcher.npu_direct_launch((x, out, 1, 2.0, 6), None)
    assert (
        grid == (1, 1, 1)
        and all(a is b for a, b in zip(args, (x, out, 1, 2.0, 6)))
        and len(args) == 5
    )
    # with a real launch object: one call runs it
    real = upstream_shaped_launcher(result, desc, bind(desc), names, [5])
    real(x, out, 1, 2.0, 6, stream=None)
    torch.testing.assert_close(out, x * 2)

    # Triton 3.2 / triton-ascend 3.2: a user kernel's None is not in the signature and
    # Inductor's launcher code leaves it out of the call; the runner gets it as its constant
    monkeypatch.setattr(triton_heuristics, "triton_version_uses_attrs_dict", lambda: False)
    meta_none = {
        "constants": {"xnumel": None, "BLOCK": 8},
        "signature": {k: v for k, v in meta["signature"].items() if k not in ("xnumel", "BLOCK")},
    }
    result = CompileResult(
        None,
        Config({"BLOCK": 8}),
        meta_none,
        {"grid_type": "FixedGrid", "fixed_grid": ["1", "1", "1"]},
    )
    desc = sim_descriptor(axpy, SIG, {"BLOCK": 8}, device_type="cpu", specialized={"xnumel": None})
    launcher = upstream_shaped_launcher(result, desc, lambda *a: calls.append(a), names, [5])
    launcher(x, out, 2.0, 6, stream=None)
    assert calls[-1][4:] == (x, out, None, 2.0, 6)


@triton.jit
def _scale_rows(x, out, rows, bias, alpha, cols, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < rows * cols
    v = tl.load(x + offs, mask=m) * alpha
    if bias is not None:
        v += tl.load(bias + offs, mask=m)
    tl.store(out + offs, v, mask=m)


def _user(x, bias):
    out = torch.empty_like(x)
    _scale_rows[(1,)](x, out, x.shape[0], bias, 2.5, x.shape[1], BLOCK=16)
    return out + 1


@pytest.mark.feature("L08")
def test_user_kernel_with_an_int_argument_equal_to_1_and_a_none():
    """A user @triton.jit kernel called with rows == 1 (Inductor's equal_to_1 constant) and
    bias=None, both mid-call, launches statically: the launch object drops both, checks
    rows, and the interpreter gets None for bias (Inductor's call holds a dummy -1 there)."""
    pytest.importorskip("npu_sim")
    pytest.importorskip("npu_lowering")
    import npu_inductor
    from torch._inductor import config
    from torch._inductor.utils import fresh_cache

    from npu_lowering.runtime import autotuner

    npu_inductor.enable()  # Dynamo puts user kernels on npu into the graph (npu-launcher's register)

    torch._dynamo.reset()
    autotuner._static_launches.clear()
    with fresh_cache(), config.patch(static_launch_user_defined_triton_kernels=True):
        x, b = torch.randn(1, 6, device="npu"), torch.randn(1, 6, device="npu")
        for bias in (None, b):
            torch._dynamo.reset()
            for _ in range(2):
                out = torch.compile(_user)(x, bias)
            torch.testing.assert_close(
                out.cpu(), x.cpu() * 2.5 + 1 + (0 if bias is None else b.cpu())
            )
        binds = [lo for k, lo in autotuner._static_launches.items() if "_scale_rows" in str(k.fn)]
    assert len(binds) == 2 and None not in binds
    assert {lo.specialized for lo in binds} == {
        ((2, "rows", 1), (3, "bias", None)),
        ((2, "rows", 1),),
    }


def test_the_interpreter_gets_the_specialized_value_not_the_calls_dummy(fake_sim):
    d = sim_descriptor(
        _scale_rows,
        {"x": "*fp32", "out": "*fp32", "alpha": "fp32", "cols": "i32"},
        {"BLOCK": 16},
        device_type="cpu",
        specialized={"rows": 1, "bias": None},
    )
    assert [(s.name, s.checked) for s in d.specialized] == [("rows", True), ("bias", False)]
    x, out = torch.arange(6.0), torch.zeros(6)
    bind(d)(1, 1, 1, None, x, out, 1, -1, 2.0, 6)  # -1: what Inductor passes for a None
    assert fake_sim[-1][2][3] is None
    torch.testing.assert_close(out, x * 2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_cuda_binary_with_n_specialized_to_1_launches_with_the_full_call(kernels):
    """Triton's own JIT specializes n == 1: its binary takes x, y, out only. The launch object
    takes the call Triton's launcher takes (n included) and passes the binary its three."""
    x, y = torch.randn(1, device="cuda"), torch.randn(1, device="cuda")
    compiled = kernels.add_kernel[(1,)](x, y, torch.empty_like(x), 1, BLOCK=1024)
    d = descriptor_from_compiled(compiled)
    assert [a.name for a in d.args] == ["x", "y", "out"] and d.specialized == (
        SpecializedArg(3, "n", 1, True),
    )
    launch = bind(KernelDescriptor.from_bytes(d.to_bytes()), device=0)
    out = torch.zeros_like(x)
    launch(1, 1, 1, torch.cuda.current_stream().cuda_stream, x, y, out, 1)
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y)
    with pytest.raises(KernelArgumentError, match="was specialized to 1"):
        launch(1, 1, 1, None, x, y, out, 2)
