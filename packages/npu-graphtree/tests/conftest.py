"""Device "npu" from npu-sim for every test here; each test gets fresh trees and settings."""

import pytest
import torch

npu_sim = pytest.importorskip("npu_sim")


@pytest.fixture(scope="session", autouse=True)
def _device():
    npu_sim.start()


@pytest.fixture(autouse=True)
def fresh_trees(monkeypatch):
    import npu_graphtree
    from npu_graphtree import config

    torch._dynamo.reset()  # models compiled by earlier tests must not exhaust recompiles
    npu_graphtree.reset_trees()
    npu_graphtree.clear_timings()
    monkeypatch.setattr(config, "settings", config.Settings(cudagraph_trees_generation_cloning="none"))
    yield
    npu_graphtree.reset_trees()


def step():
    """A new iteration (what each torch.compile invocation does implicitly)."""
    import npu_graphtree

    npu_graphtree.mark_step_begin()


def manager():
    import npu_graphtree

    return npu_graphtree.manager_for("npu", 0)


def npu(*shape, seed=None):
    if seed is not None:
        torch.manual_seed(seed)
    return torch.randn(*shape, device="npu")


class _Helpers:
    step = staticmethod(step)
    manager = staticmethod(manager)
    npu = staticmethod(npu)


@pytest.fixture
def h():
    return _Helpers
