"""Repository-wide pytest plugin: catalogue feature markers and the results file.

``@pytest.mark.feature("ID", ...)`` names the catalogue rows a test verifies. Unknown or
missing ids stop the run at collection. With ``--feature-results PATH`` the session writes
every marked test's ids and outcome to PATH, which ``npu-inductor features`` reads.
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CATALOGUE_DIR = Path(
    os.environ.get(
        "NPU_INDUCTOR_CATALOGUE_DIR",
        Path(__file__).parent / "packages/npu-inductor-meta/src/npu_inductor/catalogue",
    )
)
SCHEMA = "npu-inductor-test-results/1"  # npu_inductor.results reads this schema
# when a test's phases disagree, the worst outcome wins
RANK = {"skipped": 0, "passed": 1, "failed": 2, "error": 3}


def _catalogue_ids() -> set[str]:
    ids = set()
    for tsv in sorted(CATALOGUE_DIR.glob("features-*.tsv")):
        for line in tsv.read_text(encoding="utf-8").splitlines()[1:]:
            if line.strip():
                ids.add(line.split("\t", 1)[0])
    return ids


def pytest_addoption(parser):
    parser.addoption(
        "--feature-results",
        metavar="PATH",
        default=None,
        help="write catalogue feature results (JSON) to PATH",
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "feature(*ids): catalogue row ids this test verifies")
    _OUTCOMES.clear()


_OUTCOMES: dict[str, dict] = {}  # nodeid -> {"nodeid", "features", "outcome"}


def pytest_collection_modifyitems(session, config, items):
    known = _catalogue_ids()
    bad = []
    for item in items:
        for mark in item.iter_markers("feature"):
            if not mark.args:
                bad.append(f"{item.nodeid}: @pytest.mark.feature() without ids")
            for fid in mark.args:
                if fid not in known:
                    bad.append(f"{item.nodeid}: unknown catalogue id {fid!r}")
                else:
                    # user_properties travel with reports (xdist too) and into JUnit XML
                    item.user_properties.append(("feature", fid))
    if bad:
        raise pytest.UsageError(
            "feature markers name ids the catalogue does not have:\n  " + "\n  ".join(bad)
        )


def _outcome(report) -> str:
    if report.skipped:
        return "skipped"  # includes xfail
    if report.failed:
        return "failed" if report.when == "call" else "error"
    return "passed" if report.when == "call" else "skipped"  # setup/teardown pass says nothing


def pytest_runtest_logreport(report):
    features = [v for k, v in report.user_properties if k == "feature"]
    entry = _OUTCOMES.setdefault(
        report.nodeid, {"nodeid": report.nodeid, "features": features, "outcome": "skipped"}
    )
    new = _outcome(report)
    if RANK[new] > RANK[entry["outcome"]]:
        entry["outcome"] = new


def _torch_version() -> str | None:
    try:
        import torch
    except ImportError:
        return None
    return torch.__version__


def pytest_sessionfinish(session, exitstatus):
    path = session.config.getoption("--feature-results")
    if not path or hasattr(session.config, "workerinput"):
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "schema": SCHEMA,
        "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "exitstatus": int(exitstatus),
        # the torch the run verified rows on (`npu-inductor features` reports per torch release)
        "torch": _torch_version(),
        # a run narrowed by -k or paths says so: rows it did not collect read "missing"
        "args": [
            str(a)
            for a in session.config.invocation_params.args
            if not str(a).startswith("--feature-results")
        ],
        "tests": sorted(_OUTCOMES.values(), key=lambda t: t["nodeid"]),
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)
