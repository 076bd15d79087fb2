"""AOTInductor packages for npu (X08): ``torch._inductor.aoti_compile_and_package`` on an
exported npu program writes a .pt2 whose kernels are npu-launcher descriptors (npu-sim's
simulated form here) and whose weights are inside the model; ``aoti_load_package`` runs it in a
fresh process with no Triton compile and no Inductor codegen, and a C++ program linked against
libtorch runs it through torch's ``AOTIModelPackageLoader``, both equal to eager, at two batch
sizes of a dynamic batch dimension.

One package is compiled for all tests (an AOT compile builds C++): a tiny transformer block
(``nn.TransformerEncoderLayer``, width 16, 2 heads, plus a Linear head) and a user Triton
kernel (``torch.library.triton_op``, what export takes a user kernel as)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl
from torch._inductor import config as inductor_config

from npu_lowering import _compat

pytestmark = pytest.mark.skipif(
    not _compat.lazy_triton_compile_available(),
    reason="this torch (2.11) has no torch._inductor.runtime.triton_lazy_compile (upstream's lazy "
    "kernel compile, which npu's cpp_wrapper and AOTInductor are built on)",
)

HERE = Path(__file__).resolve().parent
BATCHES = (3, 5)  # two sizes of the exported dynamic batch dimension; exported at 2


@triton.jit
def _affine(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) * 2.0 + 1.0, mask=m)


@torch.library.triton_op("npu_aoti_test::affine", mutates_args={})
def affine(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    torch.library.wrap_triton(_affine)[(triton.cdiv(n, 64),)](x, out, n, BLOCK=64)
    return out


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(
            d_model=16, nhead=2, dim_feedforward=32, dropout=0.0, batch_first=True
        )
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        h = self.head(self.layer(x))
        if h.device.type == "cpu":  # eager reference on the CPU: the same function
            return (h * 2.0 + 1.0).relu()
        return affine(h.contiguous()).relu()


def case_inputs(batch: int) -> torch.Tensor:
    return torch.randn(batch, 6, 16, generator=torch.Generator().manual_seed(batch))


def write_bin(path: Path, t: torch.Tensor) -> None:
    """The C++ runner's format: int64 ndim, int64 sizes, float32 data."""
    t = t.detach().to(torch.float32).contiguous()
    with open(path, "wb") as f:
        f.write(torch.tensor([t.dim(), *t.shape], dtype=torch.int64).numpy().tobytes())
        f.write(t.numpy().tobytes())


@pytest.fixture(scope="module")
def package(npu, tmp_path_factory):
    """The block exported with a dynamic batch, packaged; eager outputs of each case saved."""
    root = tmp_path_factory.mktemp("npu_aoti")
    torch.manual_seed(0)
    model = Block().eval()
    on_npu = Block().eval()
    on_npu.load_state_dict(model.state_dict())
    on_npu = on_npu.to(npu)
    batch = torch.export.Dim("batch", min=1, max=64)
    torch._dynamo.reset()
    # compiled here, not served from the FX graph cache (Inductor's cache dir, and with it the
    # precompiled AOT header, is the session's)
    with torch.no_grad(), inductor_config.patch(fx_graph_cache=False):
        ep = torch.export.export(
            on_npu, (case_inputs(2).to(npu),), dynamic_shapes={"x": {0: batch}}
        )
        path = torch._inductor.aoti_compile_and_package(ep, package_path=str(root / "block.pt2"))
    cases = []
    with torch.no_grad():
        for b in BATCHES:
            x = case_inputs(b)
            folder = root / f"case{b}"
            folder.mkdir()
            write_bin(folder / "in0.bin", x)
            write_bin(folder / "out0.bin", model(x))
            torch.save({"inputs": [x], "outputs": [model(x)]}, folder / "case.pt")
            cases.append(folder)
    return {"path": path, "cases": cases, "model": model}


def package_files(path: str) -> list[str]:
    with zipfile.ZipFile(path) as z:
        return z.namelist()


