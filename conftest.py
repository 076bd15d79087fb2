"""Repository-wide pytest plugin: catalogue feature markers, the results file, fresh venvs.

``@pytest.mark.feature("ID", ...)`` names the catalogue rows a test verifies. Unknown or
missing ids stop the run at collection. With ``--feature-results PATH`` the session writes
every marked test's ids and outcome to PATH, which ``npu-inductor features`` reads.

``fresh_venv`` makes an empty venv that already has this environment's torch and Triton (and
what they require), for the tests that install our packages as a user does.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from importlib import metadata
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


# --- fresh venvs with this environment's torch ----------------------------------------------
# Installing torch again in every fresh venv copies its 5 GB CUDA build (minutes, and a CI
# machine's disk filled up with three of them). Instead the venv gets a .pth naming a folder
# of symlinks, OUTSIDE the venv, to the installed files of torch, Triton and every distribution
# they require (extras followed): pip sees them installed, never writes through them ("outside
# environment"), and whatever the test installs into the venv comes first on sys.path.

LINKED = ("torch", "triton")


def _requirement_closure(names) -> dict[str, metadata.Distribution]:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    found: dict[str, metadata.Distribution] = {}
    extras_seen: dict[str, set[str]] = {}
    todo = [(name, set()) for name in names]
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        try:
            dist = found.get(key) or metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # required only where it does not apply here; pip will say if it matters
        first, new = key not in found, extras - extras_seen.get(key, set())
        if not first and not new:
            continue
        found[key] = dist
        extras_seen.setdefault(key, set()).update(new)
        # base requirements on the first visit, those of extras not seen before on each
        envs = ([{"extra": ""}] if first else []) + [{"extra": e} for e in sorted(new)]
        for line in dist.requires or []:
            req = Requirement(line)
            if req.marker is None or any(req.marker.evaluate(env) for env in envs):
                todo.append((req.name, set(req.extras)))
    return found


def _link_folder(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for dist in _requirement_closure(LINKED).values():
        site = Path(dist.locate_file(""))
        for top in {Path(f).parts[0] for f in dist.files or () if not str(f).startswith("..")}:
            link = folder / top
            if not link.exists() and (site / top).exists():
                link.symlink_to(site / top)
    return folder


@pytest.fixture(scope="session")
def _linked_site(tmp_path_factory) -> Path:
    return _link_folder(tmp_path_factory.mktemp("linked-site"))


@pytest.fixture
def fresh_venv(_linked_site):
    """``make(path, env=None) -> bin folder``: a venv from the base Python whose only
    distributions besides pip are this environment's torch, Triton and their requirements."""

    def make(path: Path, env: dict[str, str] | None = None) -> Path:
        subprocess.run([sys._base_executable, "-m", "venv", str(path)], check=True, env=env)
        py = path / "bin" / "python"
        # the venv's own setuptools is older than torch's requirement; the linked one serves
        subprocess.run(
            [py, "-m", "pip", "uninstall", "-q", "-y", "setuptools"],
            check=True,
            env=env,
            capture_output=True,
        )
        site = subprocess.run(
            [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            env=env,
            capture_output=True,
            text=True,
        ).stdout.strip()
        (Path(site) / "_this_environment_torch.pth").write_text(f"{_linked_site}\n")
        return path / "bin"

    return make
