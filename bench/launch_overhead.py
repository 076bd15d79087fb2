"""Host microseconds per launch of the tiny kernel (out = x + y, 1024 float32, grid (1,)).

On cuda: Triton's own launcher (JIT call and CompiledKernel.run), upstream Inductor's static
launcher (and torch's _FastCudaLauncher where this torch has it), and npu-launcher's launch
object with its tensor fast path on and off. On any machine: npu-launcher's per-call host
cost with the sim driver and a no-op entry point (validation + pointer reads only), fast path
vs slow path, next to the same checks done in Python.

Compiled MLP (issue 5): 8 blocks of x + Linear(GELU(Linear(LayerNorm(x)))), width 256,
batch 4, default mode, per-call host time. On cuda: eager; upstream Inductor as shipped
(its static launcher); upstream with Triton's launcher (use_static_cuda_launcher off); and
Inductor's cuda kernels launched by npu-launcher (``cuda_routes.route_cuda_kernels``,
an opt-in benchmark mode over the Triton-launcher configuration: same kernels, same wrapper,
only the runner differs); and the same routed kernels called by npu-lowering's direct-launch
wrapper (``cuda_routes.route_cuda_wrapper``: the generated code calls each settled
kernel's launch object itself, no ``CachingAutotuner.run``). Every mode is compiled first,
then all are timed in turns (``--mlp-rounds``); rows are medians of the turns. On npu-sim (--npu-sim; the device is started through
npu_inductor.enable()): npu kernels through npu-launcher's launch objects, called directly
by the wrapper (the npu default) or through ``run`` (use_fast_triton_launcher off), vs
npu-sim's launch entry point (use_static_triton_launcher off). Interpreted kernels cost milliseconds, so the
npu-sim rows are dominated by the interpreter.

Prints tables; writes JSON to $OUT/launch_overhead.json (or --json PATH).
Not a timed test: run it yourself, e.g. through the `device` tool on the H200.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import sys
import tempfile
import time
from importlib import metadata

import torch
import triton
import triton.language as tl

from npu_launcher import _native, _tensor_abi, bind, descriptor_from_compiled, sim, sim_descriptor


@triton.jit
def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


def noop_launch(fn, grid, args, constexprs):
    """Stand-in npu_inductor.sim_launch entry: measures the launcher, not the interpreter."""


_HOST_ONLY = {"on": False, "real": None}


def switchable_launch(fn, grid, args, constexprs):
    """npu-sim's entry point, or nothing while --npu-sim-host times the host side only."""
    if not _HOST_ONLY["on"]:
        return _HOST_ONLY["real"](fn, grid, args, constexprs)


class host_only:
    """While on: npu kernels (launch objects and npu-sim's entry point) and the extern matmuls
    do nothing, so what is timed is the host code around them (wrapper, run, grids, guards)."""

    def __enter__(self):
        from torch._inductor.select_algorithm import extern_kernels

        self.saved = {n: getattr(extern_kernels, n) for n in ("mm", "addmm")}
        for n in self.saved:
            setattr(extern_kernels, n, lambda *a, out=None, **k: out)
        _HOST_ONLY["on"] = True

    def __exit__(self, *exc):
        from torch._inductor.select_algorithm import extern_kernels

        _HOST_ONLY["on"] = False
        for n, f in self.saved.items():
            setattr(extern_kernels, n, f)


def install_switchable_sim_entry():
    """Route npu-sim's entry point (for launch objects bound from now on, and for
    npu-lowering's fallback) through ``switchable_launch``."""
    from importlib import import_module

    sys.modules.setdefault(__name__, sys.modules["__main__"])
    lowering = import_module("npu_lowering.runtime.autotuner")
    _HOST_ONLY["real"] = sim.launch_entry()
    sim._entry_points = lambda: [
        metadata.EntryPoint("launch", f"{__name__}:switchable_launch", sim.GROUP)
    ]
    lowering.sim_launch = lambda: switchable_launch


def per_call_us(call, args, iters, warm=500, sync=None):
    for _ in range(warm):
        call(*args)
    if sync:
        sync()
    t = time.perf_counter()
    for _ in range(iters):
        call(*args)
    if sync:
        sync()
    return (time.perf_counter() - t) / iters * 1e6


