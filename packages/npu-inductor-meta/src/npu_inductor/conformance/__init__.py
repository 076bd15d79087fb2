"""Conformance harnesses shared by the bench scripts and the tests.

- ``opinfo``: torch's OpInfo database (op_db) x dtype, compiled on npu vs eager on npu, or
  eager on npu vs eager on cpu (npu-sim's eager coverage).
- ``expected_failures.tsv``: the (op, variant, dtype) pairs known to fail, each with its reason.
- ``models``: small random-weight ``transformers`` models built from configs.

Nothing here is imported by ``npu_inductor`` itself: torch's test database is large and only the
bench and the tests need it.
"""
