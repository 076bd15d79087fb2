"""Joint-graph passes for npu compiles (``graph_hooks.joint``): Inductor's joint hook is the
user's ``joint_custom_post_pass``; an npu training compile runs the user's passes and then
npu's, as one more ``CustomGraphPass`` (graph caches stay keyed, not bypassed); every other
compile sees the user's setting alone."""

from __future__ import annotations

import torch
from torch._dynamo.utils import counters
from torch._inductor import config
from torch._inductor.custom_graph_pass import CustomGraphPass
from torch._inductor.utils import fresh_cache

from npu_inductor_core import graph_hooks


class UsersPass(CustomGraphPass):
    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, graph) -> None:
        self.graphs += 1

    def uuid(self) -> str:
        return "users-pass"


def _train_step(device: str) -> None:
    x = torch.randn(4, 8, device=device, requires_grad=True)
    torch._dynamo.reset()
    torch.compile(lambda x: (x.sin() * 2).sum())(x).backward()
    torch.testing.assert_close(x.grad, 2 * x.detach().cos())


def test_npu_joint_graphs_run_the_users_passes_then_npus(monkeypatch):
    seen = []
    monkeypatch.setattr(
        graph_hooks, "_joint", {"test": (lambda g: seen.append(len(g.nodes)), lambda: "t1")}
    )
    users = UsersPass()
    counters.clear()
    with fresh_cache(), config.patch(joint_custom_post_pass=users):
        _train_step("npu")
        assert users.graphs == 1 and len(seen) == 1 and seen[0] > 0
        assert counters["inductor"]["fxgraph_cache_bypass"] == 0  # npu's pass has a uuid
        _train_step("cpu")  # a cpu compile: the user's pass alone
        assert users.graphs == 2 and len(seen) == 1
    assert config.joint_custom_post_pass is None  # the user's setting, restored


def test_the_joint_pass_uuid_names_every_registered_pass():
    from npu_inductor_core.joint_passes import NpuJointPasses

    one = NpuJointPasses({"a": (None, lambda: "1")})
    two = NpuJointPasses({"a": (None, lambda: "2")})
    assert one.uuid() != two.uuid() and "a=1" in one.uuid()
    assert "npu-lowering" in graph_hooks.joint_owners()  # npu's saved random draws
