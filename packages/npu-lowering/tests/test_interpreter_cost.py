"""Issue 34's slow kernels: kernels whose shape or tiling made npu-sim's interpreter (and a user
trying a model on it) wait minutes. Each test checks the cause, not a time: what the
interpreter is asked to run (which reductions go element by element, how many programs and
loop steps a kernel makes).

- argmax / argmin: the value-and-index reduction was a ``tl.reduce`` with a custom combine
  function, which Triton's interpreter runs element by element in Python (about 1 s a program
  of 4 rows of 256; Ascend's 144 x 144 argmax/argmin test ran 146 s). On npu-sim the helpers
  reduce with tl.max / tl.min instead; the results keep eager's rules (a NaN wins, the lowest
  index among equals).
- cumsum / cumprod (split-cumsum): Inductor's scan names a generated copy of the combine (one
  add), which the interpreter runs element by element (a float32 cumsum of 200,000 elements:
  21 s); npu's scan names Triton's own combine function, which the interpreter runs as one
  numpy call. A scan with any other combine keeps the generated helper.
- max_pool2d with a 13 x 13 window: its persistent max-with-index ran at XBLOCK 2 (8,192 steps
  a launch on Ascend's test) because the UB profile read ``max_with_index(value, index, 1)``'s
  index as unreduced and priced an XBLOCK x XBLOCK x R0_BLOCK tile (npu-inductor-core's
  test_ub_model has the profile's side); the block the kernel launches with is checked here.
"""

import contextlib

import pytest
import torch
import triton.runtime.interpreter as interpreter


@contextlib.contextmanager
def generic_reductions():
    """Counts the reductions and scans Triton's interpreter runs element by element."""
    calls = {"reduce": 0, "scan": 0}
    reduce_, scan_ = interpreter.ReduceOps.generic_reduce, interpreter.ScanOps.generic_scan

    def counted_reduce(self, input):
        calls["reduce"] += 1
        return reduce_(self, input)

    def counted_scan(self, input):
        calls["scan"] += 1
        return scan_(self, input)

    interpreter.ReduceOps.generic_reduce = counted_reduce
    interpreter.ScanOps.generic_scan = counted_scan
    try:
        yield calls
    finally:
        interpreter.ReduceOps.generic_reduce = reduce_
        interpreter.ScanOps.generic_scan = scan_


def _arg_extremes(x):
    return torch.argmax(x, 1), torch.argmin(x, 1), torch.argmax(x, 0), torch.argmin(x, 0)


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("cols", [24, 3000], ids=["persistent", "looped"])
def test_argmax_argmin_reduce_without_a_combine_function(dynamic, cols):
    torch._dynamo.reset()
    torch.manual_seed(0)
    x = torch.randint(-3, 4, (20, cols)).float()  # many ties: the lowest index must win
    x[3, 5] = float("nan")  # a NaN wins its row and its column
    x[7, :] = float("-inf")  # a row of -inf: the first index
    compiled = torch.compile(_arg_extremes, dynamic=dynamic)
    with generic_reductions() as calls:
        got = compiled(x.to("npu"))
    for g, want in zip(got, _arg_extremes(x)):
        assert torch.equal(g.cpu(), want)
    assert calls == {"reduce": 0, "scan": 0}


@pytest.mark.parametrize(
    "dtype,n",
    [(torch.float32, 3000), (torch.int64, 3000), (torch.bool, 3000), (torch.float32, 40)],
    ids=["float32-looped", "int64-looped", "bool-looped", "float32-one-block"],
)
def test_cumsum_and_cumprod_scan_without_a_combine_function(dtype, n):
    torch._dynamo.reset()
    torch.manual_seed(0)
    x = (torch.rand(2, n) * 2).to(dtype)

    def fn(a):
        return torch.cumsum(a, -1), torch.cumprod(a[:, :40], -1)

    with generic_reductions() as calls:
        got = torch.compile(fn)(x.to("npu"))
    for g, want in zip(got, fn(x)):
        torch.testing.assert_close(g.cpu(), want, rtol=1e-4, atol=1e-4)
    assert calls == {"reduce": 0, "scan": 0}


def test_a_scan_of_another_combine_keeps_its_helper():
    # logcumsumexp's combine is several operations: still Inductor's generated helper
    torch._dynamo.reset()
    x = torch.randn(3, 50)
    with generic_reductions() as calls:
        got = torch.compile(lambda a: torch.logcumsumexp(a, -1))(x.to("npu"))
    torch.testing.assert_close(got.cpu(), torch.logcumsumexp(x, -1), rtol=1e-4, atol=1e-4)
    assert calls["scan"] > 0


@contextlib.contextmanager
def launches():
    """The block sizes of every kernel launch Triton's interpreter runs."""
    seen: list = []
    run = interpreter.InterpretedFunction.run

    def recorded(self, *args, grid, warmup, **kwargs):
        seen.append({k: v for k, v in kwargs.items() if k.endswith("BLOCK")})
        return run(self, *args, grid=grid, warmup=warmup, **kwargs)

    interpreter.InterpretedFunction.run = recorded
    try:
        yield seen
    finally:
        interpreter.InterpretedFunction.run = run


def test_a_large_window_max_pool_keeps_rows_of_windows_per_step():
    torch._dynamo.reset()
    x = torch.randn(2, 32, 55, 55)  # 2,048 windows of 169 (rows of 256)

    def fn(a):
        return torch.ops.aten.max_pool2d_with_indices(a, [13, 13], [])

    # dynamic, as Ascend's test (the index takes symbolic sizes); no cache: a config cached by
    # an earlier run is kept whatever the UB model says now
    with launches() as seen, torch._inductor.config.patch(force_disable_caches=True):
        got = torch.compile(fn, dynamic=True)(x.to("npu"))
    for g, want in zip(got, fn(x)):
        assert torch.equal(g.cpu(), want)
    # bishengir plans 99,556 B for 16 rows of this kernel on the 910B2 (27,780 at 4)
    assert len(seen) == 1 and seen[0]["XBLOCK"] >= 4, seen