def cuda_rows(iters):
    rows = {}
    n = 1024
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    o = torch.empty_like(x)
    sync = torch.cuda.synchronize
    stream = torch.cuda.current_stream().cuda_stream
    ck = add_kernel[(1,)](x, y, o, n, BLOCK=1024)
    rows["triton_jit_launch"] = per_call_us(
        lambda: add_kernel[(1,)](x, y, o, n, BLOCK=1024), (), iters, sync=sync
    )
    try:  # CompiledKernel[grid]: Triton's C launcher without the JIT's dispatch
        runner = ck[(1, 1, 1)]
        rows["triton_compiled_kernel"] = per_call_us(
            lambda: runner(x, y, o, n, stream=stream), (), iters, sync=sync
        )
    except Exception as e:
        rows["triton_compiled_kernel_error"] = repr(e)
    try:
        try:
            from torch._inductor.runtime.static_triton_launcher import StaticallyLaunchedCudaKernel
        except ImportError:
            from torch._inductor.runtime.static_cuda_launcher import StaticallyLaunchedCudaKernel
        path = os.path.join(tempfile.mkdtemp(), "add.cubin")
        with open(path, "wb") as f:
            f.write(ck.asm["cubin"])
        ck._cubin_path = path
        static = StaticallyLaunchedCudaKernel(ck)
        static.load_kernel(torch.cuda.current_device())
        rows["inductor_static_launcher"] = per_call_us(
            static.run, (1, 1, 1, stream, x, y, o, n), iters, sync=sync
        )
        fast_cls = getattr(torch._C, "_FastCudaLauncher", None)
        if fast_cls is not None:
            n_scratch = int(getattr(static, "has_global_scratch", False)) + int(
                getattr(static, "has_profile_scratch", False)
            )
            fast = fast_cls(
                static.function, static.num_warps, static.shared, static.arg_tys, n_scratch
            )
            rows["inductor_fast_cuda_launcher"] = per_call_us(
                fast, (1, 1, 1, stream, x, y, o, n), iters, sync=sync
            )
    except Exception as e:
        rows["inductor_static_launcher_error"] = repr(e)
    d = descriptor_from_compiled(ck)
    for mode in ("fast", "slow"):
        _tensor_abi.calibrate.cache_clear()
        _tensor_abi.calibrate()
        if mode == "slow":
            _native.disable_tensor_fast_path()
        launch = bind(d, device=torch.cuda.current_device())
        rows[f"npu_launcher_{mode}_path"] = per_call_us(
            launch, (1, 1, 1, stream, x, y, o, n), iters, sync=sync
        )
        if mode == "fast":  # what a promoted direct-launch slot calls: the grid bound once
            rows["npu_launcher_grid_slot"] = per_call_us(
                launch.at(1, 1, 1), (stream, x, y, o, n), iters, sync=sync
            )
            rows["npu_launcher_grid_slot_ignoring_3"] = per_call_us(
                launch.at(1, 1, 1, 3), (stream, x, y, o, n, 1, 1, 1), iters, sync=sync
            )
        # grid (0, 1, 1): every argument validated, cuLaunchKernel skipped: our own share
        rows[f"npu_launcher_{mode}_path_no_driver_call"] = per_call_us(
            launch, (0, 1, 1, stream, x, y, o, n), iters
        )
        o.zero_()
        launch(1, 1, 1, stream, x, y, o, n)
        sync()
        assert torch.equal(o, x + y), "npu-launcher produced a wrong result"
    _tensor_abi.calibrate.cache_clear()
    _tensor_abi.calibrate()
    return rows


def host_rows(iters):
    """Launcher host cost with a no-op sim entry (any machine, CPU tensors)."""
    rows = {}
    real_entry_points = sim._entry_points
    sim._entry_points = lambda: [
        metadata.EntryPoint("launch", f"{__name__}:noop_launch", sim.GROUP)
    ]
    try:
        _host_rows(rows, iters)
    finally:  # later rows (the compiled MLP on npu-sim) need npu-sim's real entry point
        sim._entry_points = real_entry_points
    return rows


