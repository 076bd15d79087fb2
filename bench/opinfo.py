"""OpInfo conformance sweep (catalogue row X09): every op of torch's op_db x dtype in
{fp32, fp16, bf16, int32, int64, bool}, compiled on npu vs eager on npu.

    python bench/opinfo.py [--eager] [--ops REGEX] [--dtypes fp32,bf16] [--limit N] [--shuffle SEED]
                           [--timeout S] [--grad] [--json PATH] [--write-expected [PATH]]

--eager         npu eager vs cpu eager instead (npu-sim's eager coverage; no compiles)
--ops REGEX     only ops whose name(.variant) matches
--shuffle SEED  run the pairs in a seeded random order: a sweep cut short is then an unbiased sample
--limit N       stop after N pairs
--ci            only the CI subset (npu_inductor.conformance.opinfo.CI_SUBSET)
--grad          also compare gradients of compiled vs eager (upstream does this on GPUs)
--timeout S     per-pair limit (default 120 s; every kernel runs in Triton's interpreter)
--write-expected [PATH]  write the expected-failures file from this run (default: the packaged one),
                keeping entries for pairs this run did not cover

Rules and tolerances: npu_inductor.conformance.opinfo (they follow upstream's Inductor OpInfo test).
Pairs run in a worker subprocess so that an op that kills the process is recorded as a crash and the
sweep goes on. Prints a table (per dtype and overall pass %), the top failure causes with example
errors, and the pairs that disagree with the expected-failures file; writes JSON (default
bench/results/opinfo.json or opinfo-eager.json), rewritten after every pair so a long sweep can be
read while it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from npu_inductor.conformance import opinfo as O

ROOT = Path(__file__).resolve().parents[1]
KILL_GRACE_S = 30.0  # beyond --timeout, before the parent kills a worker stuck in one pair


def _start_device():
    import torch

    from npu_inductor import enable

    enable()  # npu-sim (or torch_npu) provides "npu"; the bench never imports a component itself
    if torch._C._get_privateuse1_backend_name() != "npu":
        sys.exit("opinfo: no device 'npu' (install npu-inductor[sim] or torch_npu)")


def worker(args):
    """Run the pairs of --cases-file from --start on; one JSON line per event to --events."""
    _start_device()
    cases = [O.Case(*c) for c in json.loads(Path(args.cases_file).read_text())]
    with open(args.events, "a", encoding="utf-8") as ev:
        for i in range(args.start, len(cases)):
            ev.write(json.dumps({"start": i}) + "\n")
            ev.flush()
            res = O.run_case(
                cases[i],
                mode="eager" if args.eager else "compile",
                grad=args.grad,
                timeout=args.timeout,
            )
            ev.write(json.dumps({"done": i, "result": res.to_json()}) + "\n")
            ev.flush()


def _result_from_json(d) -> O.Result:
    case = O.Case(d.pop("op"), d.pop("variant"), d.pop("dtype"))
    return O.Result(case, **d)


def sweep(args, cases, out_json):
    """Drive worker processes over `cases`; a worker that dies costs its current pair only."""
    tmp = out_json.with_suffix(".work")
    tmp.mkdir(parents=True, exist_ok=True)
    cases_file = tmp / "cases.json"
    cases_file.write_text(json.dumps([[c.op, c.variant, c.dtype] for c in cases]))
    events = tmp / "events.jsonl"
    events.write_text("")
    results: dict[int, O.Result] = {}
    start, t0, seen = 0, time.time(), 0
    while start < len(cases):
        cmd = (
            [
                sys.executable,
                __file__,
                "--worker",
                "--cases-file",
                str(cases_file),
                "--events",
                str(events),
                "--start",
                str(start),
                "--timeout",
                str(args.timeout),
            ]
            + (["--eager"] if args.eager else [])
            + (["--grad"] if args.grad else [])
        )
        # stderr goes to a file: a pipe nobody reads fills up (64 KiB of warnings) and blocks the worker
        err_path = tmp / "worker-stderr.log"
        with open(err_path, "w") as err_file:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err_file, text=True)
        last_started, since, killed = start, time.time(), False
        while proc.poll() is None:
            time.sleep(1.0)
            seen = _read_events(events, seen, results, cases, out_json, args, t0)
            now_started = max(last_started, _last_start(events))
            if now_started != last_started:
                last_started, since = now_started, time.time()
            # The worker's own SIGALRM limit cannot interrupt C code (or an interpreter stuck in
            # warnings): past the limit plus a grace period the parent kills it.
            if last_started not in results and time.time() - since > args.timeout + KILL_GRACE_S:
                proc.kill()
                killed = True
        proc.wait()
        err = err_path.read_text(errors="replace")[-4000:]
        seen = _read_events(events, seen, results, cases, out_json, args, t0)
        last_started = max(last_started, _last_start(events))
        if last_started in results or last_started >= len(cases):
            start = len(cases) if not results else max(results) + 1
            continue
        if killed:
            results[last_started] = O.Result(
                cases[last_started],
                "timeout",
                error=f"timeout: killed by the sweep after {args.timeout + KILL_GRACE_S:.0f} s",
                seconds=round(time.time() - since, 1),
            )
            print(f"  timeout (killed): {cases[last_started].id}", flush=True)
        else:
            tail = " | ".join(err.strip().splitlines()[-2:])[:300]
            results[last_started] = O.Result(
                cases[last_started],
                "crash",
                error=f"crash: worker exited {proc.returncode}: {tail}",
            )
            print(f"  crash: {cases[last_started].id} (exit {proc.returncode})", flush=True)
        _write(out_json, args, cases, results, t0)
        start = last_started + 1
    return [results[i] for i in sorted(results)]


def _last_start(events):
    last = 0
    for line in events.read_text().splitlines():
        if line.startswith('{"start"'):
            last = json.loads(line)["start"]
    return last


def _read_events(events, seen, results, cases, out_json, args, t0):
    lines = events.read_text().splitlines()
    for line in lines[seen:]:
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            return seen  # half-written line: read it next time
        seen += 1
        if "done" in ev:
            r = _result_from_json(ev["result"])
            results[ev["done"]] = r
            mark = "" if r.status == "pass" else f"  {r.error[:110]}"
            print(
                f"[{len(results)}/{len(cases)}] {r.case.id:<48} {r.status:<11} {r.seconds:6.1f}s{mark}",
                flush=True,
            )
            if len(results) % 10 == 0:
                _write(out_json, args, cases, results, t0)
    return seen


def _write(out_json, args, cases, results, t0):
    rs = [results[i] for i in sorted(results)]
    data = {
        "bench": "opinfo",
        "mode": "eager" if args.eager else "compile",
        "grad": args.grad,
        "torch": _torch_version(),
        "pairs_planned": len(cases),
        "pairs_run": len(rs),
        "wall_s": round(time.time() - t0, 1),
        "args": vars(args),
        "summary": O.summarize(rs),
        "top_causes": O.top_causes(rs),
        "results": [r.to_json() for r in rs],
    }
    out_json.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_json.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(out_json)
    return data


def _torch_version():
    import torch

    return torch.__version__


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eager", action="store_true")
    ap.add_argument("--ops", default=None)
    ap.add_argument("--dtypes", default=",".join(O.DTYPE_NAMES))
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--shuffle", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--grad", action="store_true")
    ap.add_argument("--ci", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--write-expected", nargs="?", const=str(O.EXPECTED_FAILURES), default=None)
    # worker-only
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cases-file", help=argparse.SUPPRESS)
    ap.add_argument("--events", help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)

    dtype_names = tuple(d for d in args.dtypes.split(",") if d)
    bad = [d for d in dtype_names if d not in O.DTYPE_NAMES]
    if bad:
        ap.error(f"unknown dtypes {bad}; choose from {','.join(O.DTYPE_NAMES)}")
    cases = O.all_cases(dtype_names, args.ops)
    if args.ci:
        subset = set(O.ci_cases())
        cases = [c for c in cases if c in subset]
    if args.shuffle is not None:
        random.Random(args.shuffle).shuffle(cases)
    if args.limit:
        cases = cases[: args.limit]
    out_json = (
        Path(args.json)
        if args.json
        else ROOT / "bench" / "results" / ("opinfo-eager.json" if args.eager else "opinfo.json")
    )
    print(
        f"opinfo ({'npu eager vs cpu eager' if args.eager else 'compiled on npu vs eager on npu'}): "
        f"{len(cases)} pairs",
        flush=True,
    )
    t0 = time.time()
    results = sweep(args, cases, out_json)
    data = _write(out_json, args, cases, {i: r for i, r in enumerate(results)}, t0)

    print()
    print(O.format_table(data["summary"]))
    eager_only = (
        [] if args.eager else [r.case.id for r in results if r.status == "pass" and r.graphs == 0]
    )
    print(
        f"\npasses with nothing compiled (graph breaks on a data-dependent op, as upstream allows): "
        f"{len(eager_only)}{': ' + ', '.join(eager_only[:12]) if eager_only else ''}"
    )
    print("\ntop failure causes:")
    for c in data["top_causes"]:
        print(f"  {c['count']:>5}  {c['reason']}")
        for err, n in c["errors"]:
            print(f"         {n:>4} x {err[:140]}")
        print(f"         e.g. {', '.join(c['examples'])}")
    if not args.eager:
        expected = O.load_expected_failures()
        unexpected_fail, unexpected_pass = O.check_against_expected(results, expected)
        print(f"\nnot in expected_failures.tsv but failing: {len(unexpected_fail)}")
        for r in unexpected_fail[:40]:
            print(f"  {r.case.id}: {r.status}: {r.error[:120]}")
        print(f"in expected_failures.tsv but passing (prune them): {len(unexpected_pass)}")
        for r in unexpected_pass[:40]:
            print(f"  {r.case.id}")
        if args.write_expected:
            n = O.write_expected_failures(results, Path(args.write_expected), keep=expected)
            print(f"wrote {n} expected failures to {args.write_expected}")
    print(f"\nJSON: {out_json}  ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
