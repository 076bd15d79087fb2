"""Size-1 programs for test_specialized_args.py, also run as a child process there with
TRITON_INTERPRET=1 (read when Triton modules are imported, so it cannot be switched inside
one test process without leaving interpreted helper functions behind for later tests):

    TRITON_INTERPRET=1 python specialized_args_cases.py   # prints one JSON line {case: "ok" | error}
"""

from __future__ import annotations

import json
import sys

import torch


def check(fn, *args, calls=2, **compile_kwargs):
    compiled = torch.compile(fn, **compile_kwargs)
    for _ in range(calls):  # the second call goes through the promoted direct-launch slots
        out = compiled(*args)
    ref = fn(*[a.cpu() if isinstance(a, torch.Tensor) else a for a in args])
    for o, r in zip(
        out if isinstance(out, tuple) else (out,), ref if isinstance(ref, tuple) else (ref,)
    ):
        assert o.device.type == "npu"
        torch.testing.assert_close(o.cpu(), r, atol=1e-5, rtol=1e-5, equal_nan=True)


def _idx(*shape, high=4):
    return torch.randint(0, high, shape, device="npu")


CASES = {
    "sum_plus_1": (lambda x: x.sum() + 1, lambda: (torch.randn(4, device="npu"),)),
    "full": (
        lambda x: torch.full((1,), 3.0, device=x.device) + x,
        lambda: (torch.randn(1, device="npu"),),
    ),
    "pointwise_size1_dim": (
        lambda x: (x * 2).t().contiguous(),
        lambda: (torch.randn(1, 5, device="npu"),),
    ),
    "softmax_one_row": (
        lambda x: torch.softmax(x, -1),
        lambda: (torch.randn(1, 16, device="npu"),),
    ),
    "var": (lambda x: x.var(-1), lambda: (torch.randn(1, 8, device="npu"),)),
    "cumsum": (lambda x: x.cumsum(-1), lambda: (torch.randn(1, 4, device="npu"),)),
    "argmax": (lambda x: (x.argmax(-1), x.argmin(0)), lambda: (torch.randn(1, 4, device="npu"),)),
    "any_all": (
        lambda x: ((x > 0).any(), (x > -9).all(-1)),
        lambda: (torch.randn(1, 4, device="npu"),),
    ),
    "gather": (lambda x, i: x.gather(1, i), lambda: (torch.randn(1, 4, device="npu"), _idx(1, 1))),
    "scatter": (
        lambda x, i, s: x.scatter(1, i, s),
        lambda: (torch.randn(1, 4, device="npu"), _idx(1, 1), torch.randn(1, 1, device="npu")),
    ),
}


def run_case(name: str) -> None:
    fn, make = CASES[name]
    check(fn, *make())


def size_becomes_1_later() -> None:
    """dynamic=True: Dynamo recompiles for size 1 (its 0/1 specialization), and that
    compile's kernels have the size as a constant; the earlier graph keeps running."""
    fn = torch.compile(lambda x: (x * 2).sum(-1) + x.amax(-1), dynamic=True)
    for n in (3, 2, 1, 3):
        x = torch.randn(n, 5, device="npu")
        torch.testing.assert_close(fn(x).cpu(), (x.cpu() * 2).sum(-1) + x.cpu().amax(-1))


def unbacked_size_1() -> None:
    """mark_unbacked: one graph for every size, the size a runtime argument equal to 1."""
    fn = torch.compile(lambda x: torch.cumsum(x * 2, 0))
    for n in (4, 1):
        x = torch.randn(n, device="npu")
        torch._dynamo.decorators.mark_unbacked(x, 0)
        torch.testing.assert_close(fn(x).cpu(), torch.cumsum(x.cpu() * 2, 0))


def promoted_slots_know_xnumel() -> None:
    """softmax over one row: xnumel=1 sits before r0_numel; the wrapper's slot is promoted to
    the launch object, which knows xnumel was specialized to 1."""
    from npu_lowering.runtime.direct_launch import PROMOTED

    PROMOTED.clear()
    check(lambda x: torch.softmax(x, -1), torch.randn(1, 16, device="npu"))
    launches = [launch for _name, _grid, launch, _slot in PROMOTED]
    assert launches, "no direct-launch slot was promoted"
    for lo in launches:
        assert (2, "xnumel", 1) in lo.specialized, (lo, lo.specialized)


EXTRA = {
    "size_becomes_1_later": size_becomes_1_later,
    "unbacked_size_1": unbacked_size_1,
    "promoted_slots_know_xnumel": promoted_slots_know_xnumel,
}


# what the TRITON_INTERPRET=1 child runs: the programs that failed at launch there
CHILD = [
    "sum_plus_1",
    "full",
    "softmax_one_row",
    "var",
    "argmax",
    "gather",
    "scatter",
    "size_becomes_1_later",
    "promoted_slots_know_xnumel",
]


def main() -> None:
    import npu_lowering
    import npu_sim
    from torch._inductor.utils import fresh_cache

    npu_sim.start()
    npu_lowering.register()
    results = {}
    for name in CHILD:
        torch._dynamo.reset()
        try:
            with fresh_cache():
                run_case(name) if name in CASES else EXTRA[name]()
            results[name] = "ok"
        except Exception as exc:  # reported to the test, which names it
            results[name] = f"{type(exc).__name__}: {exc}"[:2000]
    print(json.dumps(results))


if __name__ == "__main__":
    sys.exit(main())
