"""``npu-inductor features``: the catalogue with this project's status per row.

Exit status: 0 when no row is failing, 1 when one is, 2 when the results cannot be read.
"""

from __future__ import annotations

import argparse

from . import catalogue, results
from .table import render


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--results",
        metavar="PATH",
        help=f"results file (default: ${results.RESULTS_ENV}, "
        f"else the nearest {results.RELATIVE_PATH})",
    )
    parser.add_argument(
        "--torch",
        metavar="SERIES",
        dest="torch_series",
        help="the results of the run on this torch series (e.g. 2.13: CI's run of the internals "
        "tests there, test-results/torch2.13/features.json); default: the test command's run",
    )
    parser.add_argument("--group", action="append", help="only rows of this group (repeatable)")
    parser.add_argument(
        "--status", action="append", choices=results.STATUSES, help="only rows with this status"
    )


def _run(args: argparse.Namespace):
    rows = catalogue.load()
    path = results.find(args.results, getattr(args, "torch_series", None))
    try:
        res = results.load(path) if path is not None else None
        statuses = results.derive(rows, res)
    except results.ResultsError as exc:
        return 2, {"error": str(exc)}, f"npu-inductor features: {exc}"
    shown = [
        s
        for s in statuses
        if (not args.group or s.row.group in args.group)
        and (not args.status or s.status in args.status)
    ]
    totals = results.totals(statuses)
    data = {
        "results": str(res.path) if res else None,
        "finished": res.finished if res else None,
        "torch": res.torch if res else None,
        "run_args": res.args if res else None,
        "rows": [
            {
                "id": s.row.id,
                "group": s.row.group,
                "feature": s.row.feature,
                "npu_scope": s.row.npu_scope,
                "status": s.status,
                "reason": s.row.na_reason,
                "tests": dict(s.tests),
            }
            for s in shown
        ],
        "totals": totals,
    }
    lines = [
        f"results: {res.path} (finished {res.finished}{', torch ' + res.torch if res.torch else ''})"
        if res
        else "results: none found; run the test command (README) to derive statuses"
    ]
    if res and [a for a in res.args if not a.startswith("--junitxml")]:
        lines.append(
            f"note: a narrowed run (pytest {' '.join(res.args)}); rows it did not collect read 'missing'"
        )
    lines.append("")
    lines += render(
        ("id", "group", "status", "tests p/f/s", "feature"),
        [
            (
                s.row.id,
                s.row.group,
                s.status,
                f"{s.tests['passed']}/{s.tests['failed'] + s.tests['error']}/{s.tests['skipped']}",
                s.row.feature if s.row.applicable else f"{s.row.feature}  [n/a: {s.row.na_reason}]",
            )
            for s in shown
        ],
    )
    lines += ["", "totals per group:"]
    lines += render(
        ("group", *results.STATUSES),
        [(g, *(str(c[s]) for s in results.STATUSES)) for g, c in sorted(totals.items())],
    )
    failing = totals["all"][results.FAILING]
    return (1 if failing else 0), data, "\n".join(lines)


class _Features:
    help = "the feature catalogue with this project's status per row, from the latest test results"
    configure = staticmethod(_configure)
    run = staticmethod(_run)


COMMAND = _Features()
