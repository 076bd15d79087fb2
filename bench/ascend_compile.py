"""Ascend's compile, up to HIVM, for bench/warm_start.py's "ascend-compile" mode.

On npu-sim no kernel compiler runs (kernels are interpreted), so a cache hit has nothing to
skip. This file gives the bench's children the compile an Ascend machine pays, up to the one
step that needs CANN:

* ``serve`` runs in the Ascend compiler venv (``.venv-ascend``, made by
  ``packages/npu-lowering/ascend_check/setup.py``): one request per stdin line, a kernel
  module Inductor wrote and the configs to compile. For each config it runs triton-ascend
  3.2's front end (AST -> TTIR -> linalg) and then bishengir-compile with the command
  triton-ascend itself derives for the kernel and target (Ascend910B2), through the Ascend
  check's own functions (``ascend_check/check.py``, ``hivm.py``), and answers with the front
  end's wall seconds and bishengir's wall and CPU seconds per config. A request's configs
  compile side by side (front ends one after another, ``--jobs`` bishengir processes at once),
  as the compile path compiles a kernel's candidates in threads. bishengir writes the HIVM
  module and stops at ``hivmc`` (CANN's machine-code step, absent here): hivmc's own time is
  the one part of the compile missing.
* ``install(python)`` runs in a bench child (npu-sim): it starts that server (before the
  child's timed section) and wraps the npu kernel object's compile,
  ``NpuCachingAutotuner._fetch_or_compile``: the function it hands to npu-cache's
  kernel-binary cache is the kernel compile, which runs only when no cache had the kernel.
  Wrapped, that compile first compiles for Ascend every candidate config of the kernel
  object not compiled yet in this process (on npu-sim the object compiles only its first
  config, the one the simulator runs; on Ascend upstream's precompile compiles each
  candidate). A process served from caches (FX graph with its kernels, autotune results)
  never reaches it. ``COMPILES`` records each config compiled; ``summary()`` totals them.

A bench-only hook: it patches only our own class, in the bench child, and nothing upstream.
"""

from __future__ import annotations

import atexit
import io
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path

HERE = Path(__file__).resolve().parent
ASCEND_CHECK = HERE.parent / "packages" / "npu-lowering" / "ascend_check"
MARK = (
    "@@ascend-compile@@ "  # the server's answers start with it (anything else on stdout is not one)
)
TARGET = "910B2"  # Ascend910B2, bishengir-compile (ascend_check/hivm.py's TARGETS)

COMPILES: list[dict] = []  # one per config compiled for Ascend in this process
_done: "weakref.WeakKeyDictionary[object, set]" = (
    weakref.WeakKeyDictionary()
)  # kernel object -> configs compiled
_server: dict = {}


# --- the server, in the Ascend compiler venv -------------------------------------------------


def serve(target_name: str, jobs: int) -> int:
    import concurrent.futures

    sys.path.insert(0, str(ASCEND_CHECK))
    import check  # noqa: E402  (the Ascend check: front end, kernel loading)
    import hivm  # noqa: E402  (bishengir's command as triton-ascend derives it, and its run)
    from triton import Config

    check._setup_imports()
    target = hivm.TARGETS[target_name]
    hivm.compiler_dir(target)  # (a folder with the compiler under triton-ascend's name)
    print(MARK + json.dumps({"ready": True, "arch": target.arch, "jobs": jobs}), flush=True)

    def bishengir(out, cmd, linalg, work):
        h = hivm.run(cmd, linalg, work)
        shutil.rmtree(work, ignore_errors=True)
        out.update(
            ok=h.ok,
            bishengir_s=h.seconds,
            bishengir_cpu_s=h.cpu_seconds,
            error=h.error[:400],
            ub_required_bytes=h.ub_required_bytes,
            reached_hivm=h.ub_bytes is not None,
        )

    # a kernel's candidate configs compile side by side, as the compile path's threads do
    # (npu-autotune's precompile budget): front ends here, one after another (triton-ascend's
    # front end runs under a SIGALRM deadline, main thread only), bishengir runs in ``jobs``
    with (
        tempfile.TemporaryDirectory(prefix="bench-ascend-compile-") as root,
        concurrent.futures.ThreadPoolExecutor(jobs) as pool,
    ):
        for n, line in enumerate(sys.stdin):
            req = json.loads(line)
            try:
                cap = check.load_kernel(Path(req["path"]))
            except Exception as exc:  # noqa: BLE001 - reported to the child
                print(MARK + json.dumps({"error": check._short(exc)}), flush=True)
                continue
            answers, runs = [], []
            for i, c in enumerate(req["configs"]):
                cfg = Config(
                    dict(c["kwargs"]),
                    num_warps=c.get("num_warps") or 1,
                    num_stages=c.get("num_stages") or 1,
                )
                t = time.perf_counter()
                out = {"kwargs": c["kwargs"], "num_stages": c.get("num_stages"), "ok": False}
                answers.append(out)
                try:
                    with io.StringIO() as printed:
                        linalg, metadata, options, _ = check._front_end(
                            cap, cfg, target.arch, target, printed
                        )
                    cmd = hivm.derive_command(linalg, metadata, options, target)
                except Exception as exc:  # noqa: BLE001 - a front-end failure is this config's
                    out.update(
                        front_end_s=time.perf_counter() - t,
                        bishengir_s=0.0,
                        bishengir_cpu_s=0.0,
                        error=check._short(exc)[:400],
                    )
                    continue
                out["front_end_s"] = time.perf_counter() - t
                runs.append(pool.submit(bishengir, out, cmd, linalg, Path(root) / f"{n}.{i}"))
            for r in runs:
                r.result()
            print(MARK + json.dumps({"configs": answers}), flush=True)
    return 0


