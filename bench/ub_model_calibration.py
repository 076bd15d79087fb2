"""Calibrate npu_inductor_core.ub_model's buffer-class weights against bishengir.

Reads an Ascend check report (test-results/ascend-check.json from the test command: every
config of every kernel the suite generated, with the UB bytes bishengir-compile planned or
required for a 910B2 and a 950 SoC), profiles each kernel with the body model, and solves a
linear program per SoC family: the smallest class weights (values and loads at least 1) and
reserve for which no config is estimated below bishengir's figure, minimizing the summed
over-estimate. Prints the weights to paste into ub_model.WEIGHTS / RESERVE and the agreement
statistics; ``--json`` writes them.

Needs scipy (``pip install scipy``; not a dependency of any package). Run with the repo venv:
    .venv/bin/python bench/ub_model_calibration.py test-results/ascend-check.json
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import re
import statistics
from pathlib import Path

import numpy as np
from npu_inductor_core import ub_model as M

TARGETS = (("910B2", "910B"), ("950", "950"))
BIG = 16 * 1024  # configs bishengir gives at least this much: where the margin matters


def _signature(src: str) -> dict:
    m = re.search(r"'signature': (\{[^}]*\})", src)
    return eval(m.group(1)) if m else {}  # noqa: S307 - our own generated kernel file


def rows(report: dict, reprofile: bool = False) -> dict[str, list]:
    """Per SoC family, one row per config: its class bytes per statement (``P``), of its
    buffers apart (``A``: every buffer at its own address; None where not profiled here),
    bishengir's bytes (``T``), whether they were required (an overflow) rather than a plan
    that fit, the kernel and the config. The class bytes are the check's own (``ub_classes``:
    profiled where the check runs, with triton-ascend's Triton as on Ascend); older reports
    without them, and every report with ``reprofile`` (a change of the body model), are
    profiled here from the kernel files."""
    out: dict[str, list] = {fam: [] for _, fam in TARGETS}
    for r in report["results"]:
        prof = None
        for c in r["configs"]:
            pts = None if reprofile else c.get("ub_classes")
            for target, fam in TARGETS:
                t = c["targets"].get(target) or {}
                theirs = t.get("ub_required_bytes") or t.get("ub_bytes")
                if not theirs:
                    continue
                mb = bool(t.get("multibuffer")) and not t.get("retried_without_multibuffer")
                use, apart = pts, None
                if pts is None or mb != bool((c.get("num_stages") or 1) >= 2):
                    if prof is None:
                        try:
                            src = Path(r["path"]).read_text()
                        except OSError:
                            break
                        prof = M.profile(src, M.pointer_dtypes(_signature(src)), name=r["name"])
                    use = M.class_bytes(prof, c["kwargs"], mb)
                    whole = {**prof, "points": [prof.get("apart", {})]}
                    apart = M.class_bytes(whole, c["kwargs"], mb)[0]
                out[fam].append(
                    {
                        "P": _matrix(use or [{}]),
                        "A": None if apart is None else _matrix([apart])[0],
                        "T": theirs,
                        "required": bool(t.get("ub_required_bytes")),
                        "name": r["name"],
                        "kwargs": c["kwargs"],
                    }
                )
    return out


def _matrix(points: list) -> np.ndarray:
    return np.array([[p.get(k, 0) for k in M.CLASSES] for p in points], float)


# the fit keeps every estimate this much above bishengir's figure: a config the refit's own
# tiling makes (a block one step off the calibrated ones) should not land just below
MARGIN = 1.05


def _bound_row(row: dict, w: np.ndarray) -> np.ndarray:
    """The class bytes whose weighted sum must reach bishengir's figure for the config: the
    peak statement's, or, for a plan that fit, the buffers apart where they reach it (the
    Ascend check's bound of a plan, ub_model.plan_bound: bishengir keeps buffers apart while
    they fit, so such a plan says what the body holds, not what it needs at once)."""
    peak = row["P"][np.argmax(row["P"] @ w)]
    apart = row["A"]
    if row["required"] or apart is None or apart @ w < peak @ w:
        return peak
    return apart if apart @ w >= row["T"] else peak


# weights kept in order by the fit (the larger first): an 8x8 tile's body-wide temporaries
# (Q) are priced on the 910B as any buffer of such a tile (q), and on both as at least the
# temporaries they widen (F, R)
ORDER = {"910B": (("Q", "q"), ("Q", "F"), ("Q", "R")), "950": (("Q", "F"), ("Q", "R"))}


def solve(data: list, start: dict, rounds: int = 4, margin: float = MARGIN, order=()):
    from scipy.optimize import linprog

    C = M.CLASSES
    w = np.array([start[k] for k in C])
    bounds = [(1.0 if k in "vlq" else 0.0 if k in "FcR" else 0.25, 64.0) for k in C] + [
        (512.0, 16384.0)
    ]
    # a value's weight is not raised: buffers of a kernel not generated yet (fusion's refusal
    # rule, the choice to keep a row whole) are priced as values (estimate_buffers), and a
    # refit of how bodies are counted should not move those decisions; the fit has other
    # classes to meet bishengir's figures with
    bounds[C.index("v")] = (1.0, max(1.0, start["v"]))
    for _ in range(rounds):  # the binding statement of each config moves with the weights
        A, b, obj = [], [], np.zeros(len(C) + 1)
        for row in data:
            p = _bound_row(row, w)
            A.append(-np.append(p, 1.0))
            b.append(-row["T"] * margin)
            peak = row["P"][np.argmax(row["P"] @ w)]
            obj += np.append(peak, 1.0) / max(row["T"], 8192)
        obj[:-1] += 1e-6  # a weight no config's bytes decide is kept at its least
        for big, small in order:
            row = np.zeros(len(C) + 1)
            row[C.index(small)], row[C.index(big)] = 1.0, -1.0
            A.append(row)
            b.append(0.0)
        lp = linprog(obj, A_ub=np.array(A), b_ub=np.array(b), bounds=bounds, method="highs")
        if lp.status != 0:
            raise SystemExit(f"linear program failed: {lp.message}")
        w, reserve = lp.x[:-1], lp.x[-1]
    weights = {k: math.ceil(x * 1000) / 1000 for k, x in zip(C, w)}
    return weights, math.ceil(reserve)


def agreement(data: list, weights: dict, reserve: int) -> dict:
    """Configs below bishengir's figure (the Ascend check's test: the peak below a required
    figure, or the bound of a plan below the plan) and, on configs of 16 KiB or more, the
    peak estimate's ratio to bishengir's figure."""
    w = np.array([weights[k] for k in M.CLASSES])
    below, big = 0, []
    for row in data:
        peak = float(max(row["P"] @ w)) + reserve
        bound = float(_bound_row(row, w) @ w) + reserve
        below += max(peak, bound) < row["T"]
        if row["T"] >= BIG:
            big.append(peak / row["T"])
    big.sort()
    return {
        "configs": len(data),
        "below": below,
        "big_configs": len(big),
        "big_median_ratio": round(statistics.median(big), 2) if big else None,
        "big_p90_ratio": round(big[9 * len(big) // 10], 2) if big else None,
        "big_max_ratio": round(big[-1], 2) if big else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", type=Path)
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--margin", type=float, default=MARGIN, help="fit every estimate >= margin x bishengir's"
    )
    ap.add_argument(
        "--rows-cache",
        type=Path,
        help="keep the profiled rows here and read them back on the next run (a refit's loop)",
    )
    ap.add_argument(
        "--reprofile",
        action="store_true",
        help="profile the kernel files with the current body model, not the report's classes",
    )
    ap.add_argument(
        "--more",
        type=Path,
        nargs="*",
        default=[],
        help="further reports fitted together with the first",
    )
    args = ap.parse_args()
    if args.rows_cache and args.rows_cache.exists():
        data = pickle.loads(args.rows_cache.read_bytes())
    else:
        data = rows(json.loads(args.report.read_text()), args.reprofile)
        for more in args.more:
            for fam, extra in rows(json.loads(more.read_text()), args.reprofile).items():
                data[fam] += extra
        if args.rows_cache:
            args.rows_cache.write_bytes(pickle.dumps(data))
    result = {}
    for fam, d in data.items():
        weights, reserve = solve(d, M.WEIGHTS[fam], margin=args.margin, order=ORDER[fam])
        result[fam] = {
            "weights": weights,
            "reserve": reserve,
            "now": agreement(d, M.WEIGHTS[fam], M.RESERVE[fam]),
            "fitted": agreement(d, weights, reserve),
        }
        print(f"{fam}: weights {weights} reserve {reserve}")
        print(f"  with ub_model's current weights: {result[fam]['now']}")
        print(f"  with the fitted weights:         {result[fam]['fitted']}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
