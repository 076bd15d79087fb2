"""Process group "hccl" on npu-sim (npu_sim/distributed.py, csrc/distributed.cpp): two ranks,
one simulated device each (ASCEND_RT_VISIBLE_DEVICES), collectives on npu tensors checked
against the values they must give."""

from __future__ import annotations

import datetime

import pytest
import torch
import torch.distributed as dist

from npu_sim.testing import spawn_ranks

WORLD = 2
TIMEOUT = datetime.timedelta(seconds=60)


def _spawn(target, tmp_path, *args) -> None:
    """Run ``target(rank, init_method, *args)`` on WORLD ranks, rank r seeing only simulated
    device r (as torch_npu users pin one NPU per rank); fail unless all exit 0 (their
    tracebacks are on the captured stderr)."""
    spawn_ranks(target, WORLD, tmp_path, *args, timeout=180).check()


def _collectives(rank: int, init: str) -> None:
    import torch.distributed._functional_collectives as funcol
    from torch.testing import assert_close

    assert torch.npu.device_count() == 1  # ASCEND_RT_VISIBLE_DEVICES=rank
    dist.init_process_group("hccl", init_method=init, rank=rank, world_size=WORLD, timeout=TIMEOUT)
    assert dist.get_backend() == "hccl"
    npu = torch.device("npu", 0)
    other = 1 - rank

    t = torch.tensor([1.0, 2.0], device=npu) * (rank + 1)
    dist.all_reduce(t)
    assert t.device == npu
    assert_close(t.cpu(), torch.tensor([3.0, 6.0]))
    t = torch.tensor([1.0, 2.0], device=npu) * (rank + 1)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert_close(t.cpu(), torch.tensor([1.5, 3.0]))
    t = torch.tensor([rank, other], device=npu)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    assert t.cpu().tolist() == [1, 1]

    out = torch.empty(WORLD, 3, device=npu)
    dist.all_gather_into_tensor(out, torch.full((3,), float(rank), device=npu))
    assert_close(out.cpu(), torch.tensor([[0.0] * 3, [1.0] * 3]))
    outs = [torch.empty(2, device=npu) for _ in range(WORLD)]
    dist.all_gather(outs, torch.full((2,), rank + 10.0, device=npu))
    assert_close(torch.stack(outs).cpu(), torch.tensor([[10.0, 10.0], [11.0, 11.0]]))

    out = torch.empty(2, device=npu)
    dist.reduce_scatter_tensor(out, torch.arange(4.0, device=npu) + 10 * rank)  # [0..3] + [10..13]
    assert_close(out.cpu(), torch.tensor([10.0, 12.0]) if rank == 0 else torch.tensor([14.0, 16.0]))

    t = torch.full((2, 2), float(rank), device=npu)
    dist.broadcast(t, src=1)
    assert_close(t.cpu(), torch.ones(2, 2))

    dist.barrier()

    sub = dist.new_group([0, 1])  # a second backend, made by the same factory
    t = torch.ones(2, device=npu)
    dist.all_reduce(t, group=sub)
    assert_close(t.cpu(), torch.full((2,), 2.0))
    got = torch.empty(2, device=npu)  # both ranks send first: point-to-point must not block
    ops = [
        dist.P2POp(dist.isend, torch.full((2,), rank + 5.0, device=npu), other),
        dist.P2POp(dist.irecv, got, other),
    ]
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    assert_close(got.cpu(), torch.full((2,), other + 5.0))

    work = dist.all_reduce(torch.ones(2, device=npu), async_op=True)
    (value,) = work.get_future().wait()  # DDP's comm hooks read the future: the npu result
    assert value.device == npu
    assert_close(value.cpu(), torch.full((2,), 2.0))
    # a finite timeout, as callers written for HCCL/NCCL pass (Inductor's collective benchmarking)
    assert work.wait(datetime.timedelta(seconds=5))
    assert dist.barrier(async_op=True).wait(datetime.timedelta(seconds=30))

    group = dist.group.WORLD
    r = funcol.all_reduce(torch.ones(3, device=npu) * (rank + 1), "sum", group)
    assert r.device == npu
    assert_close(r.cpu(), torch.full((3,), 3.0))
    r = funcol.all_gather_tensor(torch.full((2,), float(rank), device=npu), 0, group)
    assert_close(r.cpu(), torch.tensor([0.0, 0.0, 1.0, 1.0]))
    r = funcol.reduce_scatter_tensor(torch.arange(4.0, device=npu), "sum", 0, group)
    assert_close(r.cpu(), torch.tensor([0.0, 2.0]) if rank == 0 else torch.tensor([4.0, 6.0]))

    g = torch.npu.NPUGraph()
    t = torch.ones(2, device=npu)
    with pytest.raises(RuntimeError, match="during npu graph capture is not supported"):
        with torch.npu.graph(g):
            dist.all_reduce(t)