def _host_rows(rows, iters):
    sys.modules.setdefault(__name__, sys.modules["__main__"])
    d = sim_descriptor(
        add_kernel,
        {"x": "*fp32", "y": "*fp32", "out": "*fp32", "n": "i32"},
        {"BLOCK": 1024},
        divisibility={"x": 16, "y": 16, "out": 16},
        device_type="cpu",
    )
    x, y, o = torch.randn(1024), torch.randn(1024), torch.empty(1024)
    for mode in ("fast", "slow"):
        _tensor_abi.calibrate.cache_clear()
        _tensor_abi.calibrate()
        if mode == "slow":
            _native.disable_tensor_fast_path()
        launch = bind(d)
        rows[f"sim_noop_{mode}_path"] = per_call_us(launch, (1, 1, 1, None, x, y, o, 1024), iters)
        if mode == "fast":  # direct-launch slots: native grid slot vs what it replaced
            import functools

            def drop_trailing(slot, n):  # the Python frame a template slot used to pay
                return lambda stream, *args: slot(stream, *args[:n])

            rows["sim_noop_grid_slot"] = per_call_us(
                launch.at(1, 1, 1), (None, x, y, o, 1024), iters
            )
            rows["sim_noop_partial"] = per_call_us(
                functools.partial(launch, 1, 1, 1), (None, x, y, o, 1024), iters
            )
            trailing = (None, x, y, o, 1024, 1, 1, 1)
            rows["sim_noop_grid_slot_ignoring_3"] = per_call_us(
                launch.at(1, 1, 1, 3), trailing, iters
            )
            rows["sim_noop_partial_drop_trailing"] = per_call_us(
                drop_trailing(functools.partial(launch, 1, 1, 1), 4), trailing, iters
            )
    _tensor_abi.calibrate.cache_clear()
    _tensor_abi.calibrate()
    f32 = torch.float32

    def python_checks(x, y, o, n):  # what a Python launcher would do per call
        for t in (x, y, o):
            p = t.data_ptr()
            if t.device.type != "cpu" or t.dtype is not f32 or p % 16:
                raise ValueError
        return n

    rows["python_equivalent_checks"] = per_call_us(python_checks, (x, y, o, 1024), iters)
    rows["python_noop_call"] = per_call_us(noop_launch, (None, None, None, None), iters)


class MLP(torch.nn.Module):
    def __init__(self, width=256, blocks=8):
        super().__init__()
        self.blocks = torch.nn.ModuleList(
            torch.nn.Sequential(
                torch.nn.LayerNorm(width),
                torch.nn.Linear(width, width),
                torch.nn.GELU(),
                torch.nn.Linear(width, width),
            )
            for _ in range(blocks)
        )

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x)
        return x


def per_call_ms(fn, x, iters, sync):
    for _ in range(3):
        fn(x)
    sync()
    t = time.perf_counter()
    for _ in range(iters):
        fn(x)
    sync()
    return (time.perf_counter() - t) / iters * 1e3


def _own_code(fn, name):
    """``fn`` with a code object of its own: each mode gets its own Dynamo cache entry, so all
    modes stay compiled side by side (no dynamo.reset between them) and can be timed in turns."""
    import types

    return types.FunctionType(
        fn.__code__.replace(co_name=name), fn.__globals__, name, None, fn.__closure__
    )


# GEMM templates with their epilogues fused: benchmark_epilogue_fusion off, because it times
# device work only, and for kernels this small fused and unfused time the same while each
# extra kernel costs a host launch (the thing measured here); upstream's mode gets the same
GEMM_TEMPLATES = {
    "max_autotune_gemm": True,
    "max_autotune_gemm_backends": "TRITON",
    "benchmark_epilogue_fusion": False,
}


SMALL_GEMM = "_small_gemm"  # a mode key, not an Inductor flag: small_gemm.DEVICES gets "cuda"


def _cuda_modes():
    """name -> (inductor config patch, route kernels through npu-launcher, direct-launch wrapper)."""
    return {
        "inductor_upstream_default": ({}, False, False),
        "inductor_upstream_triton_launcher": ({"use_static_cuda_launcher": False}, False, False),
        "inductor_npu_launcher": ({"use_static_cuda_launcher": False}, True, False),
        "inductor_npu_direct_launch": ({"use_static_cuda_launcher": False}, True, True),
        # ours as npu compiles in default mode: also npu-lowering's small-GEMM policy (the
        # matmuls become one-tile Triton templates with their epilogues; no max-autotune)
        "inductor_npu_default_small_gemm_templates": (
            {"use_static_cuda_launcher": False, SMALL_GEMM: True},
            True,
            True,
        ),
        # the matmuls as Triton GEMM templates (their bias/GELU/residual fused in), so every
        # kernel of the graph is one our launcher can launch; upstream in the same mode too
        "inductor_upstream_gemm_templates": (GEMM_TEMPLATES, False, False),
        "inductor_npu_direct_launch_gemm_templates": (
            {**GEMM_TEMPLATES, "use_static_cuda_launcher": False},
            True,
            True,
        ),
    }


def profile_text(fn, x, calls=200) -> str:
    """cProfile of ``calls`` calls, top functions by own time (where the host time goes)."""
    import cProfile
    import io
    import pstats

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        fn(x)
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(30)
    return buf.getvalue()


