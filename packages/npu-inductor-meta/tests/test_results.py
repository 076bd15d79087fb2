import json

import pytest

from npu_inductor import catalogue, results


def _write(tmp_path, tests):
    path = tmp_path / "features.json"
    path.write_text(json.dumps({"schema": results.SCHEMA, "finished": "now", "tests": tests}))
    return results.load(path)


@pytest.mark.feature("X05")
def test_status_is_derived_from_outcomes(tmp_path):
    res = _write(
        tmp_path,
        [
            {"nodeid": "a", "features": ["N01"], "outcome": "passed"},
            {"nodeid": "b", "features": ["N02"], "outcome": "passed"},
            {"nodeid": "c", "features": ["N02"], "outcome": "failed"},
            {"nodeid": "d", "features": ["N03"], "outcome": "skipped"},
            {"nodeid": "e", "features": ["N05", "N01"], "outcome": "error"},
        ],
    )
    by_id = {s.row.id: s.status for s in results.derive(catalogue.load(), res)}
    assert by_id["N01"] == results.FAILING  # an error in any marked test outweighs a pass
    assert by_id["N02"] == results.FAILING
    assert by_id["N03"] == results.SKIPPED
    assert by_id["N06"] == results.MISSING
    na = next(r.id for r in catalogue.load() if not r.applicable)
    assert by_id[na] == results.NOT_APPLICABLE
    res = _write(tmp_path, [{"nodeid": "a", "features": ["N01"], "outcome": "passed"}])
    assert {s.row.id: s.status for s in results.derive(catalogue.load(), res)}[
        "N01"
    ] == results.VERIFIED


@pytest.mark.feature("X05")
def test_no_results_means_not_run_never_verified():
    statuses = results.derive(catalogue.load(), None)
    assert {s.status for s in statuses} == {results.NOT_RUN, results.NOT_APPLICABLE}


@pytest.mark.feature("X05")
def test_bad_results_files_are_refused(tmp_path):
    with pytest.raises(results.ResultsError, match="unknown id ZZ9"):
        results.derive(
            catalogue.load(),
            _write(tmp_path, [{"nodeid": "x", "features": ["ZZ9"], "outcome": "passed"}]),
        )
    (tmp_path / "other.json").write_text("{}")
    with pytest.raises(results.ResultsError, match="not a"):
        results.load(tmp_path / "other.json")
    with pytest.raises(results.ResultsError, match="no test results"):
        results.load(tmp_path / "absent.json")


@pytest.mark.feature("X17")
def test_results_per_torch_series(tmp_path, monkeypatch):
    """`features --torch S`: the older torch's own run (test-results/torchS/), else the test
    command's run when it was on S (the newest torch), else nothing."""
    main = tmp_path / results.relative_path()
    main.parent.mkdir(parents=True)
    main.write_text(
        json.dumps(
            {"schema": results.SCHEMA, "finished": "now", "torch": "2.15.0+cu132", "tests": []}
        )
    )
    older = tmp_path / results.relative_path("2.13")
    older.parent.mkdir(parents=True)
    older.write_text(
        json.dumps(
            {"schema": results.SCHEMA, "finished": "now", "torch": "2.13.0+cpu", "tests": []}
        )
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(results.RESULTS_ENV, raising=False)
    assert results.find(None, "2.13") == older
    assert results.find(None, "2.15") == main
    assert results.find(None, None) == main
    found = results.find(None, "2.14")  # none here; an editable install may find the checkout's own
    assert (
        found is None or "torch2.14" in str(found) or results.load(found).torch.startswith("2.14")
    )
