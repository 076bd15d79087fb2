"""The 950's bishengir runs once where it reaches hivmc: bishengir-compile-a5 runs its whole
pipeline again, five times in all, when hivmc-a5 is missing (as here), to the same HIVM module;
with --enable-tuning-mode it stops after one. Any other outcome is decided by triton-ascend's own
command. Stand-in compilers record each call and answer as the real ones do."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.feature("X07")

# writes the HIVM module into --save-temps, logs its arguments, then ends as bishengir does here;
# FAIL_ONCE: the single attempt (with the flag) ends in an error, the full command does not
FAKE = """#!/usr/bin/env python3
import json, os, sys
args = sys.argv[1:]
log = os.path.join(os.path.dirname(os.path.realpath(sys.argv[0])), "calls.jsonl")
open(log, "a").write(json.dumps(args) + "\\n")
temps = [a.split("=", 1)[1] for a in args if a.startswith("--save-temps=")][0]
if "{fail_once}" == "yes" and "--enable-tuning-mode" in args:
    print("error: ub overflow, requires 2000000 bits while 1000000 bits available")
    sys.exit(1)
open(os.path.join(temps, "module.hivm.opt.mlir"), "w").write("module {{}}\\n")
print("[ERROR] Cannot find {hivmc} under $PATH")
sys.exit(1)
"""


def _compiler(tmp_path, real_name: str, fail_once: bool = False):
    folder = tmp_path / real_name
    folder.mkdir()
    exe = folder / real_name
    exe.write_text(
        FAKE.format(
            fail_once="yes" if fail_once else "no",
            hivmc="hivmc-a5" if real_name.endswith("-a5") else "hivmc",
        )
    )
    exe.chmod(0o755)
    link = tmp_path / f"{real_name}.dir"
    link.mkdir()
    (link / "bishengir-compile").symlink_to(
        exe
    )  # as compiler_dir() presents every target's compiler
    return link / "bishengir-compile", folder / "calls.jsonl"


def _calls(log):
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_the_950s_compiler_runs_once_where_it_reaches_hivmc(ascend_hivm, tmp_path):
    exe, log = _compiler(tmp_path, "bishengir-compile-a5")
    res = ascend_hivm.run(
        [str(exe), "kernel.ttadapter.mlir", "--target=Ascend910_9599"], "module {}", tmp_path / "w"
    )
    assert res.ok and res.single_attempt
    assert [ascend_hivm.SINGLE_ATTEMPT in c for c in _calls(log)] == [True]
    assert ascend_hivm.SINGLE_ATTEMPT not in res.command  # the report shows triton-ascend's command


def test_any_other_outcome_is_triton_ascends_own_command(ascend_hivm, tmp_path):
    exe, log = _compiler(tmp_path, "bishengir-compile-a5", fail_once=True)
    res = ascend_hivm.run(
        [str(exe), "kernel.ttadapter.mlir", "--target=Ascend910_9599"], "module {}", tmp_path / "w"
    )
    assert res.ok and not res.single_attempt  # decided by the full command, which passed
    assert [ascend_hivm.SINGLE_ATTEMPT in c for c in _calls(log)] == [True, False]


def test_the_910bs_compiler_runs_its_own_command(ascend_hivm, tmp_path):
    exe, log = _compiler(tmp_path, "bishengir-compile")
    res = ascend_hivm.run(
        [str(exe), "kernel.ttadapter.mlir", "--target=Ascend910B2"], "module {}", tmp_path / "w"
    )
    assert res.ok and not res.single_attempt
    assert [ascend_hivm.SINGLE_ATTEMPT in c for c in _calls(log)] == [False]
