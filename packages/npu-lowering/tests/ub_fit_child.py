"""Child process of test_ub_fit.py: compiles on device "npu" as on Ascend, with the real
bishengir deciding each config's fate, and prints one JSON line with what happened.

    python ub_fit_child.py ASCEND_PYTHON [raw|fitted]

"raw" (the default) compiles the heuristics' configs as they were before the UB estimate
shrinks them (npu_inductor_core.ascend_rules.fit_to_ub and the persistent row fact
``tiles.rows_fit`` bypassed), so that bishengir meets a
config that overflows; "fitted" compiles them as users get them.

The compile is npu-launcher's Ascend stand-in (tests/fake_triton_ascend.py: npu-sim compiles
and runs the kernel, the result is shaped like triton-ascend's), in front of which each
config goes through the Ascend check's front end and bishengir for a 910B2 (ascend_check/
check.py --serve, in the triton-ascend venv), with the multi-buffer setting the compile
options carry. When bishengir fails, the stand-in raises what triton-ascend's linalg_to_bin
raises: a CalledProcessError carrying bishengir's stderr.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CHECK = HERE.parent / "ascend_check" / "check.py"
sys.path.insert(0, str(REPO / "packages" / "npu-launcher" / "tests"))

import torch  # noqa: E402

import fake_triton_ascend  # noqa: E402

VERDICTS: list = []  # (block kwargs, multibuffer, passed bishengir)


def with_real_bishengir(ascend_python: str) -> None:
    import triton

    fake = triton.compile
    server = subprocess.Popen(
        [ascend_python, str(CHECK), "--serve", "--targets", "910B2"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    atexit.register(server.kill)
    lock = threading.Lock()  # the autotuner may compile configs on several threads; one server

    def compile(src, target=None, options=None, **kwargs):
        if target is None or target.backend != "npu":
            return fake(src, target=target, options=options, **kwargs)
        fn = src.fn
        names = fn.arg_names
        blocks = {}
        for key, value in (src.constants or {}).items():
            idx = key[0] if isinstance(key, tuple) else key
            name = names[idx] if isinstance(idx, int) else str(idx)
            if name.endswith("BLOCK"):
                blocks[name] = value
        multibuffer = bool((options or {}).get("multibuffer"))
        config = {"kwargs": blocks, "num_stages": 2 if multibuffer else 1}
        with lock:
            server.stdin.write(
                json.dumps({"path": fn.fn.__code__.co_filename, "config": config}) + "\n"
            )
            server.stdin.flush()
            line = server.stdout.readline()
            while line and not line.startswith(
                "@@ascend-check@@ "
            ):  # the checker's answers carry this mark
                line = server.stdout.readline()
        if not line:
            raise RuntimeError("the Ascend check server exited")
        answer = json.loads(line.split(" ", 1)[1])
        t = answer["targets"].get("910B2") or {
            "ok": False,
            "error": answer["error"],
            "command": "bishengir-compile",
        }
        VERDICTS.append((blocks, multibuffer, t["ok"]))
        if not t["ok"]:  # what triton-ascend's linalg_to_bin raises (subprocess.run(check=True))
            raise subprocess.CalledProcessError(
                1, t["command"].split(), output=b"", stderr=t["error"].encode()
            )
        return fake(src, target=target, options=options, **kwargs)

    triton.compile = compile


def main() -> None:
    ascend_python = sys.argv[1]
    import npu_lowering
    import npu_lowering.kernel
    import npu_sim

    if (sys.argv[2] if len(sys.argv) > 2 else "raw") == "raw":
        from npu_inductor_core import tiles

        tiles.fit_to_ub = lambda configs, *args: (
            configs
        )  # the one tile generator, every heuristic's
        # and its row fact for persistent blocks of several rows, which would refuse them
        tiles.rows_fit = lambda *args, **kwargs: True

    npu_sim.start()
    npu_lowering.register()
    npu_lowering.kernel.flavour = lambda: "ascend"  # kernels generated as on Ascend
    fake_triton_ascend.install_compile()
    with_real_bishengir(ascend_python)
    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record.getMessage())

    logging.getLogger("npu_lowering.runtime.ub_fit").addHandler(Keep())
    cfg = torch._inductor.config
    cfg.compile_threads = 1  # the stand-in lives in this process
    cfg.use_static_triton_launcher = False
    cfg.force_disable_caches = True
    torch.manual_seed(0)
    x = torch.randn(
        64, 300, device="npu"
    )  # a softmax row of 300: 32 rows of 512 overflow a 910B's UB
    out = {}
    try:
        y = torch.compile(lambda a: torch.softmax(a, -1))(x)
        out["max_error"] = float((y.cpu() - torch.softmax(x.cpu(), -1)).abs().max())
    except Exception as exc:
        import traceback

        traceback.print_exc()
        out["error"] = f"{type(exc).__name__}: {exc}"
    out["verdicts"] = VERDICTS
    out["log"] = records
    print(json.dumps(out))


if __name__ == "__main__":
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    main()
