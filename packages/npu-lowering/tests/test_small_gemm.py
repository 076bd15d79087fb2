"""npu's small-GEMM policy: in default mode a small static npu matmul is a one-tile Triton
template (its epilogue fused in), not an ATen call; large, dynamic, ATen-only or policy-off
matmuls, and other devices, are upstream's."""

import pytest
import torch
from torch._inductor import config
from torch._inductor.utils import fresh_cache, run_and_get_code

import npu_lowering.config as npu_config
from npu_lowering import small_gemm


@pytest.fixture(autouse=True)
def tiles():
    # the template candidates come from npu-autotune (registered by importing the module)
    pytest.importorskip("npu_autotune.gemm_templates")
    with fresh_cache():
        yield
    torch._dynamo.reset()


def linear_gelu(x, w, b):
    return torch.nn.functional.gelu(torch.nn.functional.linear(x, w, b)) + x


def args(m=4, k=64, device="npu"):
    torch.manual_seed(0)
    return [t.to(device) for t in (torch.randn(m, k), torch.randn(k, k), torch.randn(k))]


def compiled(fn, inputs, **kw):
    torch._dynamo.reset()
    out, code = run_and_get_code(torch.compile(fn, **kw), *inputs)
    torch.testing.assert_close(out.cpu(), fn(*(t.cpu() for t in inputs)), atol=1e-4, rtol=1e-4)
    return "\n".join(code)


def test_small_static_gemm_is_one_fused_template_kernel():
    code = compiled(linear_gelu, args())
    assert (
        "tl.dot(" in code
        and "extern_kernels.mm(" not in code
        and "extern_kernels.addmm(" not in code
    )
    assert code.count("@triton.jit") == 1  # bias, GELU and the residual add in the template
    assert "BLOCK_M : tl.constexpr = 16" in code  # the one tile, scaled to M=4


def test_policy_off_large_dynamic_or_aten_only_stay_aten():
    with npu_config.patch(small_gemm_templates=False):
        assert "tl.dot(" not in compiled(linear_gelu, args())
    with npu_config.patch(small_gemm_max_macs=4 * 64 * 64 - 1):  # one MAC too many
        assert "tl.dot(" not in compiled(linear_gelu, args())
    with config.patch(max_autotune_gemm_backends="ATEN"):
        assert "tl.dot(" not in compiled(linear_gelu, args())
    assert "tl.dot(" not in compiled(linear_gelu, args(m=5), dynamic=True)


def test_bmm_and_baddbmm_too():
    torch.manual_seed(0)
    a, b, c = torch.randn(2, 8, 32), torch.randn(2, 32, 16), torch.randn(16)
    code = compiled(lambda x, y, z: torch.baddbmm(z, x, y).relu(), [t.to("npu") for t in (a, b, c)])
    assert "tl.dot(" in code


def test_other_devices_and_the_cache_key():
    assert small_gemm.DEVICES == {"npu"}
    cpu = torch.compile(lambda x, w: x @ w)
    x, w = torch.randn(4, 8), torch.randn(8, 8)
    torch.testing.assert_close(cpu(x, w), x @ w)  # cpu: upstream's lowering (DEVICES has no cpu)
    from torch._inductor.codegen.common import get_custom_backend_config_for_device

    # npu's device_custom_config: its keys are in the FX graph cache key (tests/test_config.py)
    assert get_custom_backend_config_for_device("npu") is npu_config
    key = npu_config.save_config_portable(ignore_private_configs=False)
    with npu_config.patch(small_gemm_templates=False):
        assert npu_config.save_config_portable(ignore_private_configs=False) != key


