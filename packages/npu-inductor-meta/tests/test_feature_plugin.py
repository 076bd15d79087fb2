"""The repository's pytest plugin (root conftest.py): markers checked, results written."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CATALOGUE = ROOT / "packages/npu-inductor-meta/src/npu_inductor/catalogue"


@pytest.fixture
def plugin_pytester(pytester, monkeypatch):
    monkeypatch.setenv("NPU_INDUCTOR_CATALOGUE_DIR", str(CATALOGUE))
    pytester.makeconftest((ROOT / "conftest.py").read_text())
    return pytester


@pytest.mark.feature("X05")
def test_unknown_id_stops_the_run(plugin_pytester):
    plugin_pytester.makepyfile(
        test_x="""
        import pytest
        @pytest.mark.feature("N01", "NOPE42")
        def test_a(): pass
    """
    )
    result = plugin_pytester.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown catalogue id 'NOPE42'*"])


@pytest.mark.feature("X05")
def test_results_file_records_ids_and_worst_outcome(plugin_pytester):
    plugin_pytester.makepyfile(
        test_x="""
        import pytest
        @pytest.mark.feature("N01")
        def test_pass(): pass
        @pytest.mark.feature("N02", "N03")
        def test_fail(): assert False
        @pytest.fixture
        def broken_teardown():
            yield
            raise RuntimeError("teardown")
        @pytest.mark.feature("N04")
        def test_teardown_error(broken_teardown): pass
        @pytest.mark.feature("N05")
        @pytest.mark.skip(reason="no")
        def test_skip(): pass
        def test_unmarked(): pass
    """
    )
    out = plugin_pytester.path / "r" / "features.json"
    result = plugin_pytester.runpytest_subprocess(f"--feature-results={out}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    data = json.loads(out.read_text())
    assert data["schema"] == "npu-inductor-test-results/1"
    got = {t["nodeid"].split("::")[1]: (t["features"], t["outcome"]) for t in data["tests"]}
    assert got == {
        "test_pass": (["N01"], "passed"),
        "test_fail": (["N02", "N03"], "failed"),
        "test_teardown_error": (["N04"], "error"),
        "test_skip": (["N05"], "skipped"),
        "test_unmarked": ([], "passed"),
    }


def test_no_results_file_without_the_option(plugin_pytester):
    plugin_pytester.makepyfile(test_x="def test_a(): pass")
    assert plugin_pytester.runpytest_subprocess().ret == 0
    assert not list(Path(plugin_pytester.path).rglob("features.json"))
