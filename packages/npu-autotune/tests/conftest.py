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
    with (
        fresh_cache(),
        config.patch(inductor_default_autotune_warmup=0, inductor_default_autotune_rep=1),
    ):
        yield at.LAUNCHED
    torch._dynamo.reset()


@pytest.fixture
def kernels():
    """kernels(): the npu kernel objects created since the test started that ran (a compile
    may build more than one object per kernel source; only one runs)."""
    import gc

    from npu_lowering.runtime import heuristics

    def alive():
        out = []
        for o in gc.get_objects():
            try:
                if isinstance(o, heuristics.NpuCachingAutotuner):
                    out.append(o)
            except ReferenceError:  # a dead weak proxy
                pass
        return out

    before = alive()  # held, so their ids stay unique during the test
    seen = {id(o) for o in before}

    def find():
        return [o for o in alive() if id(o) not in seen and getattr(o, "_npu_tuned", False)]

    yield find
    del before


@pytest.fixture
def fake_timings():
    """fake_timings(cost): the npu benchmarker runs the callable once and reports
    cost(config kwargs of the config it launched) instead of a measured time, so a test can
    decide which config is fastest. Restores the real benchmarker after the test."""

    import npu_autotune.autotuner as at
    from npu_autotune import _compat, benchmarker

    def install(cost):
        def fake(self, fn, *, warmup, rep, **kwargs):
            fn()
            return float(cost(at.LAUNCHED[-1][1]))

        _compat.register_npu_benchmarker("npu", fake)

    yield install
    _compat.register_npu_benchmarker("npu", benchmarker.benchmark_npu)
