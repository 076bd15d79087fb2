"""The devices the graph-tree tests run on, fresh trees and settings for every test.

Tests that take the ``h`` fixture run once per device: ``npu`` (npu-sim, CI) and ``cuda``
where a GPU is present (the GPU machine). ``NPU_GRAPHTREE_TEST_DEVICES=cuda`` (a comma
list) chooses explicitly: on torch 2.11 npu-sim cannot start, so the GPU machine runs cuda
only and must not even try the sim.
"""

import importlib.util
import os

import pytest
import torch


def _devices() -> list[str]:
    chosen = os.environ.get("NPU_GRAPHTREE_TEST_DEVICES")
    if chosen:
        return [d.strip() for d in chosen.split(",") if d.strip()]
    found = []
    if importlib.util.find_spec("npu_sim") is not None:
        found.append("npu")
    if torch.cuda.is_available():
        found.append("cuda")
    return found or ["npu"]  # nothing usable: the npu tests skip, saying why


DEVICES = _devices()


def _start(device: str) -> None:
    if device == "npu":
        npu_sim = pytest.importorskip("npu_sim")
        npu_sim.start()
    elif device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a cuda device (run on the GPU machine)")


@pytest.fixture(autouse=True)
def fresh_trees(monkeypatch):
    import npu_graphtree
    from npu_graphtree import config

    torch._dynamo.reset()  # models compiled by earlier tests must not exhaust recompiles
    npu_graphtree.reset_trees()
    npu_graphtree.clear_timings()
    # tests set these keys plainly (not monkeypatch.setattr: pytest's undo would delete, and so
    # hide, a config key); leaving this patch restores them
    with config.patch(
        cudagraph_trees_generation_cloning="none", time_replays=False, slow_asserts=False
    ):
        yield
    npu_graphtree.reset_trees()


class Device:
    """What a test needs of its device: name, module (torch.npu / torch.cuda), tensors, tree."""

    def __init__(self, dev: str):
        self.dev = dev
        self.mod = getattr(torch, dev)

    @staticmethod
    def step():
        """A new iteration (what each torch.compile invocation does implicitly)."""
        import npu_graphtree

        npu_graphtree.mark_step_begin()

    def manager(self):
        import npu_graphtree

        return npu_graphtree.manager_for(self.dev, 0)

    def rand(self, *shape, seed=None):
        if seed is not None:
            torch.manual_seed(seed)
        return torch.randn(*shape, device=self.dev)

    def read_moving_pool_outputs(self, steps: int) -> None:
        """Each step a consumer graph reads a different output of a producer graph (a managed
        input that moves: a re-record every step until the re-record limit sends it eager)."""
        import npu_graphtree as G

        producer = G.graphify(
            lambda a: [a[0] * 1, a[0] * 2, a[0] * 3], [self.rand(4)], name="producer"
        )
        consumer = G.graphify(lambda a: [a[0] + 1], [self.rand(4)], name="consumer")
        for i in range(steps):
            self.step()
            outs = producer([self.rand(4)])
            (z,) = consumer([outs[i % 3]])
            torch.testing.assert_close(z, outs[i % 3] + 1)


@pytest.fixture(params=DEVICES)
def h(request, fresh_trees):
    from npu_graphtree import config

    _start(request.param)
    # npu-sim: slow asserts on, so every restore is checked against the pool and against what
    # cuda's and torch_npu's restore refuse (on cuda the allocator itself refuses)
    config.slow_asserts = request.param == "npu"  # undone by fresh_trees' patch
    return Device(request.param)


@pytest.fixture
def npu_only(h):
    if h.dev != "npu":
        pytest.skip("npu-sim specific")
    return h


@pytest.fixture
def inductor_patch():
    """``inductor_patch({"triton.x": v})``: Inductor config changed until the test ends, through
    ``config.patch`` (monkeypatch would ``delattr`` a config entry on undo, hiding it)."""
    from torch._inductor import config

    entered = []

    def apply(changes: dict) -> None:
        p = config.patch(changes)
        p.__enter__()
        entered.append(p)

    yield apply
    for p in reversed(entered):
        p.__exit__(None, None, None)
