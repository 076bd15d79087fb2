"""npu is a GPU type for Inductor (is_gpu), but on a machine where cuda is available too,
upstream's get_gpu_type() (one GPU type at most, asserted; asked by every compile's
post-grad passes) must keep answering cuda: loading our backend must not break cuda compiles."""

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("npu_sim")

CHILD = textwrap.dedent("""
    import torch, npu_inductor
    npu_inductor.enable()
    from torch._inductor import utils
    alone = utils.get_gpu_type.__wrapped__()
    torch.cuda.is_available = lambda: True  # a CUDA machine with npu-sim installed
    beside_cuda = utils.get_gpu_type.__wrapped__()
    print(alone, beside_cuda, utils.is_gpu("npu"), "npu" in utils.GPU_TYPES)
""")


def test_npu_is_a_gpu_type_and_cuda_stays_the_gpu_type_where_available():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["npu", "cuda", "True", "True"]
