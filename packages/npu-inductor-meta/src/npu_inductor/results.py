"""Per-row feature status, derived only from the latest test results.

The repository's test command writes ``test-results/features.json`` (see the root
``conftest.py``): every collected test with the catalogue ids of its
``@pytest.mark.feature(...)`` marker and its outcome. Nothing here can mark a row
verified by hand.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from . import catalogue

SCHEMA = "npu-inductor-test-results/1"
# Environment only (no config module): ``npu-inductor features`` never imports torch, and torch
# config modules are built on torch; ``--results PATH`` overrides it.
RESULTS_ENV = "NPU_INDUCTOR_RESULTS"
RELATIVE_PATH = Path("test-results") / "features.json"

# Statuses, in the order tables list them.
VERIFIED = "verified"  # a marked test passed and none failed
FAILING = "failing"  # a marked test failed or errored
SKIPPED = "skipped"  # marked tests exist but every one was skipped or xfailed
MISSING = "missing"  # no marked test
NOT_RUN = "not-run"  # no results to read
NOT_APPLICABLE = "not-applicable"  # the catalogue gives the reason
STATUSES = (VERIFIED, FAILING, SKIPPED, MISSING, NOT_RUN, NOT_APPLICABLE)


class ResultsError(RuntimeError):
    pass


@dataclass
class Results:
    path: Path
    finished: str
    tests: list[dict]
    args: list[str] = field(default_factory=list)  # pytest arguments of that run
    torch: str | None = (
        None  # the torch that run used (None: results written before it was recorded)
    )


@dataclass
class RowStatus:
    row: catalogue.Row
    status: str
    tests: Counter = field(default_factory=Counter)  # outcome -> count of marked tests


def relative_path(torch_series: str | None = None) -> Path:
    """``test-results/features.json`` (the test command's run, on the newest torch), or with a
    torch series ``test-results/torch<series>/features.json`` (CI's run on an older torch,
    ``tools/run_tests.py --internals``)."""
    return (
        RELATIVE_PATH
        if not torch_series
        else RELATIVE_PATH.parent / f"torch{torch_series}" / RELATIVE_PATH.name
    )


def find(explicit: str | os.PathLike | None = None, torch_series: str | None = None) -> Path | None:
    """The results file: explicit path, $NPU_INDUCTOR_RESULTS, else the nearest
    ``test-results/features.json`` (``relative_path(torch_series)``) above the current
    directory or above this package (an editable install inside the repository). With a torch
    series, the test command's own results serve when that run was on that series (the newest
    torch: CI runs the internals tests alone on the older ones)."""
    if explicit:
        return Path(explicit)
    from . import config  # its default is $NPU_INDUCTOR_RESULTS

    where = config.results
    if where and not torch_series:
        return Path(where)
    for start in (Path.cwd(), Path(__file__).resolve().parent):
        for folder in (start, *start.parents):
            candidate = folder / relative_path(torch_series)
            if candidate.is_file():
                return candidate
            main = (
                folder / relative_path()
            )  # the test command's run, when it ran on that torch series
            if torch_series and main.is_file() and _torch_series_of(main) == torch_series:
                return main
    return None


def _torch_series_of(path: Path) -> str | None:
    try:
        version = json.loads(path.read_text(encoding="utf-8")).get("torch") or ""
    except (OSError, ValueError, AttributeError):
        return None
    return ".".join(version.split("+")[0].split(".")[:2]) or None


def load(path: Path) -> Results:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"no test results at {path}") from None
    except (OSError, ValueError) as exc:
        raise ResultsError(f"unreadable test results {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ResultsError(f"{path} is not a {SCHEMA} file")
    return Results(
        path=path,
        finished=data.get("finished", ""),
        tests=list(data.get("tests", [])),
        args=list(data.get("args", [])),
        torch=data.get("torch"),
    )


def derive(rows: list[catalogue.Row], results: Results | None) -> list[RowStatus]:
    """Status of every row. Unknown ids in results are an error: the plugin refuses them
    at collection, so their presence means the catalogue and the results disagree."""
    by_id: dict[str, Counter] = {row.id: Counter() for row in rows}
    if results is not None:
        for test in results.tests:
            for fid in test.get("features", ()):
                if fid not in by_id:
                    raise ResultsError(
                        f"{results.path}: test {test.get('nodeid')} marks unknown id {fid}"
                    )
                by_id[fid][test.get("outcome", "unknown")] += 1
    out = []
    for row in rows:
        counts = by_id[row.id]
        if not row.applicable:
            status = NOT_APPLICABLE
        elif results is None:
            status = NOT_RUN
        elif counts["failed"] or counts["error"]:
            status = FAILING
        elif counts["passed"]:
            status = VERIFIED
        elif counts:
            status = SKIPPED
        else:
            status = MISSING
        out.append(RowStatus(row, status, counts))
    return out


def totals(statuses: list[RowStatus]) -> dict[str, dict[str, int]]:
    """{group: {status: count}} plus an "all" group."""
    out: dict[str, dict[str, int]] = {}
    for st in statuses:
        for group in (st.row.group, "all"):
            bucket = out.setdefault(group, {s: 0 for s in STATUSES})
            bucket[st.status] += 1
    return out