def test_collectives_on_npu_across_two_ranks(tmp_path):
    _spawn(_collectives, tmp_path)


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))


def _reference_step(x, y) -> torch.nn.Module:
    """One process, the whole batch: what every rank's model must equal after its step."""
    model = _model()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    return model


def _step(model, x, y, rank: int, npu) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    shard = slice(rank * 4, rank * 4 + 4)  # the two half-batch gradients are averaged
    torch.nn.functional.mse_loss(model(x[shard].to(npu)), y[shard].to(npu)).backward()
    opt.step()


def _training_steps(rank: int, init: str) -> None:
    from torch.distributed.fsdp import fully_shard
    from torch.nn.parallel import DistributedDataParallel as DDP

    npu = torch.device("npu", 0)
    # no backend named: the device's default, "hccl", as on torch_npu
    dist.init_process_group(
        init_method=init, rank=rank, world_size=WORLD, timeout=TIMEOUT, device_id=npu
    )
    assert dist.get_backend() == "hccl"
    assert dist.group.WORLD.bound_device_id == npu

    gen = torch.Generator().manual_seed(1)
    x, y = torch.randn(8, 4, generator=gen), torch.randn(8, 2, generator=gen)
    reference = list(_reference_step(x, y).parameters())

    ddp = DDP(_model().to(npu), device_ids=[npu])  # allreduce of gradient buckets
    _step(ddp, x, y, rank, npu)
    for p, q in zip(ddp.module.parameters(), reference, strict=True):
        torch.testing.assert_close(p.detach().cpu(), q.detach())

    fsdp = _model().to(
        npu
    )  # all_gather_into_tensor of parameters, reduce_scatter_tensor of gradients
    for layer in fsdp:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer)
    fully_shard(fsdp)
    _step(fsdp, x, y, rank, npu)
    for p, q in zip(fsdp.parameters(), reference, strict=True):
        torch.testing.assert_close(p.full_tensor().detach().cpu(), q.detach())


def test_ddp_and_fsdp2_steps_on_npu_match_one_process(tmp_path):
    _spawn(_training_steps, tmp_path)


def test_hccl_is_registered_for_npu():
    from npu_sim import distributed

    assert distributed.register()  # idempotent: already registered by start()
    assert dist.Backend.default_device_backend_map["npu"] == "hccl"
    assert dist.Backend._plugins["HCCL"].creator_fn is distributed._create
    assert dist.Backend.backend_capability["hccl"] == ["npu"]


def test_not_the_provider_where_torch_npu_is_installed(monkeypatch):
    import importlib.util

    from npu_sim import distributed

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: object() if name == "torch_npu" else real(name, *a),
    )
    assert not distributed._sim_provides_npu()


def _release_on_caller(rank: int, init: str) -> None:
    """Python objects in the caller's thread-local state (every backward stashes one there,
    torch.autograd's "context"; Python modes are others) travel with each gloo Work. They must be
    released on the calling thread, before the collective returns: gloo's worker thread, were it
    left the last reference, would take the GIL to drop them, and during interpreter shutdown
    Python ends it there (pthread_exit), which aborts the process ("terminate called without an
    active exception")."""
    import threading
    import weakref

    dist.init_process_group("hccl", init_method=init, rank=rank, world_size=WORLD, timeout=TIMEOUT)
    npu = torch.device("npu", 0)
    caller = threading.get_ident()

    class Marker:
        pass

    collectives = {
        "all_reduce": lambda: dist.all_reduce(torch.ones(4, device=npu)),
        "all_reduce_avg": lambda: dist.all_reduce(torch.ones(4, device=npu), op=dist.ReduceOp.AVG),
        "all_gather_into_tensor": lambda: dist.all_gather_into_tensor(
            torch.empty(2 * WORLD, device=npu), torch.ones(2, device=npu)
        ),
        "reduce_scatter_tensor": lambda: dist.reduce_scatter_tensor(
            torch.empty(2, device=npu), torch.ones(2 * WORLD, device=npu)
        ),
        "broadcast": lambda: dist.broadcast(torch.ones(4, device=npu), src=0),
        "barrier": lambda: dist.barrier(),
    }
    late = []
    for _ in range(8):
        for name, collective in collectives.items():
            released_on = []
            marker = Marker()
            ref = weakref.ref(marker, lambda _: released_on.append(threading.get_ident()))
            torch._C._stash_obj_in_tls("npu_sim_test", marker)
            del marker  # the thread-local state's reference (and the Work's copy of it) remain
            collective()
            torch._C._remove_obj_from_tls("npu_sim_test")
            if ref() is not None or released_on != [caller]:
                late.append(name)
            while ref() is not None:  # the next case starts clean
                threading.Event().wait(0.001)
    dist.destroy_process_group()
    assert not late, f"rank {rank}: a gloo Work outlived these collectives' return: {late}"


def test_collectives_release_the_callers_python_objects_before_returning(tmp_path):
    _spawn(_release_on_caller, tmp_path)
