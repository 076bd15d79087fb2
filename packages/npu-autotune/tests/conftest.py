import pytest
import torch


@pytest.fixture(scope="session", autouse=True)
def npu():
    import npu_autotune
    import npu_lowering
    import npu_sim

    npu_sim.start()
    npu_lowering.register()
    npu_autotune.register()
    return torch.device("npu")


@pytest.fixture
def fresh():
    """Each test compiles its own kernels (no in-memory or on-disk reuse between tests), with
    short benchmark budgets (interpreted kernels cost ms per run)."""
    from torch._dynamo.utils import counters
    from torch._inductor import config
    from torch._inductor.utils import fresh_cache

    import npu_autotune.autotuner as at

    torch._dynamo.reset()
    counters.clear()
    at.LAUNCHED.clear()
    with fresh_cache(), config.patch(inductor_default_autotune_warmup=0, inductor_default_autotune_rep=1):
        yield at.LAUNCHED
    torch._dynamo.reset()


@pytest.fixture
def kernels():
    """kernels(): the npu kernel objects of the modules compiled so far in this test."""
    from torch._inductor.codecache import PyCodeCache

    from npu_lowering.runtime import heuristics

    def scan():
        out = {}
        for mod in list(PyCodeCache.modules):
            out.update({id(v): v for v in vars(mod).values() if isinstance(v, heuristics.NpuTunedAutotuner)})
        return out

    before = scan()  # kernel objects of earlier tests stay alive in PyCodeCache: ids stay unique

    def find():
        return [v for i, v in scan().items() if i not in before]

    return find


@pytest.fixture
def fake_timings():
    """fake_timings(cost): the npu benchmarker runs the callable once and reports
    cost(config kwargs of the config it launched) instead of a measured time, so a test can
    decide which config is fastest. Restores the real benchmarker after the test."""
    from torch._inductor.runtime import benchmarking

    import npu_autotune.autotuner as at
    from npu_autotune import benchmarker

    def install(cost):
        def fake(self, fn, *, warmup, rep, **kwargs):
            fn()
            return float(cost(at.LAUNCHED[-1][1]))

        benchmarking.register_benchmarker("npu", fake, override=True)

    yield install
    benchmarking.register_benchmarker("npu", benchmarker.benchmark_npu, override=True)
