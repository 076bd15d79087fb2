"""The Ascend check does each piece of work once: the 910B2 target reuses stage 1's front end
for a kernel generated for the 910B2, and bishengir runs once per distinct input (a kernel the
suite generated twice under two names shares the first one's run)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytestmark = pytest.mark.feature("X07")

CMD = [
    "/tmp/cc-910B2/bishengir-compile",
    "/tmp/x/kernel.ttadapter.mlir",
    "--target=Ascend910B2",
    "--enable-auto-multi-buffer=False",
    "-o",
    "/tmp/x/kernel",
]
LINALG = "module {{\n  func.func @{name}(%arg0: memref<?xf32>) {{\n    return\n  }}\n}}\n"


class _CountingPool:
    def __init__(self):
        self.calls = []

    def submit(self, fn, *args):
        self.calls.append(args)
        return SimpleNamespace(args=args)


def test_the_910b2_target_reuses_stage_1s_front_end_only_when_it_is_the_same(ascend_check):
    targets = ascend_check.hivm.TARGETS
    assert ascend_check._same_front_end(targets["910B2"], "Ascend910B2", "Ascend910B2")
    assert not ascend_check._same_front_end(targets["950"], "Ascend910_9599", "Ascend910B2")
    # a kernel generated for another SoC: the 910B2 target lowers it for the 910B2 itself
    assert not ascend_check._same_front_end(targets["910B2"], "Ascend910B2", "Ascend910B3")


def test_bishengir_runs_once_per_distinct_input(ascend_check, tmp_path, monkeypatch):
    monkeypatch.setattr(ascend_check, "_HIVM_RUNS", {})
    pool = _CountingPool()

    def run(name, cmd=CMD, body=""):
        linalg = LINALG.format(name=name).replace("return", body + "return")
        cmd = [a.replace("/tmp/x", f"/tmp/{name}") for a in cmd]
        return ascend_check._hivm_run(pool, cmd, linalg, tmp_path / name, name, f"{name} cfg0")

    first = run("npu_kernel_aaaa")
    assert first[1] == "npu_kernel_aaaa cfg0"
    assert (
        run("npu_kernel_bbbb") == first and len(pool.calls) == 1
    )  # the same kernel under another name
    # another body, another flag, another compiler: runs of their own
    run("npu_kernel_cccc", body="%0 = arith.constant 1 : i32\n    ")
    run("npu_kernel_dddd", cmd=[a.replace("=False", "=True") for a in CMD])
    run("npu_kernel_eeee", cmd=["/tmp/cc-950/bishengir-compile", *CMD[1:]])
    assert len(pool.calls) == 4
    assert [c[2] for c in pool.calls] == [
        tmp_path / n
        for n in ("npu_kernel_aaaa", "npu_kernel_cccc", "npu_kernel_dddd", "npu_kernel_eeee")
    ]


def test_a_shared_run_counts_once_in_the_per_target_totals(ascend_check):
    def cfg(t, **extra):
        return SimpleNamespace(
            targets={"950": {"stage": "done", "seconds": t, "cpu_seconds": t, **extra}}
        )

    results = [
        SimpleNamespace(configs=[cfg(2.0)]),
        SimpleNamespace(configs=[cfg(2.0, same_run_as="npu_kernel_a cfg0")]),
    ]
    row = ascend_check.run_report.stage_counts(results, [SimpleNamespace(name="950")])["950"]
    assert (row["configs"], row["hivm"], row["hivm_runs"], row["hivm_cpu_seconds"]) == (
        2,
        2,
        1,
        2.0,
    )
