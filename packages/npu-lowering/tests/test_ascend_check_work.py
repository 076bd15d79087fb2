"""The Ascend check reads a block's GM bytes and vector work from the Triton IR and its DMA bytes
from bishengir's HIVM (ascend_check/work_ir.py), and compares them with the cost model's work
record (work_report.py). The IR samples here are written for these tests in the shapes the real
outputs take: the TTIR of triton-ascend's make_ttir, the 910B's HIVM (scf loops, func.call of
the DMA library) and the 950's (loops as cf blocks)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

ASCEND_CHECK = Path(__file__).resolve().parents[1] / "ascend_check"

pytestmark = pytest.mark.feature("X07")

# a reduction over 1024 bf16 in 4 steps of 256 inside the (run-time bounded) sub-block loop,
# then a 1x1 float32 store and a scalar atomic add
TTIR = """module {
  tt.func public @k(%arg0: !tt.ptr<bf16>, %arg1: !tt.ptr<f32>, %arg2: i32) {
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %c256_i32 = arith.constant 256 : i32
    %c1024_i32 = arith.constant 1024 : i32
    %cst = arith.constant dense<0.000000e+00> : tensor<1x256xf32> loc(#loc1)
    %0 = tt.get_program_id x : i32
    %1 = arith.addi %0, %c1_i32 : i32
    scf.for %arg3 = %0 to %1 step %c1_i32  : i32 {
      %2 = scf.for %arg4 = %c0_i32 to %c1024_i32 step %c256_i32 iter_args(%arg5 = %cst) -> (tensor<1x256xf32>)  : i32 {
        %p = tt.splat %arg0 : !tt.ptr<bf16> -> tensor<1x256x!tt.ptr<bf16>>
        %m = arith.cmpi slt, %r, %n : tensor<1x256xi32>
        %i = arith.remsi %r, %k : tensor<1x256xi32>
        %v = tt.load %p, %m : tensor<1x256x!tt.ptr<bf16>> loc("k.py":3:4)
        %e = arith.extf %v : tensor<1x256xbf16> to tensor<1x256xf32>
        %x = math.exp %e : tensor<1x256xf32>
        %s = arith.addf %arg5, %x : tensor<1x256xf32>
        scf.yield %s : tensor<1x256xf32>
      } loc(#loc2)
      %3 = "tt.reduce"(%2) <{axis = 1 : i32}> ({
      ^bb0(%a: f32, %b: f32):
        %4 = arith.addf %a, %b : f32
        tt.reduce.return %4 : f32
      }) : (tensor<1x256xf32>) -> tensor<1xf32>
      %5 = tt.expand_dims %3 {axis = 1 : i32} : tensor<1xf32> -> tensor<1x1xf32>
      %6 = arith.divf %5, %c : tensor<1x1xf32>
      %q = tt.splat %arg1 : !tt.ptr<f32> -> tensor<1x1x!tt.ptr<f32>>
      tt.store %q, %6 : tensor<1x1x!tt.ptr<f32>>
      %7 = tt.atomic_rmw fadd, acq_rel, gpu, %arg1, %f : (!tt.ptr<f32>, f32) -> f32
    } loc(#loc3)
    tt.return
  }
}
#loc1 = loc("k.py":1:1)
"""

MR = "memref<?x{t}, strided<[?], offset: ?>, #hivm.address_space<{s}>>"
# the 910B's: a masked load (a run-time slice of a 1x256 UB buffer) in a loop of 4, and a store
# of a 1-element buffer under an scf.if whose %cast reuses the loop body's name
HIVM_910B = f"""module {{
  func.func private @load_gm_to_ubuf_1d_bfloat16_t({MR.format(t="bf16", s="gm")}, {MR.format(t="bf16", s="ub")}, i32)
  func.func @k(%arg0: memref<?xbf16, #hivm.address_space<gm>>, %arg2: i32) {{
    %c0_i32 = arith.constant 0 : i32
    %c1_i32 = arith.constant 1 : i32
    %c256_i32 = arith.constant 256 : i32
    %c1024_i32 = arith.constant 1024 : i32
    %c0_i64 = arith.constant 0 : i64
    scf.for %arg3 = %c0_i32 to %arg2 step %c1_i32  : i32 {{
      scf.for %arg4 = %c0_i32 to %c1024_i32 step %c256_i32  : i32 {{
        %0 = hivm.hir.pointer_cast(%c0_i64) : memref<1x256xbf16, #hivm.address_space<ub>>
        %subview = memref.subview %0[0, 0] [1, %n] [1, 1] : memref<1x256xbf16, #hivm.address_space<ub>> to memref<1x?xbf16, strided<[256, 1]>, #hivm.address_space<ub>>
        %collapse = memref.collapse_shape %subview [[0, 1]] : memref<1x?xbf16, strided<[256, 1]>, #hivm.address_space<ub>> into memref<?xbf16, strided<[1]>, #hivm.address_space<ub>>
        %cast = memref.cast %collapse : memref<?xbf16, strided<[1]>, #hivm.address_space<ub>> to {MR.format(t="bf16", s="ub")}
        func.call @load_gm_to_ubuf_1d_bfloat16_t(%g, %cast, %c0_i32) : ({MR.format(t="bf16", s="gm")}, {MR.format(t="bf16", s="ub")}, i32) -> ()
      }} {{pipeline.veconly}}
      scf.if %cond {{
        %1 = hivm.hir.pointer_cast(%c0_i64) : memref<1xf32, #hivm.address_space<ub>>
        %cast = memref.cast %1 : memref<1xf32, #hivm.address_space<ub>> to {MR.format(t="f32", s="ub")}
        func.call @store_ubuf_to_gm_1d_float(%cast, %out, %c0_i32) : ({MR.format(t="f32", s="ub")}, {MR.format(t="f32", s="gm")}, i32) -> ()
      }}
    }}
    return
  }}
}}
"""

# the 950's: a loop of 3 as cf blocks, the UB buffer reached through its strided metadata, and
# a scalar read of GM (how bishengir-compile-a5 gathers a GEMM operand it cannot DMA)
HIVM_950 = f"""module {{
  func.func @k(%arg0: memref<?xf16, #hivm.address_space<gm>>) {{
    %c0_i32 = arith.constant 0 : i32
    %c1 = arith.constant 1 : i32
    %c3 = llvm.mlir.constant(3 : i32) : i32
    %c0_i64 = arith.constant 0 : i64
    cf.br ^bb1(%c0_i32 : i32)
  ^bb1(%0: i32):  // 2 preds: ^bb0, ^bb2
    %1 = arith.cmpi slt, %0, %c3 : i32
    cf.cond_br %1, ^bb2, ^bb3
  ^bb2:  // pred: ^bb1
    %2 = hivm.hir.pointer_cast(%c0_i64) : memref<128xf16, #hivm.address_space<ub>>
    %base_buffer, %offset, %sizes, %strides = memref.extract_strided_metadata %2 : memref<128xf16, #hivm.address_space<ub>> -> memref<f16, #hivm.address_space<ub>>, index, index, index
    %rc = memref.reinterpret_cast %base_buffer to offset: [0], sizes: [%n], strides: [1] : memref<f16, #hivm.address_space<ub>> to memref<?xf16, #hivm.address_space<ub>>
    %cast = memref.cast %rc : memref<?xf16, #hivm.address_space<ub>> to {MR.format(t="f16", s="ub")}
    call @load_gm_to_ubuf_1d_half(%g, %cast, %c0_i32) : ({MR.format(t="f16", s="gm")}, {MR.format(t="f16", s="ub")}, i32) -> ()
    %s = memref.load %gm1[%i] {{a = 0 : i32}} : memref<1xf32, strided<[1], offset: ?>, #hivm.address_space<gm>>
    %3 = arith.addi %0, %c1 : i32
    cf.br ^bb1(%3 : i32)
  ^bb3:  // pred: ^bb1
    return
  }}
}}
"""


def _script(name: str):
    """ascend_check/<name>.py, a script beside check.py, as a module of its own."""
    spec = importlib.util.spec_from_file_location(
        f"ascend_{name}_for_test", ASCEND_CHECK / f"{name}.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def work_ir():
    return _script("work_ir")


@pytest.fixture(scope="module")
def work_report():
    return _script("work_report")


def test_ttir_bytes_count_each_block_times_its_constant_loop(work_ir):
    w = work_ir.ttir_work(TTIR)
    # 4 x 256 bf16 (a masked load counts its block) + a 1x1 f32 store + a scalar f32 atomic
    assert w["gm_bytes"] == 4 * 256 * 2 + 4 + 4
    assert w["dynamic_loops"] == 1  # the sub-block loop: counted once, as one block
    v = w["vector"]
    assert v["basic"] == {"ops": 12, "elements": {"i32": 1024, "bf16": 1024, "f32": 1024}}
    assert v["transcendental"] == {"ops": 4, "elements": {"f32": 1024}}
    assert v["divide"] == {"ops": 1, "elements": {"f32": 1}}
    assert v["int_divide"] == {"ops": 4, "elements": {"i32": 1024}}  # modulo indexing
    assert v["reduce"] == {"ops": 1, "elements": {"f32": 256}}  # its scalar combiner is not


def test_ttir_bytes_before_the_sub_block_loop_are_per_program(work_ir, work_report):
    # a load hoisted before the sub-block loop (npu_lowering/hoist.py: an RMSNorm's weight)
    # moves its bytes once per program; the block's figure still holds all of them
    loop = "    scf.for %arg3 = %0 to %1"
    load = "    %w = tt.load %pw : tensor<1x256x!tt.ptr<bf16>>\n"
    w = work_ir.ttir_work(TTIR.replace(loop, load + loop, 1))
    assert w["gm_bytes"] == 4 * 256 * 2 + 4 + 4 + 256 * 2
    assert w["gm_bytes_outside_loops"] == 256 * 2
    assert work_ir.ttir_work(TTIR)["gm_bytes_outside_loops"] == 0
    # 100 blocks on 40 cores: 3 per program, 34 programs (runtime/grid.py)
    meta = {"npu_grid_axes": 1, "npu_device_facts": {"vector_cores": 40}}
    assert work_report.programs(meta, 100) == 34
    assert work_report.programs({**meta, "npu_grid_axes": 2}, 100) is None


def test_hivm_dma_bytes_of_the_910b_and_950_forms(work_ir):
    w = work_ir.hivm_dma(HIVM_910B)
    # the load's UB block (1x256 bf16, sliced at run time) 4 times, the 1-element store once:
    # a reused name resolves to the definition nearest above its use
    assert (w["load_bytes"], w["store_bytes"], w["unsized"]) == (4 * 512, 4, 0)
    assert w["dynamic_loops"] == 1
    w = work_ir.hivm_dma(HIVM_950)
    assert (w["load_bytes"], w["store_bytes"], w["scalar_bytes"]) == (3 * 256, 0, 3 * 4)
    assert w["bytes"] == 3 * 256 + 3 * 4


def test_blocks_and_the_records_bytes_per_block(work_report):
    # the kernel's own size where its body states it, else the size hint
    source = "def k(...):\n    xnumel = 300\n    r0_numel = 64\n"
    assert work_report.blocks({"XBLOCK": 8}, {"x": 512, "r0_": 64}, source) == 38
    assert work_report.blocks({"XBLOCK": 8, "YBLOCK": 4}, {"y": 16, "x": 512}) == 4 * 64
    assert work_report.blocks({}, {}) is None  # a template: no program axes
    meta = {"npu_work": {"gm_bytes": 4800, "vector_ops": 3, "numel": 1200}}
    row = work_report.record_per_block(meta, {"XBLOCK": 8}, {"x": 512, "r0_": 64}, source)
    assert row["blocks"] == 38 and row["record_gm_bytes_per_block"] == 4800 / 38
    assert work_report.record_per_block({}, {"XBLOCK": 8}, {"x": 512}, "") == {"record": None}


def test_the_agreement_summary_names_absurd_ratios(work_report):
    def cfg(ttir, rec, hivm, mix=False, special=0):
        work = {
            "ttir_gm_bytes_per_block": ttir,
            "record_gm_bytes_per_block": rec,
            "record": None if rec is None else {"gm_bytes": rec, "special_ops": special},
            "hivm_dma_bytes_per_block": {"910B2": hivm},
            "ttir_vector": {"transcendental": {"ops": 1, "elements": {"f32": 8}}},
        }
        return SimpleNamespace(
            index=0, kwargs={}, work=work, launch={"mix_mode": "mix" if mix else "aiv"}
        )

    results = [
        SimpleNamespace(
            name="a", configs=[cfg(1000, 800, 1000, special=1), cfg(2000, 1000, 2000, special=1)]
        ),
        SimpleNamespace(name="b", configs=[cfg(1000, 10, 1000)]),  # 100x: a wrong block count
        SimpleNamespace(name="c", configs=[cfg(1000, None, 2500, mix=True)]),
    ]
    row = work_report.work_agreement(results, [SimpleNamespace(name="910B2")])
    assert row["ttir_over_record"] == {"configs": 3, "median": 2.0, "min": 1.25, "max": 100.0}
    assert row["hivm_over_ttir"]["910B2"]["median"] == 1.0
    assert row["hivm_over_ttir_mix_kernels"]["910B2"]["max"] == 2.5  # reported apart
    assert row["kernels_without_record"] == ["c"]
    assert [line.split(":")[0] for line in row["outside_sane_range"]] == ["b cfg0 {}"]
    assert "3 configs median 2.0x" in work_report.summary_line(row)
    # the TTIR's exp against the record's element classes: "b" recorded none
    assert row["element_classes"] == {"kernels": 2, "agree": 1, "disagree": ["b"]}


ASCEND_PY = Path(__file__).resolve().parents[3] / ".venv-ascend" / "bin" / "python"


@pytest.mark.skipif(not ASCEND_PY.exists(), reason="no .venv-ascend (ascend_check/setup.py)")
def test_a_real_kernels_ir_moves_what_its_record_says(tmp_path, npu):
    """An RMSNorm-like kernel through triton-ascend and bishengir: the HIVM's DMAs move the
    TTIR's bytes on both SoCs, and the TTIR's bytes per block are the record's, give or take
    the weight every block reads again."""
    import npu_lowering.config as npu_config

    a, w = torch.randn(16, 64, device=npu), torch.randn(64, device=npu)
    torch._dynamo.reset()
    try:
        with (
            npu_config.patch(save_kernels=str(tmp_path / "k")),
            torch._inductor.config.patch(force_disable_caches=True),
        ):
            torch.compile(lambda a, w: a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True)) * w)(a, w)
    finally:
        torch._dynamo.reset()
    report = tmp_path / "r.json"
    proc = subprocess.run(
        [str(ASCEND_PY), str(ASCEND_CHECK / "check.py"), str(tmp_path / "k")]
        + ["--json", str(report), "--jobs", "1", "--configs", "first"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(report.read_text())
    works = [c["work"] for r in data["results"] for c in r["configs"]]
    assert works and all(w["ttir_gm_bytes_per_block"] > 0 for w in works)
    for w in works:
        assert w["hivm_dma_bytes_per_block"] == {
            "910B2": w["ttir_gm_bytes_per_block"],
            "950": w["ttir_gm_bytes_per_block"],
        }
        assert 1 <= w["ttir_gm_bytes_per_block"] / w["record_gm_bytes_per_block"] <= 2
    assert "work: TTIR / record GM bytes per block" in proc.stdout
    assert data["work_agreement"]["outside_sane_range"] == []