# --- the hook, in a bench child ----------------------------------------------------------------


def _answer(proc) -> dict:
    line = proc.stdout.readline()
    while line and not line.startswith(MARK):
        line = proc.stdout.readline()
    if not line:
        raise RuntimeError(f"the Ascend compile server exited (status {proc.poll()})")
    return json.loads(line[len(MARK) :])


def _request(path: str, configs: list[dict]) -> dict:
    proc = _server["proc"]
    with _server["lock"]:  # configs may compile on several threads; one server
        proc.stdin.write(json.dumps({"path": path, "configs": configs}) + "\n")
        proc.stdin.flush()
        return _answer(proc)


def _config_dict(cfg) -> dict:
    return {
        "kwargs": dict(cfg.kwargs),
        "num_warps": getattr(cfg, "num_warps", 1),
        "num_stages": getattr(cfg, "num_stages", 1),
    }


def compile_for_ascend(kernel, config) -> None:
    """Compile ``config`` and the kernel object's other candidate configs for Ascend, those
    not compiled yet in this process."""
    from torch._inductor.runtime.runtime_utils import triton_config_to_hashable

    done = _done.setdefault(kernel, set())
    todo = []
    for cfg in [config, *(kernel.configs or ())]:
        key = triton_config_to_hashable(cfg)
        if key not in done:
            done.add(key)
            todo.append(cfg)
    if not todo:
        return
    name = kernel.inductor_meta.get("kernel_name")
    path = kernel.fn.fn.__code__.co_filename  # the module Inductor wrote for this kernel
    t = time.perf_counter()
    answer = _request(path, [_config_dict(c) for c in todo])
    wall = (
        time.perf_counter() - t
    )  # what the compile waited: the configs' front ends + bishengir runs
    if "error" in answer:  # the module did not load in the Ascend venv: counted, not compiled
        COMPILES.append(
            {
                "kernel": name,
                "ok": False,
                "error": answer["error"],
                "request_wall_s": wall,
                "configs": len(todo),
            }
        )
        return
    for a in answer["configs"]:
        COMPILES.append({"kernel": name, **a})
    COMPILES[-1]["request_wall_s"] = (
        wall  # (module load and the pipe, beside the configs' own time)
    )


def install(python: str, target: str = TARGET, jobs: int = 2) -> None:
    """Start the server (returns once it is ready) and hook the npu kernel object's compile."""
    from npu_lowering.runtime.autotuner import NpuCachingAutotuner

    proc = subprocess.Popen(
        [python, str(Path(__file__).resolve()), "--serve", "--target", target, "--jobs", str(jobs)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    atexit.register(proc.kill)
    _server.update(proc=proc, lock=threading.Lock(), ready=_answer(proc))
    real = NpuCachingAutotuner._fetch_or_compile

    def _fetch_or_compile(self, compile_fn, config, target_name):
        def compile_with_ascend():  # runs only where the kernel is compiled (no cache had it)
            compile_for_ascend(self, config)
            return compile_fn()

        return real(self, compile_with_ascend, config, target_name)

    NpuCachingAutotuner._fetch_or_compile = _fetch_or_compile


def summary() -> dict:
    """What this process compiled for Ascend."""
    cfgs = [c for c in COMPILES if "front_end_s" in c]
    return {
        "target": _server.get("ready", {}).get("arch"),
        "hook_installed": bool(_server),
        "kernels": len({c["kernel"] for c in COMPILES}),
        "configs": len(cfgs),
        "reached_hivm": sum(1 for c in cfgs if c.get("reached_hivm")),
        "ub_overflow": sum(1 for c in cfgs if c.get("ub_required_bytes")),
        "failed": [
            {k: c.get(k) for k in ("kernel", "kwargs", "num_stages", "error")}
            for c in COMPILES
            if not c.get("ok") and not c.get("ub_required_bytes")
        ],
        # configs bishengir rejects for the unified buffer (the Ascend compile path drops them)
        "ub_overflows": [
            {k: c.get(k) for k in ("kernel", "kwargs", "num_stages", "ub_required_bytes")}
            for c in cfgs
            if c.get("ub_required_bytes")
        ],
        "front_end_s": sum(c["front_end_s"] for c in cfgs),
        "bishengir_s": sum(c["bishengir_s"] for c in cfgs),
        "bishengir_cpu_s": sum(c["bishengir_cpu_s"] for c in cfgs),
        "request_wall_s": sum(c.get("request_wall_s", 0.0) for c in COMPILES),
    }


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--serve",
        action="store_true",
        help="answer compile requests on stdin (run with .venv-ascend)",
    )
    ap.add_argument("--target", default=TARGET)
    ap.add_argument("--jobs", type=int, default=2, help="bishengir processes at once (default 2)")
    args = ap.parse_args()
    if not args.serve:
        ap.error("--serve is the only mode (the bench child imports this module)")
    sys.exit(serve(args.target, max(1, args.jobs)))
