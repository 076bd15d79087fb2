"""Item 5: bad launch arguments and descriptors raise clear errors naming kernel and
argument; never a crash. Run with the tensor fast path on and off."""

import pytest
import torch

from npu_launcher import (
    DescriptorError,
    KernelArgumentError,
    KernelArgumentTypeError,
    KernelDescriptor,
    bind,
    _native,
    _tensor_abi,
)


@pytest.fixture(params=["fast", "slow"])
def launch(request, fake_sim, sim_add_descriptor):
    _tensor_abi.calibrate()
    if request.param == "slow":
        _native.disable_tensor_fast_path()
        request.addfinalizer(lambda: _tensor_abi.calibrate.cache_clear() or _tensor_abi.calibrate())
    launch = bind(sim_add_descriptor)
    assert _native.tensor_fast_path_enabled() == (request.param == "fast")
    return launch


X, Y, OUT = torch.randn(64), torch.randn(64), torch.zeros(64)

CASES = [
    (
        (1, 1, 1, None, X, Y, OUT),
        KernelArgumentTypeError,
        r"kernel 'add_kernel' takes grid_x, grid_y, grid_z, stream and 4 kernel arguments \(x, y, out, n\); got 7",
    ),
    ((1, 1, 1, None, X, Y, OUT, 64, 1), KernelArgumentTypeError, "got 9 arguments"),
    ((1.0, 1, 1, None, X, Y, OUT, 64), KernelArgumentTypeError, "grid_x must be an int, got float"),
    ((1, -1, 1, None, X, Y, OUT, 64), KernelArgumentError, "grid_y must be in"),
    (
        (1, 1, 1, "s", X, Y, OUT, 64),
        KernelArgumentTypeError,
        "stream must be an int handle or None",
    ),
    (
        (1, 1, 1, None, 1.5, Y, OUT, 64),
        KernelArgumentTypeError,
        r"argument 'x' \(#0, \*fp32\) expects a tensor, a data pointer int or None, got float",
    ),
    (
        (1, 1, 1, None, X, "y", OUT, 64),
        KernelArgumentTypeError,
        r"argument 'y' \(#1, \*fp32\) expects a tensor",
    ),
    (
        (1, 1, 1, None, X, Y, OUT.double(), 64),
        KernelArgumentError,
        r"argument 'out' \(#2\): tensor dtype is torch.float64, the kernel was compiled for \*fp32 \(torch.float32\)",
    ),
    (
        (1, 1, 1, None, X.to("meta"), Y, OUT, 64),
        KernelArgumentError,
        r"argument 'x' \(#0\): tensor is on meta, the kernel runs on cpu",
    ),
    (
        (1, 1, 1, None, X, Y[1:], OUT, 63),
        KernelArgumentError,
        r"argument 'y' \(#1\): data pointer 0x[0-9a-f]+ is not 16-byte aligned",
    ),
    (
        (1, 1, 1, None, X, Y, 12, 64),
        KernelArgumentError,
        r"argument 'out' \(#2\): data pointer 0xc is not 16-byte",
    ),
    (
        (1, 1, 1, None, X, Y, OUT, 2**31),
        KernelArgumentError,
        r"argument 'n' \(#3\): 2147483648 is out of range for i32",
    ),
    (
        (1, 1, 1, None, X, Y, OUT, 64.0),
        KernelArgumentTypeError,
        r"argument 'n' \(#3, i32\) expects an int, got float",
    ),
    ((1, 1, 1, None, X, Y, OUT, None), KernelArgumentTypeError, "expects an int, got NoneType"),
]


@pytest.mark.parametrize("args, error, message", CASES, ids=[c[2][:40] for c in CASES])
def test_bad_argument_names_kernel_and_argument(launch, fake_sim, args, error, message):
    with pytest.raises(error, match=message) as info:
        launch(*args)
    assert "kernel 'add_kernel'" in str(info.value)
    assert fake_sim == []  # nothing was launched


