"""`npu-inductor doctor` and `features`: real console script, --json, exit codes."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from npu_inductor import catalogue, cli, components, results

EXE = shutil.which("npu-inductor") or os.path.join(os.path.dirname(sys.executable), "npu-inductor")


def _run(*args, env=None):
    proc = subprocess.run(
        [EXE, *args], capture_output=True, text=True, env={**os.environ, **(env or {})}
    )
    return proc.returncode, proc.stdout, proc.stderr


def _results(tmp_path, tests):
    path = tmp_path / "features.json"
    path.write_text(json.dumps({"schema": results.SCHEMA, "finished": "t", "tests": tests}))
    return str(path)


@pytest.mark.feature("X05")
def test_features_json_reports_every_row_from_results(tmp_path):
    path = _results(tmp_path, [{"nodeid": "t::a", "features": ["B01"], "outcome": "passed"}])
    code, out, err = _run("features", "--json", "--results", path)
    assert code == 0, err
    data = json.loads(out)
    assert len(data["rows"]) == len(catalogue.load()) == 220
    by_id = {r["id"]: r for r in data["rows"]}
    assert by_id["B01"]["status"] == "verified" and by_id["B01"]["tests"] == {"passed": 1}
    assert by_id["B02"]["status"] == "missing"
    assert data["totals"]["all"]["verified"] == 1
    assert data["totals"]["all"]["not-applicable"] == 8
    assert sum(data["totals"]["all"].values()) == 220


@pytest.mark.feature("X05")
def test_features_exit_status_follows_failing_rows(tmp_path):
    path = _results(tmp_path, [{"nodeid": "t::a", "features": ["B01"], "outcome": "failed"}])
    code, out, _ = _run("features", "--results", path, "--status", "failing")
    assert code == 1
    assert "B01" in out and "failing" in out
    code, _, err = _run("features", "--results", str(tmp_path / "absent.json"))
    assert code == 2 and "no test results" in (err + _)


@pytest.mark.feature("X05")
def test_features_finds_results_through_the_environment(tmp_path):
    path = _results(tmp_path, [{"nodeid": "t::a", "features": ["B02"], "outcome": "passed"}])
    code, out, _ = _run("features", "--json", env={"NPU_INDUCTOR_RESULTS": path})
    assert code == 0
    assert json.loads(out)["results"] == path


def test_doctor_json_reports_stack_components_and_groups():
    code, out, err = _run("doctor", "--json")
    assert code == 0, out + err
    data = json.loads(out)
    assert data["status"] == "ok"
    assert data["torch"]["version"].startswith("2.")
    assert data["triton"]["flavour"] == "nvidia" and data["triton"]["version"]
    assert data["ascend"]["torch_npu"] is None  # never installed by the tests
    assert set(data["components"]["registered"]) >= {"npu-sim", "npu-graphtree", "npu-lowering"}
    assert sum(g["rows"] for g in data["groups"].values()) == 220
    dev = data["device"]  # npu-sim is installed in the test environment
    assert dev["status"] == "ok" and dev["provider"] == "npu_sim" and dev["soc"] == "Ascend910B2"
    assert (dev["vector_cores"], dev["cube_cores"], dev["ub_bytes"]) == (48, 24, 192 * 1024)
    assert "interpreter" in dev["kernels_run_in"]


def broken_register():
    raise ImportError("libfoo.so missing")


def test_doctor_fails_naming_a_broken_component(monkeypatch, capsys):
    from importlib import metadata

    monkeypatch.setattr(components, "_enabled", None)
    FAKES = "npu_inductor_test_fake_cli"  # an importable name for the entry point
    monkeypatch.setitem(sys.modules, FAKES, sys.modules[__name__])
    ep = metadata.EntryPoint("npu-broken", f"{FAKES}:broken_register", components.GROUP)
    monkeypatch.setattr(components, "_entry_points", lambda: [ep])
    assert cli.main(["doctor", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["components"]["status"] == "error"
    assert (
        "npu-broken" in data["components"]["detail"]
        and "libfoo.so missing" in data["components"]["detail"]
    )


def test_text_reports_are_tables():
    code, out, _ = _run("doctor")
    assert code == 0 and "doctor: ok" in out and "graph-tree" in out
    code, out, _ = _run("features", "--group", "graph-tree")
    assert "GT16" in out and "totals per group" in out
