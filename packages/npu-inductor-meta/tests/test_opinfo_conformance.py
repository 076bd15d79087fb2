"""OpInfo conformance (catalogue row X09), CI subset: fixed (op, dtype) pairs of torch's op_db,
compiled on npu vs eager on npu (npu_inductor.conformance.opinfo; the full sweep is
bench/opinfo.py).

A pair that fails and is not in expected_failures.tsv fails the test. A listed pair that fails
is an xfail with the file's reason. A listed pair that passes is reported (a warning naming the
entry to prune) and does not fail CI: other branches fix causes concurrently, and a pass on a
pair whose reason is still open elsewhere is not a regression.
"""

from __future__ import annotations

import warnings

import pytest

from npu_inductor.conformance import opinfo as O

pytestmark = pytest.mark.feature("X09")


class UnexpectedPass(UserWarning):
    pass


@pytest.fixture(scope="module")
def expected():
    return O.load_expected_failures()


@pytest.mark.parametrize("case", O.ci_cases(), ids=lambda c: c.id)
def test_opinfo_pair(npu, expected, case):
    res = O.run_case(case, timeout=120)
    if res.status == "skip":
        pytest.skip(res.error)
    reason = expected.get(case)
    if res.status != "pass":
        if reason:
            pytest.xfail(f"{reason} [{res.status}: {res.error[:200]}]")
        pytest.fail(f"{case.id}: {res.status}: {res.error}\n{res.detail}", pytrace=False)
    # nothing compiled is a pass only where upstream allows it: a data-dependent op that graph-breaks
    assert res.graphs >= 1 or res.graph_breaks, (
        f"{case.id}: passed without Inductor compiling a graph"
    )
    if reason:
        warnings.warn(
            UnexpectedPass(f"{case.id} passes: prune it from expected_failures.tsv ({reason})")
        )


def test_harness_sees_wrong_results(npu, monkeypatch):
    """A compiled result that differs from eager is a failure, not a pass (the check is real)."""
    real = O._compiled_call

    def off_by_one(func, sample, res):
        out, args = real(func, sample, res)
        return out + 1, args

    monkeypatch.setattr(O, "_compiled_call", off_by_one)
    res = O.run_case(O.Case("add", "", "fp32"))
    assert res.status == "fail" and "output" in res.error, res


def test_harness_uses_upstream_fp32_tolerance(npu):
    import torch

    x = torch.ones(8)
    O.compare(x * (1 + 1e-5), x, torch.float32)  # inside rtol 1.3e-5 / atol 1.5e-5
    with pytest.raises(O.Mismatch):
        O.compare(x * (1 + 1e-4), x, torch.float32)
    with pytest.raises(O.Mismatch):
        O.compare(torch.tensor([3]), torch.tensor([2]), torch.int64)  # integers: exact


def test_per_op_overrides_follow_upstream_and_take_the_float_reference(npu, monkeypatch):
    """Upstream's per-op overrides (reference_in_float, tolerances) apply, bf16 taking fp16's
    entry; logit in fp16 passes only with the float reference (npu-sim's eager is the CPU
    kernel, which rounds inside in fp16; the compiled kernel matches the float reference)."""
    from npu_inductor.conformance import opinfo_overrides as OV

    assert OV.override("nn.functional.batch_norm", "fp16") == {"reference_in_float": True}
    assert OV.override("nn.functional.batch_norm", "bf16") == {"reference_in_float": True}
    assert OV.override("nn.functional.batch_norm", "fp32") == {}
    assert OV.override("cumprod", "fp32")["rtol"] == 2e-3  # an op-wide entry
    assert O.run_case(O.Case("logit", "", "fp16")).status == "pass"
    monkeypatch.setattr(O, "override", lambda name, dtype: {})
    res = O.run_case(O.Case("logit", "", "fp16"))
    assert res.status == "fail" and "output" in res.error, res


def test_expected_failures_file_is_valid():
    """Every entry names a real op_db pair and carries a reason (the loader refuses empty ones)."""
    entries = O.load_expected_failures()
    known = set(O.all_cases())
    unknown = [c.id for c in entries if c not in known]
    assert not unknown, f"entries naming no op_db (op, dtype) pair: {unknown}"
    assert all(len(reason) > 10 for reason in entries.values())


def test_expected_failures_loader_refuses_entry_without_reason(tmp_path):
    p = tmp_path / "x.tsv"
    p.write_text("op\tvariant\tdtype\treason\nadd\t\tfp32\t\n")
    with pytest.raises(ValueError, match="reason"):
        O.load_expected_failures(p)