def test_keywords_are_refused(launch):
    with pytest.raises(KernelArgumentTypeError, match="takes no keyword arguments"):
        launch(1, 1, 1, None, X, Y, OUT, 64, stream=0)


SLOT_CASES = [  # slot = launch.at(1, 1, 1, 2): stream, the 4 kernel arguments, 2 ignored
    (
        (None, X, Y, OUT, 64),
        KernelArgumentTypeError,
        r"kernel 'add_kernel' takes \(at its fixed grid\) stream and 4 kernel arguments \(x, y, out, n\) "
        r"then 2 ignored; got 5",
    ),
    ((None, X, Y, OUT, 64, 1, 2, 3), KernelArgumentTypeError, "got 8 arguments"),
    (("s", X, Y, OUT, 64, 1, 2), KernelArgumentTypeError, "stream must be an int handle or None"),
    (
        (None, X, Y, OUT.double(), 64, 1, 2),
        KernelArgumentError,
        r"argument 'out' \(#2\): tensor dtype",
    ),
]


@pytest.mark.parametrize("args, error, message", SLOT_CASES, ids=[c[2][:40] for c in SLOT_CASES])
def test_bad_grid_slot_call_names_kernel_and_argument(launch, fake_sim, args, error, message):
    slot = launch.at(1, 1, 1, 2)
    with pytest.raises(error, match=message):
        slot(*args)
    assert fake_sim == []
    slot(None, X, Y, OUT, 64, "grid", "literals")  # a good call: the trailing two are ignored
    assert len(fake_sim) == 1


@pytest.mark.parametrize(
    "at_args, error, message",
    [
        ((1, 1), TypeError, "takes 3 or 4 arguments, got 2"),
        ((1, -1, 1), KernelArgumentError, "grid_y must be in"),
        ((1.0, 1, 1), KernelArgumentTypeError, "grid_x must be an int, got float"),
        ((1, 1, 1, -1), KernelArgumentError, "ignore_trailing must be in"),
    ],
)
def test_bad_grid_slot_is_refused_when_made(launch, at_args, error, message):
    with pytest.raises(error, match=message):
        launch.at(*at_args)


def test_good_arguments_after_bad_ones_still_launch(launch, fake_sim):
    for args, error, _ in CASES:
        with pytest.raises(error):
            launch(*args)
    out = torch.zeros(64)
    launch(1, 1, 1, None, X, Y, out, 64)
    torch.testing.assert_close(out, X + Y)


def test_integer_divisibility_is_checked(fake_sim, kernels):
    from npu_launcher import sim_descriptor

    d = sim_descriptor(
        kernels.add_kernel,
        kernels.ADD_SIGNATURE,
        {"BLOCK": 64},
        divisibility={"n": 16},
        device_type="cpu",
    )
    with pytest.raises(
        KernelArgumentError, match=r"argument 'n' \(#3\): 60 is not a multiple of 16"
    ):
        bind(d)(1, 1, 1, None, X, Y, OUT, 60)


def test_descriptor_for_another_target_is_refused(cuda_add_kernel, sim_add_descriptor):
    from npu_launcher import descriptor_from_compiled

    with pytest.raises(
        DescriptorError,
        match=r"kernel 'add_kernel' targets 'cuda' \(cuda driver\), not the sim driver",
    ):
        bind(descriptor_from_compiled(cuda_add_kernel), driver="sim")
    with pytest.raises(DescriptorError, match="targets 'sim'"):
        bind(sim_add_descriptor, driver="cuda")


def test_descriptor_bytes_of_another_schema_version_are_refused():
    from npu_launcher.descriptor import ArgSpec, Target

    d = KernelDescriptor(
        "k", Target("sim", device_type="cpu"), "triton-python", b"", (ArgSpec("n", "i32"),)
    )
    with pytest.raises(DescriptorError, match="kernel 'k': descriptor schema version 7"):
        bind(d.to_bytes().replace(b'"version":2', b'"version":7'))  # bind takes bytes too
