"""Repository-wide pytest plugin: catalogue feature markers and the results file.

``@pytest.mark.feature("ID", ...)`` names the catalogue rows a test verifies. Unknown or
missing ids stop the run at collection. With ``--feature-results PATH`` the session writes
every marked test's ids and outcome to PATH, which ``npu-inductor features`` reads.

Fixture ``link_installed_torch``: gives a fresh venv this environment's installed torch and
Triton (tests that install our packages as a user does, on the torch a user already has).
"""

from __future__ import annotations

import datetime
import json
import os
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytest_plugins = ["pytester"]

CATALOGUE_DIR = Path(os.environ.get(
    "NPU_INDUCTOR_CATALOGUE_DIR", Path(__file__).parent / "packages/npu-inductor-meta/src/npu_inductor/catalogue"))
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
    parser.addoption("--feature-results", metavar="PATH", default=None,
                     help="write catalogue feature results (JSON) to PATH")


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
        raise pytest.UsageError("feature markers name ids the catalogue does not have:\n  " + "\n  ".join(bad))


def _outcome(report) -> str:
    if report.skipped:
        return "skipped"  # includes xfail
    if report.failed:
        return "failed" if report.when == "call" else "error"
    return "passed" if report.when == "call" else "skipped"  # setup/teardown pass says nothing


def pytest_runtest_logreport(report):
    features = [v for k, v in report.user_properties if k == "feature"]
    entry = _OUTCOMES.setdefault(report.nodeid, {"nodeid": report.nodeid, "features": features, "outcome": "skipped"})
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
        "args": [str(a) for a in session.config.invocation_params.args if not str(a).startswith("--feature-results")],
        "tests": sorted(_OUTCOMES.values(), key=lambda t: t["nodeid"]),
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _installed_closure(names: list[str]) -> list:
    """The installed distributions ``names`` need, transitively (requirements whose markers
    hold here, extras left out)."""
    from importlib import metadata

    found, todo = {}, list(names)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in found:
            continue
        try:
            found[name] = dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:  # a requirement pip would have installed with it
            raise RuntimeError(f"{name} (required by {names}) is not installed here") from None
        for line in dist.requires or ():
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(found.values())


def _link_installed_torch(site_packages: Path) -> list[str]:
    """Symlink this environment's installed torch and Triton, and every distribution they
    require, into ``site_packages`` (a fresh venv's): pip there sees them installed, as on a
    user's machine with torch already installed, and ``import torch`` loads this environment's
    files. Installing the same multi-GB wheels again (a copy per test venv) would test pip,
    not our packages. Returns the names linked."""
    linked = []
    for dist in _installed_closure(["torch", "triton"]):
        base = Path(dist.locate_file(""))
        for top in sorted({f.parts[0] for f in dist.files or () if f.parts[0] not in ("..", "__pycache__")}):
            dest = site_packages / top
            if not dest.exists() and (base / top).exists():
                dest.symlink_to(base / top)
                linked.append(top)
    return linked


@pytest.fixture(scope="session")
def link_installed_torch():
    return _link_installed_torch
