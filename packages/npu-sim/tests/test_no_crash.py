"""Ops that killed the process on npu now run, and an op npu cannot run raises a Python error
naming it. The cases run in one child interpreter, so a crash fails them instead of the suite."""

import textwrap

import pytest

CHILD = textwrap.dedent("""
    import torch, npu_sim
    npu_sim.start()
    import torch.nn.functional as F

    def case(name):
        def wrap(fn):
            try:
                fn()
                print("CASE", name, "ok", flush=True)
            except Exception as e:
                print("CASE", name, "error", repr(e)[:300].replace(chr(10), " "), flush=True)
        return wrap

    @case("hfft_conj_copy")  # conj inputs of _copy_from recursed until the stack overflowed
    def _():
        x = torch.randn(5, 6)
        torch.testing.assert_close(torch.fft.hfft(x.npu(), n=10).cpu(), torch.fft.hfft(x, n=10))
        c = torch.randn(4, dtype=torch.complex64)
        assert torch.equal(c.npu().conj().cpu(), c.conj())
        assert torch.equal(torch.empty(4, dtype=torch.complex64, device="npu").copy_(c.conj()).cpu(), c.conj())
        assert torch.equal(c.npu()._neg_view().cpu(), -c)

    @case("out_grows_into_strided_view")  # an out= result larger than its npu storage, column-major
    def _():
        a, b = torch.randn(4, 3), torch.randn(4, 3)
        got = torch.linalg.lstsq(a.npu(), b.npu(), driver="gels").solution
        torch.testing.assert_close(got.cpu(), torch.linalg.lstsq(a, b, driver="gels").solution)

    @case("grid_sampler_2d")
    def _():
        x, g = torch.randn(2, 3, 5, 5), torch.rand(2, 4, 4, 2) * 3 - 1.5
        for mode in ("bilinear", "nearest", "bicubic"):
            for pad in ("zeros", "border", "reflection"):
                xn, gn = x.npu().requires_grad_(), g.npu().requires_grad_()
                out = F.grid_sample(xn, gn, mode=mode, padding_mode=pad, align_corners=False)
                out.sum().backward()
                torch.testing.assert_close(out.detach().cpu(), F.grid_sample(x, g, mode=mode, padding_mode=pad,
                                                                              align_corners=False))

    @case("kernel_out_of_bounds_raises")  # the interpreter would read a wild address: SIGSEGV
    def _():
        import triton
        import triton.language as tl
        from npu_sim.launch import launch

        @triton.jit
        def read_past_the_end(x_ptr, out_ptr, BLOCK: tl.constexpr):
            i = tl.arange(0, BLOCK)
            tl.store(out_ptr + i, tl.load(x_ptr + i + (1 << 36)))

        x, out = torch.ones(4, device="npu"), torch.zeros(4, device="npu")
        try:
            launch(read_past_the_end, (1,), (x, out), {"BLOCK": 4})
        except Exception as e:
            assert "read_past_the_end loads from address" in str(e), str(e)
        else:
            raise AssertionError("no error")
        assert out.sum().item() == 0  # nothing was stored

    @case("missing_op_names_itself")  # a CUDA-only op: a Python error naming it, not a crash
    def _():
        try:
            torch.ops.aten._cudnn_rnn_flatten_weight([torch.ones(4, device="npu")], 4, 2, 0, 2, 0, 1, False, False)
        except NotImplementedError as e:
            assert "_cudnn_rnn_flatten_weight" in str(e), str(e)
        else:
            raise AssertionError("no error")
""")

CASES = [
    "hfft_conj_copy",
    "out_grows_into_strided_view",
    "grid_sampler_2d",
    "kernel_out_of_bounds_raises",
    "missing_op_names_itself",
]


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory, child_cases):
    script = (
        tmp_path_factory.mktemp("no_crash") / "cases.py"
    )  # a file: @triton.jit reads its source
    script.write_text(CHILD)
    return child_cases.run(script)


@pytest.mark.parametrize("case", CASES)
def test_no_crash(case, outcomes, child_cases):
    child_cases.check(case, outcomes)
