"""``npu-inductor demo`` reports the estimated NPU time of the compiled block against an eager
estimate (issue 39 item 4), and the compiled figure prices every kernel the graph launches:
one call of the compiled code, each launch priced from its work record (none missing), and
no launch left to run past the estimate (a launch path that skipped ``priced_launch`` showed
as 0 kernels)."""

from __future__ import annotations

import argparse
import re

KEYS = {
    "soc",
    "family",
    "compiled_us",
    "eager_us",
    "kernels",
    "compiled_aclnn_ops",
    "eager_aclnn_ops",
    "unpriced_kernels",
    "caveat",
}
# a Triton kernel launch in the Python wrapper: a direct-launch slot or upstream's kernel.run
LAUNCH = re.compile(r"^\s*(?:_npu_dl\[\d+\]|\w+\.run)\(", re.M)


def test_demo_reports_compiled_and_eager_estimates(npu):
    from torch._inductor.utils import run_and_get_code

    from npu_inductor import demo

    args = argparse.Namespace(dim=32, heads=2, batch=2, seq=8, calls=0)
    (code, data, text), sources = run_and_get_code(demo._run, args)
    assert code == 0, text
    est = data["estimate"]
    assert KEYS <= est.keys(), est
    assert est["compiled_us"] > 0 and est["eager_us"] > 0, est
    assert est["eager_aclnn_ops"] > 0, est
    launches = sum(len(LAUNCH.findall(src)) for src in sources)
    assert launches > 0, sources
    assert est["kernels"] == launches, (est, launches)
    assert est["unpriced_kernels"] == [], est
    assert "estimated NPU time" in text and "compiled" in text and "eager" in text
