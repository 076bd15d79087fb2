import contextlib
import dataclasses

import pytest
import torch


@pytest.fixture(scope="session", autouse=True)
def npu():
    import npu_fusion
    import npu_lowering
    import npu_sim

    npu_sim.start()
    npu_lowering.register()
    npu_fusion.register()
    return torch.device("npu")


@contextlib.contextmanager
def _device_ub(nbytes: int):
    """The rule plans on an npu whose compiler plans ``nbytes`` of UB (the device facts every
    config source reads, replaced for the rule; kernels still tile for the real device)."""
    from npu_fusion import ub_rule

    real = ub_rule._device
    ub_rule._device = lambda index=0: dataclasses.replace(real(index), ub_bytes=nbytes)
    try:
        yield
    finally:
        ub_rule._device = real


@pytest.fixture
def device_ub():
    """device_ub(nbytes): a context in which the fusion rule plans on a UB of ``nbytes``."""
    return _device_ub


@dataclasses.dataclass
class Compiled:
    code: str  # the generated wrapper and kernels
    nodes: int  # scheduler nodes before fusion (what lowering realized)

    @property
    def kernels(self) -> int:
        return self.code.count("@triton.jit")

    @property
    def loads(self) -> int:
        return self.code.count("tl.load(")

    @property
    def stores(self) -> int:
        return self.code.count("tl.store(")


def _cpu(x):
    if isinstance(x, torch.Tensor):
        return x.detach().cpu()
    if isinstance(x, (list, tuple)):
        return type(x)(_cpu(v) for v in x)
    return x


@pytest.fixture
def compiled():
    """compiled(fn, *args, dynamic=None, **inductor_config) -> Compiled: a fresh compile for
    npu (no FX graph or kernel cache reuse; ``dynamic`` as torch.compile takes it) under the
    given Inductor config, its results checked against eager on CPU copies."""
    from torch._inductor import config, metrics
    from torch._inductor.utils import fresh_cache, run_and_get_code

    def run(fn, *args, dynamic=None, **patch):
        for key in patch:  # a flag this torch does not have (2.11 lacks some of 2.13's)
            *path, name = key.split(".")
            owner = config
            for part in path:
                owner = getattr(owner, part, None)
            if owner is None or not hasattr(owner, name):
                pytest.skip(f"torch {torch.__version__} has no Inductor flag {key}")
        torch._dynamo.reset()
        metrics.reset()
        with fresh_cache(), config.patch(patch):
            out, codes = run_and_get_code(torch.compile(fn, dynamic=dynamic), *args)
        torch.testing.assert_close(_cpu(out), fn(*_cpu(args)), atol=1e-4, rtol=1e-4)
        return Compiled("\n".join(codes), metrics.ir_nodes_pre_fusion)

    yield run
    torch._dynamo.reset()
