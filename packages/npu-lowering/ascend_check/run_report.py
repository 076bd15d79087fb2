"""The Ascend check's run report: the per-config "ok/FAIL/DROP" lines, the JSON report of a run
(per-target stage counts, launch modes, the UB and work reports, known failures, dropped
configs) and the lines printed at its end (the summary, the UB estimates below bishengir's,
the failed kernels). check.py lowers and compiles; this module only formats what it found."""

from __future__ import annotations

import collections
import re

import work_report  # (the work figures against the cost model's record)
from ub_report import profile_agreement, ub_agreement, ub_comparison  # (the UB report)


def summary(error: str) -> str:
    """One line saying why: the failing source line and exception of a CompilationError,
    the assertion or `error:` line of triton-adapter-opt, else the first line."""
    lines = [line.rstrip() for line in error.splitlines() if line.strip()]
    if not lines:
        return ""
    if "CompilationError" in lines[0]:
        caret = next((i for i, line in enumerate(lines) if line.strip() == "^"), None)
        src = lines[caret - 1].strip() if caret else ""
        tail = (
            lines[caret + 1].strip()
            if caret is not None and caret + 1 < len(lines)
            else lines[-1].strip()
        )
        return f"{lines[0]} `{src}`: {tail}"[:400]
    if "triton-adapter-opt" in lines[0]:
        for line in lines:
            m = re.search(r"(Assertion .*|error: .*)", line)
            if m:
                return f"triton-adapter-opt: {m.group(1)}"[:400]
    return lines[0][:400]


def config_line(r, c) -> str:
    """One config's line: ok / DROP / FAIL, its kernel, config and bishengir's UB bytes."""
    cfg = ",".join(f"{k}={v}" for k, v in c.kwargs.items()) + f",num_warps={c.num_warps}"
    if c.num_stages and c.num_stages != 1:
        cfg += f",num_stages={c.num_stages}"
    head = f"{'ok  ' if c.ok else 'DROP' if c.dropped else 'FAIL'} {r.name} {r.heuristic.lower()} cfg{c.index}/{r.configs_total} {cfg}"
    ub = " ".join(
        f"{k}:ub={t.get('ub_bytes') or t.get('ub_required_bytes')}"
        for k, t in c.targets.items()
        if t.get("ub_bytes") or t.get("ub_required_bytes")
    )
    if c.ok:
        xf = "".join(f" [xfail {k}: {summary(c.targets[k]['error'])}]" for k in c.xfails)
        return f"{head} {ub}{xf}".rstrip()
    return f"{head} [{c.stage}] {summary(c.error)}"


def kernel_lines(r) -> list[str]:
    """A checked kernel's lines: one per config, or one FAIL line when it has none."""
    if not r.configs:
        return [f"FAIL {r.name} [{r.stage}] {summary(r.error)}"]
    return [config_line(r, c) for c in r.configs]


def stage_counts(results, targets) -> dict:
    """Per target: configs through linalg, configs through HIVM (of those checked)."""
    out = {}
    for t in targets:
        cfgs = [c.targets.get(t.name) for r in results for c in r.configs]
        linalg = sum(1 for x in cfgs if x and x["stage"] in ("hivm", "done"))
        done = sum(1 for x in cfgs if x and x["stage"] == "done")
        runs = [x for x in cfgs if x and not x.get("same_run_as")]  # a shared run counts once
        out[t.name] = {
            "configs": len(cfgs),
            "linalg": linalg,
            "hivm": done,
            "hivm_runs": len(runs),
            "hivm_seconds": round(sum(x.get("seconds", 0) for x in runs), 1),
            "hivm_cpu_seconds": round(sum(x.get("cpu_seconds", 0) for x in runs), 1),
        }
    return out


def _launch_modes(results) -> collections.Counter:
    """How triton-ascend would launch the configs (npu-launcher's Ascend route reads these)."""
    return collections.Counter(
        f"{c.launch.get('mix_mode')}/{c.launch.get('parallel_mode')}"
        for r in results
        for c in r.configs
        if c.launch
    )


def _xfails(results) -> list:
    """(kernel, config, target) of each known compiler failure (check.py's KNOWN_FAILURES)."""
    return [(r, c, k) for r in results for c in r.configs for k in c.xfails]


def _dropped(results) -> list:
    """(kernel, config) of each config dropped for a UB overflow (--ub-overflow drop)."""
    return [(r, c) for r in results for c in r.configs if c.dropped]


