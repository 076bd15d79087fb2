"""Random numbers in compiled npu graphs (issue 19 item 6). Inductor's RNG on npu: the wrapper
draws the kernels' seeds from the npu generator (``inductor_prims.seeds``, a device randint)
and the kernels derive their streams with Triton's Philox (``tl.rand``/``tl.randn``). So the
same npu seed gives the same compiled numbers, in this process and in another; with
``fallback_random`` the random ops are eager's ATen ops and equal eager bit for bit."""

import json
import os
import subprocess
import sys

import pytest
import torch
from torch._inductor import config
from torch._inductor.utils import run_and_get_code


def rng_ops(x):
    return (
        torch.rand_like(x) + x,
        torch.randn(x.shape, device=x.device) * 2,
        torch.nn.functional.dropout(x + 1, p=0.5, training=True),
    )


def run_seeded(seed: int, fn=rng_ops):
    x = torch.ones(4, 64, device="npu")
    torch._dynamo.reset()  # compiled under the current config, not Dynamo's cached frame
    torch.npu.manual_seed(seed)
    return [t.cpu() for t in torch.compile(fn)(x)]


def _equal(a, b) -> bool:
    return all(torch.equal(p, q) for p, q in zip(a, b))


def test_compiled_rng_uses_the_npu_generator_and_repeats_per_seed():
    torch._dynamo.reset()
    x = torch.ones(4, 64, device="npu")
    torch.npu.manual_seed(11)
    before = torch.npu.get_rng_state()
    out, codes = run_and_get_code(torch.compile(rng_ops), x)
    code = "\n".join(codes)
    assert "tl.rand(" in code and "tl.randn(" in code  # Inductor's RNG, not eager's
    assert not torch.equal(torch.npu.get_rng_state(), before)  # the seeds came from npu's generator
    again = run_seeded(11)
    assert _equal([t.cpu() for t in out], again)
    assert not _equal(again, run_seeded(12))
    torch.npu.manual_seed(11)
    torch.rand(3, device="npu")  # the generator moved: other seeds for the kernels
    moved = [t.cpu() for t in torch.compile(rng_ops)(x)]
    assert not _equal(again, moved)
    uniform, normal, dropped = again
    assert ((uniform >= 1) & (uniform < 2)).all() and normal.std() > 1
    assert set(dropped.unique().tolist()) <= {0.0, 4.0}  # (1 + 1) / (1 - p) or dropped


_CHILD = """
import json, sys, torch
sys.path.insert(0, {here!r})
from test_numerics_rng import run_seeded
print(json.dumps([t.view(torch.int32).flatten().tolist() for t in run_seeded(7)]))
"""


def test_same_seed_same_compiled_numbers_in_another_process():
    mine = [t.view(torch.int32).flatten().tolist() for t in run_seeded(7)]
    env = {**os.environ, "TORCHINDUCTOR_FX_GRAPH_CACHE": "0"}  # compile there, not a cache hit
    child = subprocess.run(
        [sys.executable, "-c", _CHILD.format(here=os.path.dirname(__file__))],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr[-2000:]
    assert json.loads(child.stdout.strip().splitlines()[-1]) == mine


@pytest.mark.feature("N10")
def test_fallback_random_equals_eager_for_rand_randn_and_dropout():
    x = torch.ones(4, 64, device="npu")
    # torch 2.11's scheduler runs a fallback dropout before an earlier randn whose result it
    # does not need (on cpu too: upstream's order, not npu's), so there the ops are compared
    # one graph each; torch 2.13 keeps the program's order of random ops
    ordered = torch.torch_version.TorchVersion(torch.__version__) >= "2.13"
    groups = (
        [rng_ops]
        if ordered
        else [
            lambda x: torch.rand_like(x) + x,
            lambda x: torch.randn(x.shape, device=x.device) * 2,
            lambda x: torch.nn.functional.dropout(x + 1, p=0.5, training=True),
        ]
    )
    for fn in groups:
        with config.patch(fallback_random=True):
            torch._dynamo.reset()
            torch.npu.manual_seed(5)
            out, codes = run_and_get_code(torch.compile(fn), x)
        torch.npu.manual_seed(5)
        eager = fn(x)
        out, eager = (out, eager) if ordered else ([out], [eager])
        assert _equal([t.cpu() for t in out], [t.cpu() for t in eager])
        assert "tl.rand" not in "\n".join(codes)
    torch.npu.manual_seed(5)
    eager = rng_ops(x)
    with config.patch(fallback_random=False):
        assert not _equal(run_seeded(5), [t.cpu() for t in eager])
