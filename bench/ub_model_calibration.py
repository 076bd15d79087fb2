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


def rows(report: dict) -> dict[str, list]:
    """Per SoC family: (class bytes per statement, bishengir's bytes, kernel, kwargs) of every
    config. The class bytes are the check's own (``ub_classes``: profiled where the check
    runs, with triton-ascend's Triton as on Ascend); older reports without them are
    profiled here from the kernel files."""
    out: dict[str, list] = {fam: [] for _, fam in TARGETS}
    for r in report["results"]:
        prof = None
        for c in r["configs"]:
            pts = c.get("ub_classes")
            for target, fam in TARGETS:
                t = c["targets"].get(target) or {}
                theirs = t.get("ub_required_bytes") or t.get("ub_bytes")
                if not theirs:
                    continue
                mb = bool(t.get("multibuffer")) and not t.get("retried_without_multibuffer")
                use = pts
                if pts is None or mb != bool((c.get("num_stages") or 1) >= 2):
                    if prof is None:
                        try:
                            src = Path(r["path"]).read_text()
                        except OSError:
                            break
                        prof = M.profile(src, M.pointer_dtypes(_signature(src)), name=r["name"])
                    use = M.class_bytes(prof, c["kwargs"], mb)
                out[fam].append(
                    (
                        np.array([[p.get(k, 0) for k in M.CLASSES] for p in (use or [{}])], float),
                        theirs,
                        r["name"],
                        c["kwargs"],
                    )
                )
    return out


# the fit keeps every estimate this much above bishengir's figure: a config the refit's own
# tiling makes (a block one step off the calibrated ones) should not land just below
MARGIN = 1.05


def solve(data: list, rounds: int = 4, margin: float = MARGIN):
    from scipy.optimize import linprog

    C = M.CLASSES
    w = np.ones(len(C))
    bounds = [(1.0 if k in "vlq" else 0.0 if k in "FcR" else 0.25, 64.0) for k in C] + [
        (512.0, 16384.0)
    ]
    for _ in range(rounds):  # the binding statement of each config moves with the weights
        A, b, obj = [], [], np.zeros(len(C) + 1)
        for P, T, _, _ in data:
            p = P[np.argmax(P @ w)]
            A.append(-np.append(p, 1.0))
            b.append(-T * margin)
            obj += np.append(p, 1.0) / max(T, 8192)
        lp = linprog(obj, A_ub=np.array(A), b_ub=np.array(b), bounds=bounds, method="highs")
        if lp.status != 0:
            raise SystemExit(f"linear program failed: {lp.message}")
        w, reserve = lp.x[:-1], lp.x[-1]
    weights = {k: math.ceil(x * 1000) / 1000 for k, x in zip(C, w)}
    return weights, math.ceil(reserve)


def agreement(data: list, weights: dict, reserve: int) -> dict:
    w = np.array([weights[k] for k in M.CLASSES])
    ratios = [float(max(P @ w) + reserve) / T for P, T, _, _ in data]
    big = sorted(q for q, (_, T, _, _) in zip(ratios, data) if T >= BIG)
    return {
        "configs": len(data),
        "below": sum(1 for q in ratios if q < 1),
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
        "--more",
        type=Path,
        nargs="*",
        default=[],
        help="further reports fitted together with the first",
    )
    args = ap.parse_args()
    data = rows(json.loads(args.report.read_text()))
    for more in args.more:
        for fam, extra in rows(json.loads(more.read_text())).items():
            data[fam] += extra
    result = {}
    for fam, d in data.items():
        weights, reserve = solve(d, margin=args.margin)
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
