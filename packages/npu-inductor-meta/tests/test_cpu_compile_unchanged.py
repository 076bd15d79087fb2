"""Loading the backend leaves a cpu compile of the same function byte-identical.

Fresh processes compile the same function: one without the backend
(``TORCH_DEVICE_BACKEND_AUTOLOAD=0``), one after an explicit ``npu_inductor.enable()``, one
with the backend autoloaded by ``import torch`` (components registered at the first Inductor
import); their generated code must match byte for byte (a fresh process each, so
process-wide counters such as the AOT id start equal). They share one Inductor cache folder
with the caches that skip code generation (FX graph, AOTAutograd) off: each process generates
its code, and the C++ build of code the first one already compiled is a hit (C++ compiles
are most of the time here).
"""

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import json, sys, torch
    from torch._inductor.utils import run_and_get_code
    torch._inductor.config.fx_graph_cache = False
    torch._functorch.config.enable_autograd_cache = False

    loaded = []
    if sys.argv[1] == "enable":
        import npu_inductor
        loaded = npu_inductor.enable()

    def f(x, y):
        return torch.softmax(x @ y, dim=-1).sum(0) + torch.sin(x).mean()

    x, y = torch.randn(8, 8), torch.randn(8, 8)
    _, codes = run_and_get_code(torch.compile(f), x, y)
    if sys.argv[1] == "autoload":
        import npu_inductor
        loaded = npu_inductor.enabled()
    print(json.dumps({"loaded": loaded, "codes": codes}))
""")


def _compile(mode: str, cache) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"}
    env["TORCHINDUCTOR_CACHE_DIR"] = str(cache)
    if mode != "autoload":
        env["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=600, env=env
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_cpu_codegen_is_byte_identical_with_the_backend_enabled(tmp_path):
    plain, enabled, autoloaded = (_compile(m, tmp_path) for m in ("plain", "enable", "autoload"))
    assert {"npu-lowering", "npu-sim"} <= set(enabled["loaded"])
    assert {"npu-lowering", "npu-sim"} <= set(autoloaded["loaded"])
    assert plain["codes"] and all(code.strip() for code in plain["codes"])
    assert enabled["codes"] == plain["codes"]
    assert autoloaded["codes"] == plain["codes"]


CUDA_ROUTES = (
    "torch._inductor.runtime.triton_heuristics.TritonCompileResult.make_launcher",
    "torch._inductor.codegen.common.device_codegens['cuda'].wrapper_codegen",
)


def test_the_backend_declares_no_route_of_cuda_compiles():
    """The benchmark's cuda routes (launcher, wrapper codegen) live in bench/cuda_routes.py
    (issue 35): with every component enabled no package declares or installs a patch of those
    symbols, and upstream's launcher and cuda wrapper codegen are in place."""
    import npu_inductor
    from npu_inductor_core import patches
    from torch._inductor.codegen import common
    from torch._inductor.runtime.triton_heuristics import TritonCompileResult

    npu_inductor.enable()
    ours = [p for p in patches.declared() if p.symbol in CUDA_ROUTES and p.owner != "bench"]
    assert not ours, ours
    assert not getattr(TritonCompileResult.make_launcher, "_npu_routed", False)
    common.init_backend_registration()
    cuda = common.device_codegens.get("cuda")
    if cuda is not None:
        from torch._inductor.codegen.wrapper import PythonWrapperCodegen

        assert cuda.wrapper_codegen is PythonWrapperCodegen
    assert "cuda_routes" not in sys.modules
