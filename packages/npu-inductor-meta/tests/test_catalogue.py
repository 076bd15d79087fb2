from pathlib import Path

import pytest

from npu_inductor import catalogue

SPEC = Path(__file__).resolve().parents[4] / "shared" / "spec"  # ../shared beside the checkout


def test_rows_are_complete_and_unique():
    rows = catalogue.load()
    assert len(rows) == 220
    assert len({r.id for r in rows}) == len(rows)
    na = [r for r in rows if not r.applicable]
    assert len(na) == 8 and all(r.na_reason for r in na)
    assert all(r.owner for r in rows), [r.id for r in rows if not r.owner]


@pytest.mark.skipif(not SPEC.is_dir(), reason="the shared spec folder is not beside this checkout")
@pytest.mark.parametrize("name", catalogue.FILES)
def test_shipped_copies_equal_the_spec(name):
    shipped = Path(catalogue.__file__).parent / name
    assert shipped.read_bytes() == (SPEC / name).read_bytes(), (
        f"refresh {shipped} from {SPEC / name}"
    )
