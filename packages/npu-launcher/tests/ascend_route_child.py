"""Child process of test_ascend_route.py: compiles on device "npu" as on Ascend (kernels of
flavour "ascend", triton-ascend-shaped compiles from fake_triton_ascend, CANN's runtime from
NPU_LAUNCHER_CANN_LIBS when set) and prints one JSON line with what happened.

    python ascend_route_child.py [--static-off] [--strict] [--user-kernel | --user-kernels-off]

It compiles a small model (a pointwise kernel, a GEMM template, a reduction kernel) and
runs it three times, with use_static_triton_launcher on unless --static-off, strict with
--strict, and keep_static_cubin_raw on (so an FX cache entry carries the descriptors);
--user-kernel adds a user @triton.jit kernel (static_launch_user_defined_triton_kernels on;
off with --user-kernels-off).
"""

from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import fake_triton_ascend  # noqa: E402


def model(x, w):
    return torch.softmax((x * 2).sin() @ w, -1) + 1


def user_kernel_model(x, w):
    # a user @triton.jit kernel in the compiled graph, after Inductor's kernels
    import triton

    y = model(x, w)
    out = torch.empty_like(y)
    add_scaled[(triton.cdiv(y.numel(), 64),)](y, out, y.numel(), 3.0, BLOCK=64)
    return out


def _user_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def add_scaled(x, out, n, alpha, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=m) * alpha, mask=m)

    return add_scaled


add_scaled = _user_kernel()


def descriptor_arg_types() -> dict:
    """kernel name -> its descriptor's argument types, for the kernels that launch statically."""
    import gc

    from npu_launcher import KernelDescriptor
    from npu_lowering.runtime.autotuner import NpuCachingAutotuner, NpuStaticCompileResult

    out = {}
    for obj in gc.get_objects():
        if issubclass(type(obj), NpuCachingAutotuner):  # (gc also holds weak proxies)
            for result in obj.compile_results or ():
                if isinstance(result, NpuStaticCompileResult):
                    desc = KernelDescriptor.from_bytes(result.kernel.descriptor_bytes())
                    out[desc.name] = [a.type for a in desc.args]
    return out


def main() -> None:
    flags = set(sys.argv[1:])
    import npu_inductor
    import npu_lowering.kernel
    from npu_lowering.runtime import direct_launch

    npu_inductor.enable()  # every component: the small matmul becomes a GEMM template
    npu_lowering.kernel.flavour = lambda: "ascend"  # kernels generated as on Ascend
    fake_triton_ascend.install_compile(
        os.environ.get("FAKE_TRITON_ASCEND_SOC", fake_triton_ascend.SOC),
        parallel_mode=os.environ.get("FAKE_TRITON_ASCEND_PARALLEL_MODE", "simd"),
    )
    cfg = torch._inductor.config
    cfg.compile_threads = 1  # the fake compile lives in this process
    cfg.use_static_triton_launcher = "--static-off" not in flags
    cfg.strict_static_triton_launcher = "--strict" in flags
    if hasattr(cfg, "keep_static_cubin_raw"):  # torch 2.11 lacks the flag
        cfg.keep_static_cubin_raw = True
    cfg.static_launch_user_defined_triton_kernels = "--user-kernels-off" not in flags
    chosen = (
        user_kernel_model if "--user-kernel" in flags or "--user-kernels-off" in flags else model
    )
    torch.manual_seed(0)
    x, w = torch.randn(4, 32, device="npu"), torch.randn(32, 16, device="npu")
    out = {"x_ptr": x.data_ptr()}
    try:
        fn = torch.compile(chosen)
        for _ in range(3):
            y = fn(x, w)
        out["y_ptr"] = y.data_ptr()
        ref = model(x.cpu(), w.cpu()) * (3.0 if chosen is user_kernel_model else 1.0)
        out["max_error"] = float((y.cpu() - ref).abs().max())
    except Exception as exc:  # strict mode's error, reported to the test
        import traceback

        traceback.print_exc()
        out["error"] = f"{type(exc).__name__}: {exc}"
    out["compiled"] = list(fake_triton_ascend.COMPILES)
    out["arg_types"] = descriptor_arg_types()
    out["promoted"] = [name for name, _grid, _launch, _slot in direct_launch.PROMOTED]
    out["launch_types"] = sorted(
        {type(launch).__module__ for _n, _g, launch, _s in direct_launch.PROMOTED}
    )
    print(json.dumps(out))


if __name__ == "__main__":
    main()
