"""Enabling the backend leaves a cpu compile of the same function byte-identical.

Two fresh processes compile the same function, one after ``npu_inductor.enable()``; their
generated code must match byte for byte (a fresh process each, so process-wide counters
such as the AOT id start equal).
"""

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import json, sys, torch
    from torch._inductor.utils import fresh_cache, run_and_get_code

    loaded = []
    if sys.argv[1] == "enable":
        import npu_inductor
        loaded = npu_inductor.enable()

    def f(x, y):
        return torch.softmax(x @ y, dim=-1).sum(0) + torch.sin(x).mean()

    x, y = torch.randn(8, 8), torch.randn(8, 8)
    with fresh_cache():
        _, codes = run_and_get_code(torch.compile(f), x, y)
    print(json.dumps({"loaded": loaded, "codes": codes}))
""")


def _compile(mode: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_cpu_codegen_is_byte_identical_with_the_backend_enabled():
    plain, enabled = _compile("plain"), _compile("enable")
    assert {"npu-lowering", "npu-sim"} <= set(enabled["loaded"])
    assert plain["codes"] and all(code.strip() for code in plain["codes"])
    assert enabled["codes"] == plain["codes"]