def mlp_rows(
    device: str, iters: int, rounds: int = 1, profile_dir: str | None = None, host: bool = False
) -> dict:
    """Per-call microseconds of the compiled MLP under each launcher mode. Every mode is
    compiled first (each in a fresh Inductor cache), then all are timed in ``rounds`` turns
    (eager, mode 1, mode 2, ... again), so slow phases of a shared host hit every mode; each
    row is the median of its turns (all turns in ``<row>_turns``)."""
    import statistics

    from torch._inductor import config as inductor_config

    import cuda_routes  # bench/, next to this script: the routes that change cuda compiles

    torch.manual_seed(0)
    model = MLP().to(device).eval()
    x = torch.randn(4, 256, device=device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    rows: dict = {}
    fns: dict = {}
    if device == "cuda":
        from npu_lowering import _compat as lowering_compat
        from npu_lowering import small_gemm
        from npu_lowering.runtime.direct_launch import PROMOTED

        modes = _cuda_modes()
    else:
        PROMOTED = None
        modes = {
            "inductor_npu_sim_entry_point": ({"use_static_triton_launcher": False}, False, False),
            "inductor_npu_launcher_run": (
                {"use_static_triton_launcher": True, "use_fast_triton_launcher": False},
                False,
                False,
            ),
            "inductor_npu_launcher": ({"use_static_triton_launcher": True}, False, True),
            "inductor_npu_launcher_gemm_templates": (
                {"use_static_triton_launcher": True, **GEMM_TEMPLATES},
                False,
                True,
            ),
        }
    with torch.no_grad():
        ref = model(x)
        if device == "cuda":
            fns["eager"] = model
        try:
            from torch._inductor.utils import fresh_cache
        except ImportError:  # older torch
            from torch._inductor.utils import fresh_inductor_cache as fresh_cache
        torch._dynamo.reset()
        for name, (patch, routed, direct) in modes.items():
            cuda_routes.ROUTED_CUDA_KERNELS.clear()
            cuda_routes.route_cuda_kernels(routed)
            patch = dict(patch)
            small = patch.pop(SMALL_GEMM, False)
            if device == "cuda":
                cuda_routes.route_cuda_wrapper(cuda_routes.cuda_wrapper_class() if direct else None)
                lowering_compat.small_gemm_lowerings()
                (small_gemm.DEVICES.add if small else small_gemm.DEVICES.discard)("cuda")
            promoted_before = len(PROMOTED) if PROMOTED is not None else 0
            try:
                # a fresh cache per mode: kernel objects (and their launchers) are reused
                # across compiles of one process otherwise
                with fresh_cache(), inductor_config.patch(patch):
                    fn = torch.compile(_own_code(lambda a: model(a), name))
                    for _ in range(3):  # first calls: precompile, then direct slots promoted
                        out = fn(x)
                    torch.testing.assert_close(out, ref, atol=2e-3, rtol=2e-3)
                fns[name] = fn
                if routed:
                    rows[name + "_kernels_routed"] = len(cuda_routes.ROUTED_CUDA_KERNELS)
                    if not cuda_routes.ROUTED_CUDA_KERNELS:
                        raise RuntimeError("no cuda kernel went through npu-launcher")
                if direct and PROMOTED is not None:
                    rows[name + "_sites_promoted"] = len(PROMOTED) - promoted_before
            except Exception as e:  # record and go on: the other rows still mean something
                rows[name + "_error"] = repr(e)[:500]
            finally:
                cuda_routes.route_cuda_kernels(False)
                if device == "cuda":
                    cuda_routes.route_cuda_wrapper(None)
                    small_gemm.DEVICES.discard("cuda")
        turns: dict = {name: [] for name in fns}
        with host_only() if host else contextlib.nullcontext():
            for _ in range(rounds):
                for name, fn in fns.items():
                    turns[name].append(per_call_ms(fn, x, iters, sync) * 1e3)
        for name, values in turns.items():
            rows[name] = statistics.median(values)
            rows[name + "_turns"] = [round(v, 1) for v in values]
        if profile_dir:
            for name, fn in fns.items():
                with open(os.path.join(profile_dir, f"mlp_profile_{device}_{name}.txt"), "w") as f:
                    f.write(profile_text(fn, x))
        if device != "cuda":
            from importlib import import_module

            launches = import_module("npu_lowering.runtime.autotuner").LAUNCHES
            torch._dynamo.reset()
            launches.clear()
            with inductor_config.patch(use_static_triton_launcher=True):
                torch.compile(model)(x)
            rows["kernels_per_call"] = len(launches)
    return rows


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:  # run from a source tree (PYTHONPATH), not installed
        return "source tree"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--json", default=None)
    ap.add_argument(
        "--mlp-iters", type=int, default=200, help="calls timed per compiled-MLP mode and turn"
    )
    ap.add_argument("--mlp-rounds", type=int, default=5, help="turns over all compiled-MLP modes")
    ap.add_argument(
        "--mlp-profile", default=None, help="folder for cProfile tables of each MLP mode"
    )
    ap.add_argument("--npu-sim", action="store_true", help="also the compiled MLP on npu-sim")
    ap.add_argument(
        "--npu-sim-host",
        action="store_true",
        help="also the compiled MLP on npu-sim with no-op kernels and matmuls (host code only)",
    )
    ap.add_argument("--no-mlp", action="store_true")
    a = ap.parse_args()
    res = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": platform.node(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "npu_launcher": _version("npu-launcher"),
        "iters": a.iters,
        "tensor_fast_path": _tensor_abi.calibrate(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "us_per_launch": {},
    }
    if torch.cuda.is_available():
        res["us_per_launch"].update(cuda_rows(a.iters))
    res["us_per_launch"].update(host_rows(a.iters))
    print(
        f"launch overhead, tiny kernel, {a.iters} launches  ({res['gpu'] or 'no GPU'}, torch {res['torch']}, triton {res['triton']})"
    )
    print(f"{'variant':40s} {'us/launch':>10s}")
    for k, v in res["us_per_launch"].items():
        print(f"{k:40s} {v:10.2f}" if isinstance(v, float) else f"{k:40s} {v}")
    if not a.no_mlp:
        res["mlp_us_per_call"] = {}
        if torch.cuda.is_available():
            res["mlp_us_per_call"]["cuda"] = mlp_rows(
                "cuda", a.mlp_iters, a.mlp_rounds, a.mlp_profile
            )
        if a.npu_sim or a.npu_sim_host:
            import npu_inductor

            npu_inductor.enable()
        if a.npu_sim:
            res["mlp_us_per_call"]["npu_sim"] = mlp_rows("npu", max(1, a.mlp_iters // 50), 1)
        if a.npu_sim_host:
            install_switchable_sim_entry()
            res["mlp_us_per_call"]["npu_sim_host_only"] = mlp_rows(
                "npu", a.mlp_iters, a.mlp_rounds, host=True
            )
        for dev, rows in res["mlp_us_per_call"].items():
            print(
                f"compiled MLP (8 blocks, width 256, batch 4), {dev}: us per call (median of turns)"
            )
            for k, v in rows.items():
                print(f"  {k:44s} {v:12.1f}" if isinstance(v, float) else f"  {k:44s} {v}")
            base = rows.get("inductor_upstream_default") or rows.get("inductor_npu_sim_entry_point")
            for ours in (
                "inductor_npu_launcher",
                "inductor_npu_direct_launch",
                "inductor_npu_default_small_gemm_templates",
                "inductor_upstream_gemm_templates",
                "inductor_npu_direct_launch_gemm_templates",
            ):
                if base and isinstance(rows.get(ours), float):
                    rows[f"ratio_{ours}_to_upstream"] = rows[ours] / base
                    print(f"  {ours} / upstream: {rows[f'ratio_{ours}_to_upstream']:.3f}")
                    turns, base_turns = (
                        rows.get(ours + "_turns"),
                        rows.get("inductor_upstream_default_turns"),
                    )
                    if (
                        turns and base_turns
                    ):  # the same turn of both: the fairest ratio on a shared host
                        per_turn = sorted(t / b for t, b in zip(turns, base_turns))
                        rows[f"ratio_{ours}_to_upstream_per_turn_median"] = per_turn[
                            len(per_turn) // 2
                        ]
    u = res["us_per_launch"]
    if "npu_launcher_fast_path" in u and "triton_jit_launch" in u:
        res["ratio_ours_to_triton_jit"] = u["npu_launcher_fast_path"] / u["triton_jit_launch"]
        print(f"ours / Triton JIT launcher: {res['ratio_ours_to_triton_jit']:.3f}")
    if "npu_launcher_fast_path" in u and "inductor_static_launcher" in u:
        res["ratio_ours_to_inductor_static"] = (
            u["npu_launcher_fast_path"] / u["inductor_static_launcher"]
        )
        print(f"ours / Inductor static launcher: {res['ratio_ours_to_inductor_static']:.3f}")
    out = a.json or (
        os.path.join(os.environ["OUT"], "launch_overhead.json") if os.environ.get("OUT") else None
    )
    if out:
        with open(out, "w") as f:
            json.dump(res, f, indent=1)
        print("wrote", out)


if __name__ == "__main__":
    main()