@pytest.mark.feature("X08")
def test_package_holds_descriptors_and_the_model(package):
    from npu_launcher.inductor import descriptor_from_bytes

    names = package_files(package["path"])
    model_files = [n for n in names if "/data/aotinductor/model/" in n]
    assert any(n.endswith(".so") for n in model_files), names
    descriptors = [n for n in model_files if n.endswith(".npld")]
    assert descriptors, names
    # no cubin / Python kernel source: every kernel is an npu-launcher descriptor (simulated form)
    assert not any(n.endswith((".cubin", ".py")) for n in model_files), names
    cpp = next(n for n in model_files if n.endswith(".cpp") and "wrapper" in n)
    with zipfile.ZipFile(package["path"]) as z:
        code = z.read(cpp).decode()
        for n in descriptors:
            desc = descriptor_from_bytes(z.read(n))
            assert desc.binary_format == "triton-python" and desc.target.backend == "sim", (
                desc.target
            )
    # each kernel the model launches is loaded from its packed descriptor through the C ABI,
    # the user's Triton kernel too
    loads = code.count("= loadKernel(")
    assert loads == len(descriptors) and "launchKernel(" in code
    assert "kernels_._affine" in code or "call__affine" in code, (
        "the user kernel is not in the model"
    )
    assert "npu_aoti_model_device(device_type_, device_idx_);" in code


