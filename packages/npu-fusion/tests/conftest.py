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


@pytest.fixture
def compiled():
    """compiled(fn, *args, **inductor_config) -> (kernel count, generated code): a fresh
    compile (no FX graph or kernel cache reuse), kernels counted by their @triton.jit."""
    from torch._inductor import config
    from torch._inductor.utils import fresh_cache, run_and_get_code

    def run(fn, *args, **patch):
        torch._dynamo.reset()
        with fresh_cache(), config.patch(patch):
            _, codes = run_and_get_code(torch.compile(fn), *args)
        code = "\n".join(codes)
        return code.count("@triton.jit"), code

    yield run
    torch._dynamo.reset()