def test_a_users_own_lowering_is_chained_not_overwritten():
    from torch._inductor import lowering

    if not hasattr(lowering, "user_lowerings"):
        pytest.skip("torch 2.11: the policy wraps lowerings[op] (a patch), no user_lowerings")
    mm = torch.ops.aten.mm.default
    assert getattr(
        lowering.user_lowerings.get(mm), "_npu_small_gemm", False
    )  # registered, no patch
    assert not getattr(
        lowering.lowerings[mm], "_npu_small_gemm", False
    )  # upstream's table untouched
    calls = []

    def users(*args, **kwargs):
        calls.append(args)
        return None  # "not mine": the policy, then upstream's lowering

    registry = {mm: users}
    assert small_gemm.register_user_lowerings(registry)
    assert registry[mm].chained is users
    saved = lowering.user_lowerings[mm]
    lowering.user_lowerings[mm] = registry[mm]
    try:
        code = compiled(lambda x, w: (x @ w).relu(), args()[:2])
    finally:
        lowering.user_lowerings[mm] = saved
    assert calls and "tl.dot(" in code  # the user's entry ran first, then the policy


def test_an_epilogue_read_through_a_permute_is_masked_by_every_row():
    # M=8 in a 16-row tile: the residual is read through a permute (x9 = (xindex // 64) % 4 in
    # the epilogue), and its rows past M must stay masked (an NPU faults on the load)
    def fn(x, w, b, r):
        return torch.addmm(b, x, w).view(2, 4, 64) + r.permute(1, 0, 2)

    torch.manual_seed(0)
    inputs = [torch.randn(8, 64), torch.randn(64, 64), torch.randn(64), torch.randn(4, 2, 64)]
    with torch.no_grad():
        code = compiled(fn, [t.to("npu") for t in inputs])
    assert "tl.dot(" in code and code.count("@triton.jit") == 1


def test_the_cost_model_decides_per_gemm(monkeypatch):
    """Template or ATen by the Ascend cost model, per GEMM: a GEMM beyond the former fixed
    threshold (2**24 MACs) the model prices faster as a template gets one; a large one stays
    ATen and equals eager bit for bit (upstream's extern GEMM); with aclnn's launch priced
    like a kernel's, even a small GEMM is ATen's (the estimate, not a size rule, decides)."""
    import dataclasses

    from npu_inductor_core import cost_model
    from npu_inductor_core.device import device

    def mm(a, b):
        return a @ b

    torch.manual_seed(0)
    mid = [torch.randn(320, 320).to("npu") for _ in range(2)]
    assert 320**3 > 1 << 24 and small_gemm.template_is_faster(
        mid[0].device, torch.float32, 1, 320, 320, 320
    )
    assert "tl.dot(" in compiled(mm, mid)

    large = [torch.randn(1024, 1024).to("npu") for _ in range(2)]
    assert not small_gemm.template_is_faster(large[0].device, torch.float32, 1, 1024, 1024, 1024)
    torch._dynamo.reset()
    out, code = run_and_get_code(torch.compile(mm), *large)
    assert "tl.dot(" not in "\n".join(code)
    assert torch.equal(out.cpu(), large[0].cpu() @ large[1].cpu())

    family = device(0).family
    costs = cost_model.COSTS[family]
    monkeypatch.setitem(
        cost_model.COSTS, family, dataclasses.replace(costs, aclnn_launch_s=costs.kernel_launch_s)
    )
    assert "tl.dot(" not in compiled(linear_gelu, args())


@pytest.mark.parametrize("autotune", [False, True], ids=["default", "max_autotune"])
@pytest.mark.parametrize("op", ["addmm", "baddbmm"])
def test_a_bias_with_beta_zero_is_ignored_as_aten_ignores_it(op, autotune):
    # beta=0: a NaN or inf in the bias stays out of the result (ATen's rule); upstream's
    # template epilogue multiplied the bias by 0 and gave NaN everywhere
    torch.manual_seed(0)
    batch = () if op == "addmm" else (3,)
    a, b = torch.randn(*batch, 32, 64), torch.randn(*batch, 64, 48)
    bias = torch.full((*batch, 1, 48), float("nan"))
    fn = lambda bias, a, b: getattr(torch.ops.aten, op)(bias, a, b, beta=0.0, alpha=2.0)  # noqa: E731
    with config.patch(max_autotune=autotune):
        code = compiled(fn, [t.to("npu") for t in (bias, a, b)])
    assert "tl.dot(" in code  # the premise: a template computes the product
    assert not torch.isnan(fn(bias, a, b)).any()
