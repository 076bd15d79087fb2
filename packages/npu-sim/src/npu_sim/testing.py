"""Helpers for tests that need several ranks on npu-sim (npu-sim's own, npu-inductor's,
npu-cache's): one spawned process per rank, each seeing one simulated device.

    from npu_sim.testing import spawn_ranks
    run = spawn_ranks(worker, 2, tmp_path, "arg")      # worker(rank, init_method, "arg") per rank
    run.check()                                          # every rank exited 0

``worker`` must be importable by name (a module-level function): ranks are spawned, not
forked, because the device starts at the child's ``import torch``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from npu_inductor_core import env_config as _env


@dataclasses.dataclass
class RankRun:
    exitcodes: list  # per rank (a rank killed at the timeout: -9)

    def check(self) -> None:
        """Fail unless every rank exited 0 (a rank's traceback is on the test's captured stderr:
        multiprocessing prints it there)."""
        assert self.exitcodes == [0] * len(self.exitcodes), (
            f"rank exit codes {self.exitcodes}: see the ranks' tracebacks in the captured stderr"
        )


def spawn_ranks(
    target: Callable,
    world: int,
    workdir: Path | str,
    *args,
    timeout: float = 600,
    env: Mapping[str, str] | Callable[[int], Mapping[str, str]] | None = None,
) -> RankRun:
    """Run ``target(rank, init_method, *args)`` in ``world`` spawned processes and wait for
    them (a rank still running after ``timeout`` seconds is killed). Rank r sees only
    simulated device r (``NPU_SIM_DEVICE_COUNT=world``, ``ASCEND_RT_VISIBLE_DEVICES=r``), as
    Ascend jobs pin one NPU per rank; ``init_method`` is a file rendezvous in ``workdir``.
    ``env``: more variables for every rank, or a function of the rank giving them.

    ``target`` is the process's target itself, with no wrapper of ours around it: npu-inductor's
    autoload leaves ``torch.compile``'s first import to code of the component packages on the
    stack (npu_sim's included), so a wrapper here would keep it from registering the
    components in the ranks."""
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    init = f"file://{Path(workdir) / 'rendezvous'}"
    procs = []
    extra = [dict(env(rank) if callable(env) else env or {}) for rank in range(world)]
    for rank in range(world):
        # the environment the child starts with (the device starts at its `import torch`):
        # ours plus the rank's, ours again once it has started
        rank_env = {
            "NPU_SIM_DEVICE_COUNT": str(world),
            "ASCEND_RT_VISIBLE_DEVICES": str(rank),
            **extra[rank],
        }
        with _env.overlay(rank_env):
            p = ctx.Process(target=target, args=(rank, init, *args))
            p.start()
        procs.append(p)
    deadline = time.monotonic() + timeout
    for p in procs:
        p.join(timeout=max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    return RankRun([p.exitcode for p in procs])
