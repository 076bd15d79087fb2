"""wrap_inductor_compiled_regions on npu (L05): with the flag, a compiled npu region runs as
one ``inductor_compiled_code`` HOP that TorchDispatchModes (here DebugMode) see, forward and
backward, and its kernels still launch through npu-launcher's launch objects; without it
the mode sees no such region."""

import pytest
import torch
import torch._inductor.config

pytest.importorskip("npu_sim")
pytest.importorskip("npu_lowering")
from torch.utils._debug_mode import DebugMode  # noqa: E402

HOP = "higher_order.inductor_compiled_code"


@pytest.fixture(scope="module", autouse=True)
def npu():
    import npu_inductor

    npu_inductor.enable()


# kernels go through run() only with use_fast_triton_launcher off (torch 2.11 lacks the flag)
pytestmark = pytest.mark.skipif(
    not hasattr(torch._inductor.config, "use_fast_triton_launcher"),
    reason=f"torch {torch.__version__} has no Inductor flag use_fast_triton_launcher",
)


@pytest.fixture
def launches():
    from npu_lowering.runtime import autotuner

    torch._dynamo.reset()
    autotuner._static_launches.clear()
    return autotuner.LAUNCHES


def f(a, b):
    return (a.sin() * b).relu().sum(-1)


def compiled_under_debug_mode(wrap: bool, launches, *, backward=False):
    torch.manual_seed(0)
    a, b = torch.randn(4, 16), torch.randn(4, 16)
    na, nb = (t.to("npu").requires_grad_(backward) for t in (a, b))
    # use_fast_triton_launcher off: kernels go through run() on every call, which records each
    # launch in LAUNCHES (direct-launch slots call the same launch objects without a record)
    with torch._inductor.config.patch(
        wrap_inductor_compiled_regions=wrap, use_fast_triton_launcher=False
    ):
        fn = torch.compile(f)
        fn(na, nb)  # compile outside the mode
        launches.clear()
        with DebugMode() as mode:
            out = fn(na, nb)
            if backward:
                out.sum().backward()
    ra, rb = a.requires_grad_(backward), b.requires_grad_(backward)
    ref = f(ra, rb)
    torch.testing.assert_close(out.detach().cpu(), ref.detach(), atol=1e-5, rtol=1e-5)
    if backward:
        ref.sum().backward()
        torch.testing.assert_close(na.grad.cpu(), ra.grad, atol=1e-5, rtol=1e-5)
    return mode.debug_string(), list(launches)


@pytest.mark.feature("L05")
def test_compiled_npu_region_is_one_hop_visible_to_dispatch_modes(launches):
    text, ran = compiled_under_debug_mode(True, launches)
    assert text.count(HOP) == 1
    assert ran and all(entry[-1] for entry in ran)  # launched through the launch objects inside it


@pytest.mark.feature("L05")
def test_forward_and_backward_regions_are_wrapped(launches):
    text, _ = compiled_under_debug_mode(True, launches, backward=True)
    assert text.count(HOP) == 2


def test_without_the_flag_no_region_is_reported(launches):
    text, ran = compiled_under_debug_mode(False, launches)
    assert HOP not in text and ran