def run_child(package, *extra):
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"}
    proc = subprocess.run(
        [
            sys.executable,
            str(HERE / "aoti_child.py"),
            package["path"],
            *map(str, package["cases"]),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.feature("X08")
def test_load_package_in_a_fresh_process_without_compiling(package):
    got = run_child(package)
    # equal to eager at both batch sizes of the dynamic dimension
    assert [c["batch"] for c in got["cases"]] == list(BATCHES)
    for case in got["cases"]:
        assert case["device"] == "npu:0" and case["max_abs_diff"] <= 1e-4, case
    # nothing compiled or generated in that process: no triton.compile, no JIT compile, no
    # Inductor codegen or generated-module load; the kernels came from the package's descriptors
    assert got["forbidden_calls"] == [], got["forbidden_calls"]
    packed = sorted(Path(n).name for n in package_files(package["path"]) if n.endswith(".npld"))
    assert sorted(Path(p).name for p in got["descriptor_loads"]) == packed
    # the weights are the package's: the child never saw the model
    assert got["constant_fqns"] and any("layer.self_attn" in f for f in got["constant_fqns"]), got[
        "constant_fqns"
    ]


def cpp_runner() -> Path:
    """run_package.cpp built against libtorch and libpython, cached by source, torch and flags."""
    cxx = shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")
    if cxx is None:
        pytest.skip("no C++ compiler (g++ or c++, or $CXX) on PATH: the C++ runner cannot be built")
    if not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        pytest.skip("this Python has no shared libpython to embed in the C++ runner")
    from torch.utils import cpp_extension

    src = HERE / "aoti_cpp" / "run_package.cpp"
    libdirs = [*cpp_extension.library_paths(), sysconfig.get_config_var("LIBDIR")]
    # C++20: torch's own extension builds use it (torch 2.13 on), torch 2.15's headers require it
    cmd = [
        cxx,
        "-std=c++20",
        "-O1",
        f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
        *(f"-I{d}" for d in [*cpp_extension.include_paths(), sysconfig.get_paths()["include"]]),
        str(src),
        *(f"-L{d}" for d in libdirs),
        *(f"-Wl,-rpath,{d}" for d in libdirs),
        "-ltorch",
        "-ltorch_cpu",
        "-lc10",
        f"-lpython{sysconfig.get_config_var('LDVERSION')}",
    ]
    key = hashlib.sha256(
        src.read_bytes() + torch.__version__.encode() + " ".join(cmd).encode()
    ).hexdigest()[:16]
    cache = Path(
        os.environ.get("NPU_AOTI_RUNNER_CACHE")
        or Path.home() / ".cache" / "npu_inductor" / "aoti_runner"
    )
    exe = cache / f"run_package-{key}"
    if not exe.exists():
        cache.mkdir(parents=True, exist_ok=True)
        tmp = exe.with_name(f"{exe.name}.{os.getpid()}.tmp")
        proc = subprocess.run([*cmd, "-o", str(tmp)], capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, (
            f"building the C++ runner failed:\n{' '.join(cmd)}\n{proc.stderr[-4000:]}"
        )
        os.replace(tmp, exe)
    return exe


@pytest.mark.feature("X08")
def test_cpp_program_runs_the_package(package):
    exe = cpp_runner()
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"}
    env["NPU_AOTI_PYTHON"] = sys.executable  # the embedded interpreter takes this environment
    proc = subprocess.run(
        [str(exe), package["path"], *map(str, package["cases"])],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.startswith("case ")]
    assert len(lines) == len(BATCHES) and all(
        line.endswith(": match") and "on npu:0" in line for line in lines
    ), proc.stdout


def test_model_code_calls_cann_only_through_npu_launcher():
    # On Ascend a served package reaches CANN through npu-launcher's ascend driver only (its
    # symbols are checked against torch_npu 2.13.0's imports and headers by npu-launcher's
    # test_ascend_fidelity.py) and through ATen/torch_npu: the model code itself names no
    # ACL/runtime function
    import re

    import npu_lowering

    include = Path(npu_lowering.__file__).parent / "include"
    text = "\n".join((include / name).read_text() for name in ("npu_aoti.h", "npu_common.h"))
    code = re.sub(r"//[^\n]*", "", text)
    assert not re.findall(r"\b((?:acl|rt)[A-Z]\w*)\s*\(", code)


def test_aot_contexts_leave_other_compiles_alone(npu):
    # npu-lowering's AOT contexts (aoti_build.py) act only on npu programs compiled for
    # AOTInductor: cpu programs, JIT compiles and a user's own autotune_at_compile_time keep
    # upstream's behaviour
    from torch._inductor.virtualized import V

    from npu_lowering import aoti_build

    gm = torch.fx.symbolic_trace(lambda x: x + 1)
    cpu, on_npu = [torch.randn(2)], [torch.randn(2, device=npu)]
    assert aoti_build.compile_context(gm, on_npu) is None  # JIT
    assert aoti_build.graph_context(gm, on_npu) is None
    with V.set_aot_compilation(True):
        assert aoti_build.compile_context(gm, cpu) is None
        assert aoti_build.graph_context(gm, cpu) is None
        assert aoti_build.compile_context(gm, on_npu) is not None
        with inductor_config.patch({"triton.autotune_at_compile_time": False}):
            assert aoti_build.compile_context(gm, on_npu) is None
        ctx = aoti_build.graph_context(gm, on_npu)
        before = os.environ.get("CPATH")
        with ctx:
            root = os.environ["CPATH"].split(os.pathsep)[-1]
            assert (Path(root) / "torch/csrc/inductor/aoti_include/npu.h").exists()
        assert os.environ.get("CPATH") == before


@pytest.mark.feature("X08")
def test_ascend_kernel_object_saves_its_descriptor_for_cpp_wrappers(npu, tmp_path):
    # On Ascend upstream's run() calls save_gpu_kernel under triton.store_cubin (AOTInductor,
    # C++ wrappers); npu's kernel object saves the chosen config's npu-launcher descriptor
    # (triton-ascend's npubin) as the kernel's binary, with upstream's launch fields
    import types

    import triton
    import triton.language as tl
    from torch._inductor.codecache import CudaKernelParamCache

    from npu_lowering.runtime.autotuner import NpuCachingAutotuner
    from npu_lowering.runtime.static_result import NpuStaticCompileResult, NpuStaticKernel

    @triton.jit
    def kernel(x, out, n, XBLOCK: tl.constexpr):
        offs = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
        tl.store(out + offs, tl.load(x + offs, mask=offs < n), mask=offs < n)

    chosen, other = (
        triton.Config({"XBLOCK": 16}, num_warps=1),
        triton.Config({"XBLOCK": 32}, num_warps=1),
    )
    blobs = {
        "chosen": b"npubin descriptor of XBLOCK=16",
        "other": b"npubin descriptor of XBLOCK=32",
    }
    meta = {
        "signature": {"x": "*fp32", "out": "*fp32", "n": "i32", "XBLOCK": "constexpr"},
        "constants": {},
        "device": 0,
    }
    results = [
        NpuStaticCompileResult(NpuStaticKernel(f"kernel_{k}", blob, 0, native=True), cfg, meta, {})
        for (k, blob), cfg in zip(blobs.items(), (chosen, other))
    ]
    obj = types.SimpleNamespace(
        fn=kernel,
        triton_meta=meta,
        inductor_meta={"kernel_name": "triton_poi_ascend_0"},
        compile_results=results[::-1],
        cuda_kernel_saved=False,
    )
    with inductor_config.patch({"aot_inductor.output_path": str(tmp_path)}):
        NpuCachingAutotuner.save_gpu_kernel(obj, None, types.SimpleNamespace(config=chosen))
    params = CudaKernelParamCache.cache.pop("triton_poi_ascend_0")
    assert Path(params["cubin_path"]).read_bytes() == blobs["chosen"] and params[
        "cubin_path"
    ].endswith(".npld")
    assert Path(params["cubin_path"]).parent == tmp_path
    assert params["mangled_name"] == "kernel_chosen" and params["config"]["XBLOCK"] == 16
    assert params["def_args"] == ["x", "out", "n"] and params["call_args"] == ["x", "out", "n"]
    assert obj.cuda_kernel_saved


def test_float64_fallback_with_a_number_takes_the_scalar_overload():
    # a per-node ATen fallback (float64 on npu) called from C++ goes through upstream's proxy
    # executor, which takes Tensor arguments only as buffers: aten.mul.Tensor(d, 2.0) becomes
    # aten.mul.Scalar (same computation); a tensor operand keeps the Tensor overload
    from npu_lowering.dtype_policy import _scalar_overload

    g = torch.fx.Graph()
    d, e = g.placeholder("d"), g.placeholder("e")
    by_number = g.call_function(torch.ops.aten.mul.Tensor, (d, 2.0))
    by_tensor = g.call_function(torch.ops.aten.mul.Tensor, (d, e))
    summed = g.call_function(torch.ops.aten.sum.dim_IntList, (d, [1]))
    assert _scalar_overload(by_number) is torch.ops.aten.mul.Scalar
    assert _scalar_overload(by_tensor) is None and _scalar_overload(summed) is None


class _Foldable(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(16, 8))
        self.b = torch.nn.Parameter(torch.randn(8))

    def forward(self, x):
        return x @ (self.w * 2 + 1) + self.b.sin()  # (w * 2 + 1) and sin(b) need only weights


def test_runtime_constant_folding(npu, tmp_path):
    # upstream's aot_inductor.use_runtime_constant_folding: the weights-only subgraphs become
    # npu kernels the model runs once when it loads (its _const_run_impl), their results kept
    # as folded constants; the model's own run reads them
    torch.manual_seed(0)
    model = _Foldable().to(npu)
    x = torch.randn(4, 16, device=npu)
    torch._dynamo.reset()
    with (
        torch.no_grad(),
        inductor_config.patch(
            {"aot_inductor.use_runtime_constant_folding": True, "fx_graph_cache": False}
        ),
    ):
        ep = torch.export.export(model, (x,))
        path = torch._inductor.aoti_compile_and_package(
            ep, package_path=str(tmp_path / "folded.pt2")
        )
    with zipfile.ZipFile(path) as z:
        cpp = next(n for n in z.namelist() if n.endswith(".cpp") and "wrapper" in n)
        code = z.read(cpp).decode()
    assert code.count(".from_folded = true;") == 2 and "_const_run_impl(" in code
    runner = torch._inductor.aoti_load_package(path)
    with torch.no_grad():
        torch.testing.assert_close(runner(x).cpu(), model(x).cpu(), atol=1e-4, rtol=1e-4)
        y = torch.randn(4, 16, device=npu)
        torch.testing.assert_close(runner(y).cpu(), model(y).cpu(), atol=1e-4, rtol=1e-4)
        # new weights (upstream's load_constants; on npu as the model's own tensors: upstream's
        # copying path puts them in host memory, which only its own devices avoid): the folded
        # constants are computed again from them
        w, b = torch.randn(16, 8, device=npu), torch.randn(8, device=npu)
        runner.load_constants({"w": w, "b": b}, check_full_update=False, user_managed=True)
        torch.testing.assert_close(
            runner(y).cpu(), (y @ (w * 2 + 1) + b.sin()).cpu(), atol=1e-4, rtol=1e-4
        )


@pytest.mark.feature("X08")
def test_kernels_embedded_in_the_model(npu, tmp_path):
    # upstream's aot_inductor.embed_kernel_binary: no descriptor file beside the model, each one
    # linked into the .so as __<kernel>_start; the model loads them from memory
    torch.manual_seed(0)
    model = _Foldable().to(npu)
    x = torch.randn(4, 16, device=npu)
    torch._dynamo.reset()
    with (
        torch.no_grad(),
        inductor_config.patch({"aot_inductor.embed_kernel_binary": True, "fx_graph_cache": False}),
    ):
        ep = torch.export.export(model, (x,))
        path = torch._inductor.aoti_compile_and_package(
            ep, package_path=str(tmp_path / "embedded.pt2")
        )
    names = package_files(path)
    assert not any(n.endswith(".npld") for n in names), names
    so = next(n for n in names if n.endswith(".so"))
    with zipfile.ZipFile(path) as z:
        assert z.read(so).count(b"NPLKD1") >= 2  # the descriptors are inside the model
    runner = torch._inductor.aoti_load_package(path)
    with torch.no_grad():
        torch.testing.assert_close(runner(x).cpu(), model(x).cpu(), atol=1e-4, rtol=1e-4)