def build(
    results, targets, *, triton_ascend: str, arch: str | None, configs: str, seconds: float
) -> dict:
    """The JSON report of a run (check.py --json)."""
    stages = stage_counts(results, targets)
    report = {
        "triton_ascend": triton_ascend,
        "ascendnpu_ir": _version("ascendnpu-ir") if targets else None,
        "arch": arch or "per kernel",
        "configs_checked": configs,
        "targets": {
            t.name: {"arch": t.arch, "compiler": t.compiler, **stages[t.name]} for t in targets
        },
        "kernels": len(results),
        "kernel_configs": sum(len(r.configs) for r in results),
        "failed": [r.name for r in results if not r.ok],
        "launch_modes": dict(_launch_modes(results)),
        "ub_comparison": ub_comparison(results) if targets else [],
        "ub_agreement": ub_agreement(results, targets) if targets else {},
        "profile_agreement": profile_agreement(results),
        "work_agreement": work_report.work_agreement(results, targets),
        "seconds": round(seconds, 1),
        "results": [
            {
                **{k: v for k, v in vars(r).items() if k != "configs"},
                "configs": [
                    {k: v for k, v in vars(c).items() if k != "futures"} for c in r.configs
                ],
            }
            for r in results
        ],
    }
    report["known_failures"] = [
        {
            "kernel": r.name,
            "config": c.index,
            "kwargs": c.kwargs,
            "target": k,
            "why": c.targets[k]["xfail"],
        }
        for r, c, k in _xfails(results)
    ]
    report["ub_overflow_dropped"] = [
        {"kernel": r.name, "config": c.index, "kwargs": c.kwargs} for r, c in _dropped(results)
    ]
    return report


def summary_lines(report: dict, results, targets, seconds: float) -> list[str]:
    """The run's summary line, the work report's line and its figures that disagree."""
    failed = [r for r in results if not r.ok]
    n_cfg = sum(len(r.configs) for r in results)
    modes = _launch_modes(results)
    stages = stage_counts(results, targets)
    lowered = sum(1 for r in results for c in r.configs if c.launch)
    dropped = _dropped(results)
    xfails = _xfails(results)
    per_target = "; ".join(
        f"{t.arch}: {stages[t.name]['linalg']}/{stages[t.name]['configs']} linalg, "
        f"{stages[t.name]['hivm']}/{stages[t.name]['configs']} HIVM ({t.compiler}, "
        f"{stages[t.name]['hivm_runs']} runs, {stages[t.name]['hivm_cpu_seconds']} s CPU)"
        for t in targets
    )
    head = (
        f"ascend_check: {len(results) - len(failed)}/{len(results)} kernels ({n_cfg} configs) pass; "
        f"TTIR -> linalg {lowered}/{n_cfg} with triton-ascend {report['triton_ascend']}"
        + (f"; {per_target}" if targets else "")
        + (f"; {len(dropped)} configs dropped for a UB overflow" if dropped else "")
        + (f"; {len(xfails)} known compiler failures (xfail)" if xfails else "")
        + "".join(
            f"; UB estimate below bishengir's ({t}): {row['body_model']['below']}/{row['configs']} "
            f"(median {row['body_model']['median_ratio']}x, lowest {row['body_model']['min_ratio']}x; peak estimate "
            f"{row['body_model_peak']['below']} below, lowest {row['body_model_peak']['min_ratio']}x)"
            for t, row in report["ub_agreement"].items()
            if row.get("body_model")
        )
        + f"; in {seconds:.1f}s; launch modes (mix/parallel): "
        f"{', '.join(f'{k} {v}' for k, v in sorted(modes.items())) or 'none'}"
    )
    profiles = report["profile_agreement"]
    return [
        head,
        f"ascend_check: UB profiles made by codegen: {profiles['codegen']}/{profiles['kernels']} "
        f"kernels (the rest read from their source); the source reader finds the same on "
        f"{profiles['agree']}/{profiles['codegen']}",
        f"ascend_check: {work_report.summary_line(report['work_agreement'])}",
        *(
            f"ascend_check: work figures disagree (reported): {line}"
            for line in report["work_agreement"]["outside_sane_range"]
        ),
    ]


def verdict_lines(results, below: list, fatal: list) -> list[str]:
    """The configs whose UB estimate is below bishengir's (``fatal``: below what it required,
    failing the run; the rest below a plan that fit, reported), then the failed kernels."""
    out = [
        "ascend_check: "
        + (
            "FAILED UB estimate below what bishengir required"
            if line in fatal
            else "UB estimate below bishengir's plan, which fit (reported)"
        )
        + f": {line}"
        for line in below
    ]
    for r in results:
        if r.ok:
            continue
        bad = next((c for c in r.configs if not c.ok and not c.dropped), None) or next(
            (c for c in r.configs if not c.ok), None
        )
        where = f" cfg{bad.index} {bad.kwargs}" if bad is not None else ""
        out.append(
            f"ascend_check: FAILED kernel {r.name}{where} ({r.path}) [{r.stage}]: {summary(r.error)}"
        )
    return out


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
