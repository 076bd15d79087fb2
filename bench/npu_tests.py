"""PyTorch's Inductor tests as Ascend's team adapted them for npu (the ``NPUTests`` class of their
``test_torchinductor.py``), run on npu-sim, static or with dynamic shapes.

    python bench/npu_tests.py --tests-dir DIR [--dynamic] [--shuffle SEED] [--limit N] [-k REGEX]
                              [--offset N] [--timeout S] [--blacklist FILE] [--json PATH]

--tests-dir DIR   a directory holding ``inductor/test_torchinductor.py`` (Ascend's adaptation,
                  e.g. test/ of github.com/YTLiu-bury/Ascend-NPU-Inductor); read, never copied here
--dynamic         the class re-derived as upstream's test_torchinductor_dynamic_shapes.py derives
                  its classes: make_test_cls_with_patches(NPUTests, "DynamicShapes",
                  "_dynamic_shapes", (torch._dynamo.config, "assume_static_by_default", False))
--blacklist FILE  test names (one a line, without the _dynamic_shapes suffix) counted apart, as
                  torch_npu's team counts (their script/blacklist.txt); default DIR/inductor/blacklist.txt
--shuffle SEED    run the tests in a seeded random order: a run cut short is an unbiased sample

Each test runs in a worker process (a worker that dies or passes --timeout costs that test only,
recorded as crash/timeout). Prints pass % of the tests not skipped (blacklist apart), the
failures by class (CLASSES: first matching pattern of the error; with --dynamic, the tests the
adapted dynamic-shapes file lists as failing on npu, upstream's GPU list, count as expected
failures apart), and writes JSON (default
bench/results/npu_tests[-dynamic].json), rewritten after every test.

The file was written for an older torch: three names it imports are gone in torch 2.13; the
loader gives them stand-ins in the module's source before running it (SOURCE_FIXES), so the
tests that use them fail or skip by themselves and the rest run unchanged.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KILL_GRACE_S = 30.0

# (old import text, replacement, why): names the adapted file imports that torch 2.13 lacks
SOURCE_FIXES = (
    (
        "from torch._inductor.codecache import cpp_prefix_path\n",
        "import functools as _ft\ncpp_prefix_path = _ft.cache(lambda: None)\n",
        "cpp_prefix_path left codecache (only patched as a cache in cpu cpp-wrapper tests)",
    ),
    (
        "    complex_memory_overlap,\n",
        "",
        "compile_fx.complex_memory_overlap was removed; test_complex_memory_overlap fails by NameError",
    ),
    (
        "from torch.testing._internal.triton_utils import requires_cuda\n",
        "from torch.testing._internal.triton_utils import requires_cuda_and_triton as requires_cuda\n",
        "renamed upstream",
    ),
)

# failure classes: (name, regex on the error text), first match wins
CLASSES = (
    ("timeout", r"^timeout"),
    ("crash", r"^crash"),
    (
        "kernel count differs from upstream's",
        r"generated_kernel_count|kernel_count|Scalars are not equal!\n\nExpected \d+ but got \d+",
    ),
    (
        "generated code lacks/has a pattern upstream's has (FileCheck)",
        r"FileCheck|Expected to find|Expected to not find|CHECK",
    ),
    ("size/stride asserts", r"assert_size_stride|assert_alignment"),
    (
        "values differ",
        r"Tensor-likes are not close|Mismatched elements|not close|AssertionError: False is not true",
    ),
    ("missing lowering", r"MissingOperator"),
    ("max-autotune choices", r"NoValidChoicesError"),
    ("interpreter", r"InterpreterError|interpreter"),
    (
        "unsupported on npu (runtime/NotImplemented)",
        r"NotImplementedError|not implemented for|Could not run",
    ),
    ("rng functionalization", r"functionalize_rng|Backend not supported"),
    ("other", r""),
)


def load_module(tests_dir: Path):
    """The adapted test module, as ``inductor.test_torchinductor`` (its dynamic-shapes sibling's name)."""
    import importlib.util
    import types

    src_path = tests_dir / "inductor" / "test_torchinductor.py"
    src = src_path.read_text()
    for old, new, _why in SOURCE_FIXES:
        src = src.replace(old, new)
    pkg = sys.modules.setdefault("inductor", types.ModuleType("inductor"))
    pkg.__path__ = [str(tests_dir / "inductor")]
    spec = importlib.util.spec_from_loader(
        "inductor.test_torchinductor", loader=None, origin=str(src_path)
    )
    mod = importlib.util.module_from_spec(spec)
    mod.__file__ = str(src_path)
    sys.modules[spec.name] = mod
    exec(compile(src, str(src_path), "exec"), mod.__dict__)  # noqa: S102  (the test file, as pytest would run it)
    return mod


def test_class(mod, dynamic: bool):
    import torch
    from torch._dynamo.testing import make_test_cls_with_patches

    cls = mod.NPUTests
    if dynamic:
        cls = make_test_cls_with_patches(
            cls,
            "DynamicShapes",
            "_dynamic_shapes",
            (torch._dynamo.config, "assume_static_by_default", False),
        )
    return cls


def worker(args):
    import unittest

    from npu_inductor import enable

    enable()
    cls = test_class(load_module(Path(args.tests_dir)), args.dynamic)
    names = json.loads(Path(args.cases_file).read_text())
    with open(args.events, "a", encoding="utf-8") as ev:
        for i in range(args.start, len(names)):
            ev.write(json.dumps({"start": i}) + "\n")
            ev.flush()
            result = unittest.TestResult()
            t0 = time.time()
            if not hasattr(
                cls, names[i]
            ):  # defined under a condition this torch/device does not meet
                ev.write(
                    json.dumps(
                        {
                            "done": i,
                            "result": {
                                "test": names[i],
                                "status": "skip",
                                "error": "not defined on the class here",
                                "s": 0.0,
                            },
                        }
                    )
                    + "\n"
                )
                ev.flush()
                continue
            unittest.TestSuite([cls(names[i])]).run(result)  # with the class's setUpClass config
            if result.skipped:
                status, err = "skip", result.skipped[0][1]
            elif result.expectedFailures:
                status, err = "xfail", result.expectedFailures[0][1]
            elif result.errors or result.failures:
                status, err = "fail", (result.errors or result.failures)[0][1]
            elif result.unexpectedSuccesses:
                status, err = "pass", "unexpected success"
            else:
                status, err = "pass", ""
            ev.write(
                json.dumps(
                    {
                        "done": i,
                        "result": {
                            "test": names[i],
                            "status": status,
                            "error": err[-3000:],
                            "s": round(time.time() - t0, 1),
                        },
                    }
                )
                + "\n"
            )
            ev.flush()


def classify(err: str) -> str:
    for name, rx in CLASSES:
        if re.search(rx, err, re.S):
            return name
    return "other"


def upstream_expected_failures(tests_dir: Path) -> set:
    """Tests the adapted dynamic-shapes file lists as expected failures on npu (its
    ``test_failures``: upstream's GPU list with cuda renamed npu, e.g. test_conv_inference_heuristics,
    a FileCheck upstream's own cuda run fails too). Names with the ``_npu`` suffix."""
    path = tests_dir / "inductor" / "test_torchinductor_dynamic_shapes.py"
    if not path.exists():
        return set()
    text = path.read_text()
    text = text[
        : text.find("if TEST_WITH_ROCM")
    ]  # the entries after it hold only on ROCm / debug builds
    found = re.findall(r'"(test_\w+)_dynamic_shapes"\]?\s*[:=]\s*TestFailure\(\s*\(([^)]*)\)', text)
    return {f"{name}_npu_dynamic_shapes" for name, devices in found if '"npu"' in devices}


def summarize(results, blacklist, expected=frozenset()):
    results = [
        dict(r, status="xfail") if r["test"] in expected and r["status"] != "pass" else r
        for r in results
    ]
    xfail = sum(r["status"] == "xfail" for r in results)
    run = len(results)
    results = [r for r in results if r["status"] != "xfail"]
    counted = [
        r
        for r in results
        if r["status"] != "skip" and r["test"].removesuffix("_dynamic_shapes") not in blacklist
    ]
    passed = [r for r in counted if r["status"] == "pass"]
    failed = [r for r in counted if r["status"] != "pass"]
    by_class: dict[str, list[str]] = {}
    for r in failed:
        by_class.setdefault(
            classify(
                r["status"] + ": " + r["error"]
                if r["status"] in ("timeout", "crash")
                else r["error"]
            ),
            [],
        ).append(r["test"])
    return {
        "run": run,
        "expected_failures": xfail,
        "skipped": sum(r["status"] == "skip" for r in results),
        "blacklisted": sum(
            r["status"] != "skip" and r["test"].removesuffix("_dynamic_shapes") in blacklist
            for r in results
        ),
        "counted": len(counted),
        "passed": len(passed),
        "pass_pct": round(100.0 * len(passed) / len(counted), 1) if counted else None,
        "failures_by_class": dict(sorted(by_class.items(), key=lambda kv: -len(kv[1]))),
    }


def sweep(args, names, out_json, blacklist):
    tmp = out_json.with_suffix(".work")
    tmp.mkdir(parents=True, exist_ok=True)
    cases_file, events = tmp / "cases.json", tmp / "events.jsonl"
    cases_file.write_text(json.dumps(names))
    results: dict[int, dict] = {}
    start = 0
    while start < len(names):
        events.write_text("")
        cmd = [
            sys.executable,
            __file__,
            "--worker",
            "--tests-dir",
            args.tests_dir,
            "--cases-file",
            str(cases_file),
            "--events",
            str(events),
            "--start",
            str(start),
        ] + (["--dynamic"] if args.dynamic else [])
        with open(tmp / "worker.stderr", "w") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        current, began, seen = None, time.time(), 0
        while True:
            time.sleep(0.5)
            text = events.read_text()
            lines = text[: text.rfind("\n") + 1].splitlines()  # whole lines only
            for line in lines[seen:]:
                e = json.loads(line)
                if "start" in e:
                    current, began = e["start"], time.time()
                else:
                    results[e["done"]] = e["result"]
                    print(
                        f"[{len(results)}/{len(names)}] {e['result']['status']:7s} {e['result']['s']:6.1f}s "
                        f"{e['result']['test']}",
                        flush=True,
                    )
                    write(out_json, args, names, results, blacklist)
            seen = len(lines)
            if proc.poll() is not None:
                break
            if (
                current is not None
                and current not in results
                and time.time() - began > args.timeout + KILL_GRACE_S
            ):
                proc.kill()
                proc.wait()
                break
        if current is not None and current not in results:
            died = "timeout" if proc.returncode in (-9,) else "crash"
            results[current] = {
                "test": names[current],
                "status": died,
                "error": f"{died} (exit {proc.returncode})",
                "s": round(time.time() - began, 1),
            }
            print(f"[{len(results)}/{len(names)}] {died:7s} {names[current]}", flush=True)
            write(out_json, args, names, results, blacklist)
        start = (max(results) + 1) if results else len(names)
    return results


def write(out_json, args, names, results, blacklist):
    data = {
        "dynamic": args.dynamic,
        "tests_dir": args.tests_dir,
        "selected": len(names),
        "summary": summarize(list(results.values()), blacklist, args.expected),
        "results": [results[i] for i in sorted(results)],
    }
    out_json.write_text(json.dumps(data, indent=1))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tests-dir", required=True)
    p.add_argument("--dynamic", action="store_true")
    p.add_argument("--shuffle", type=int)
    p.add_argument("--limit", type=int)
    p.add_argument(
        "--offset",
        type=int,
        default=0,
        help="skip the first N of the (shuffled) order: the next sample",
    )
    p.add_argument("-k", default=None)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--blacklist")
    p.add_argument("--json")
    p.add_argument("--worker", action="store_true")
    p.add_argument("--list", action="store_true")
    p.add_argument("--cases-file")
    p.add_argument("--events")
    p.add_argument("--start", type=int, default=0)
    args = p.parse_args()
    if args.worker:
        return worker(args)
    if args.list:
        from npu_inductor import enable

        enable()
        cls = test_class(load_module(Path(args.tests_dir)), args.dynamic)
        print(json.dumps(sorted(n for n in dir(cls) if n.startswith("test_"))))
        return 0
    tests_dir = Path(args.tests_dir)
    bl_path = Path(args.blacklist) if args.blacklist else tests_dir / "inductor" / "blacklist.txt"
    blacklist = set(bl_path.read_text().split()) if bl_path.exists() else set()
    args.expected = upstream_expected_failures(tests_dir) if args.dynamic else set()
    # the names, from the class itself (parametrized tests included), in a child process
    listing = subprocess.run(
        [sys.executable, __file__, "--list", "--tests-dir", args.tests_dir]
        + (["--dynamic"] if args.dynamic else []),
        capture_output=True,
        text=True,
        check=True,
    )
    names = json.loads(listing.stdout.strip().splitlines()[-1])
    if args.k:
        names = [n for n in names if re.search(args.k, n)]
    if args.shuffle is not None:
        random.Random(args.shuffle).shuffle(names)
    names = names[args.offset :]
    if args.limit:
        names = names[: args.limit]
    out_json = (
        Path(args.json)
        if args.json
        else ROOT
        / "bench"
        / "results"
        / ("npu_tests-dynamic.json" if args.dynamic else "npu_tests.json")
    )
    out_json.parent.mkdir(parents=True, exist_ok=True)
    results = sweep(args, names, out_json, blacklist)
    s = summarize(list(results.values()), blacklist, args.expected)
    print(json.dumps({k: v for k, v in s.items() if k != "failures_by_class"}))
    for cls, tests in s["failures_by_class"].items():
        print(f"  {len(tests):4d}  {cls}: {', '.join(tests[:6])}")


if __name__ == "__main__":
    sys.exit(main())
