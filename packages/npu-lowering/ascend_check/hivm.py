"""Stage 2 of the Ascend check: linalg -> HIVM with bishengir (ascendnpu-ir), as triton-ascend does it.

Imported by check.py in the triton-ascend venv (setup.py installs ``ascendnpu-ir``, which ships
``bishengir-compile`` for 910B/910_93 and ``bishengir-compile-a5`` for the 950 family).

- ``derive_command``: the bishengir command line triton-ascend 3.2 itself builds for a kernel
  and target. Its own ``linalg_to_bin_enable_npu_compile_A2_A3`` / ``..._910_95`` run with the
  kernel's metadata; the only thing intercepted is the ``subprocess.run`` that would start the
  compiler, which records the command and stops. What that function reads from a device (the
  SoC name, ``NPUUtils().get_arch()``; the compiler, ``bishengir-compile`` on $PATH) is given
  to it: the target's SoC and a folder holding the target's compiler under that name.
- ``run``: that command plus ``--save-temps=DIR``. bishengir writes the final HIVM module
  (``module.hivm.opt.mlir``) and then needs ``hivmc`` (CANN's machine-code step, absent here):
  "External hivmc run fails" is the expected end. Any other ``error:`` is a failure.
- ``ub_layout``: the UB bytes the HIVM module planned. Each UB buffer is a
  ``hivm.hir.pointer_cast(<offsets>) : memref<shape x type, #hivm.address_space<ub>>`` at
  constant offsets (several with multi-buffering); the footprint is max(offset + size).
- ``ub_overflow``: "ub overflow, requires N bits while M bits available" when planning failed.
  bishengir then retries without code motion and multi-buffer ("[NOTE] Ub overflow detected;
  automatically set enable-auto-multi-buffer to false"): ``retried`` records that the config
  did not fit with the multi-buffer setting it was compiled with.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HIVM_FILE = "module.hivm.opt.mlir"
# how a run that got as far as hivmc ends here: 910B's bishengir-compile reports an error
# "External hivmc run fails"; the 950's bishengir-compile-a5 only "Cannot find hivmc-a5"
HIVMC_MISSING = "External hivmc run fails"
HIVMC_NOT_FOUND = re.compile(r"Cannot find hivmc(?:-a5)? under \$PATH")
TIMEOUT_S = 120
# A run that times out is tried once more, alone (no other bishengir of this check runs
# meanwhile) and with this longer limit, before it counts as a failure: on a loaded 2-core
# machine a slow compile is the machine's, not the kernel's.
RETRY_TIMEOUT_S = 600


class _Exclusive:
    """Many runs at once, or one retry alone (a readers-writer lock over bishengir runs)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running = 0
        self._alone = False

    def shared(self):
        return self._Hold(self, alone=False)

    def alone(self):
        return self._Hold(self, alone=True)

    class _Hold:
        def __init__(self, lock, alone):
            self.lock, self.alone = lock, alone

        def __enter__(self):
            lk = self.lock
            with lk._cond:
                lk._cond.wait_for(lambda: not lk._alone and (not self.alone or lk._running == 0))
                if self.alone:
                    lk._alone = True
                else:
                    lk._running += 1

        def __exit__(self, *exc):
            lk = self.lock
            with lk._cond:
                if self.alone:
                    lk._alone = False
                else:
                    lk._running -= 1
                lk._cond.notify_all()


_RUNS = _Exclusive()


def exclusive():
    """Hold while nothing else of this check compiles (a retry after a timeout)."""
    return _RUNS.alone()


@dataclass(frozen=True)
class Target:
    """One SoC the check compiles for."""

    name: str  # short name in the report: "910B2", "950"
    arch: str  # GPUTarget arch / bishengir --target
    compiler: str  # the ascendnpu-ir binary
    compile_on_910_95: bool  # triton-ascend's front end and NPUOptions defaults for the 950 family

    def front_end_options(self) -> dict:
        """NPUOptions a triton-ascend built for this SoC has by default. The 3.2.0 wheel is the
        A2/A3 build (``is_compile_on_910_95 = False``); a 950 build sets it True, and with it
        ``multibuffer``/``enable_auto_bind_sub_block`` off and ``enable_select_analysis`` on
        (NPUOptions' field defaults are written in terms of that flag)."""
        if not self.compile_on_910_95:
            return {}
        return {
            "compile_on_910_95": True,
            "multibuffer": False,
            "enable_auto_bind_sub_block": False,
            "enable_select_analysis": True,
        }


TARGETS = {
    "910B2": Target("910B2", "Ascend910B2", "bishengir-compile", False),
    # Ascend910_9599 is the 950 SoC triton-ascend 3.2 lists (utils.py's valid arches);
    # bishengir-compile-a5 knows it by that name too
    "950": Target("950", "Ascend910_9599", "bishengir-compile-a5", True),
}


def bin_dir() -> Path:
    import ascendnpuir

    return Path(ascendnpuir.__file__).resolve().parent / "bin"


@functools.cache
def compiler_dir(target: Target) -> Path:
    """A folder with the target's compiler as ``bishengir-compile``: what triton-ascend looks
    up on $PATH (and it adds the HFusion/HIVM flags only for a binary of that name), as a CANN
    install for that SoC provides it."""
    exe = bin_dir() / target.compiler
    if not os.access(exe, os.X_OK):
        raise SystemExit(f"ascend_check: {exe} missing (is ascendnpu-ir installed in this venv?)")
    d = Path(tempfile.mkdtemp(prefix=f"npu-ascend-check-{target.name}-"))
    atexit.register(shutil.rmtree, d, True)  # one per process and SoC: gone when it ends
    (d / "bishengir-compile").symlink_to(exe)
    return d


class _Captured(Exception):
    def __init__(self, cmd):
        self.cmd = list(cmd)


class _CaptureRun:
    """Stands in for the ``subprocess`` module inside triton-ascend's compiler while it builds
    a command: ``run`` of the compiler is recorded, anything else (``--help`` probes) runs."""

    def __init__(self, compiler: Path):
        self._compiler = str(compiler)

    def __getattr__(self, name):
        return getattr(subprocess, name)

    def run(self, cmd, *args, **kwargs):
        if cmd and str(cmd[0]) == self._compiler:
            raise _Captured(cmd)
        return subprocess.run(cmd, *args, **kwargs)


_PROBES: dict = {}


def _probe(fn, path: str) -> bool:
    """triton-ascend asks bishengir ``--help`` per compile (``_check_bishengir_api_change``,
    ``_check_bishengir_is_regbased``); the answer is per binary, so it is asked once here."""
    key = (fn.__name__, path)
    if key not in _PROBES:
        _PROBES[key] = fn()
    return _PROBES[key]


def derive_command(linalg: str, metadata: dict, options, target: Target) -> list[str]:
    """The bishengir command triton-ascend 3.2 builds for this kernel's linalg on ``target``."""
    from triton.backends.ascend import compiler as ascend

    cdir = compiler_dir(target)
    compiler = cdir / "bishengir-compile"
    saved = {
        k: getattr(ascend, k)
        for k in (
            "subprocess",
            "NPUUtils",
            "_check_bishengir_api_change",
            "_check_bishengir_is_regbased",
        )
    }
    old_path = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{cdir}{os.pathsep}{old_path}"

    class _Arch:  # NPUUtils().get_arch() asks the device; the target is the SoC
        def get_arch(self):
            return target.arch

    try:
        ascend.subprocess = _CaptureRun(compiler)
        ascend.NPUUtils = _Arch
        for fn in ("_check_bishengir_api_change", "_check_bishengir_is_regbased"):
            setattr(ascend, fn, functools.partial(_probe, saved[fn], str(compiler)))
        step = (
            ascend.linalg_to_bin_enable_npu_compile_910_95
            if options.compile_on_910_95
            else ascend.linalg_to_bin_enable_npu_compile_A2_A3
        )
        try:
            step(linalg, dict(metadata), options)
        except _Captured as c:
            return c.cmd
        raise RuntimeError("triton-ascend's linalg_to_bin did not start bishengir")
    finally:
        for k, v in saved.items():
            setattr(ascend, k, v)
        os.environ["PATH"] = old_path


@dataclass
class HivmResult:
    ok: bool
    seconds: float
    command: list = field(default_factory=list)
    error: str = ""
    ub_bytes: int | None = None  # planned UB footprint (from the HIVM module)
    ub_available_bytes: int | None = None
    ub_required_bytes: int | None = None  # from an overflow message
    retried_without_multibuffer: bool = False
    retried_after_timeout: bool = (
        False  # the first run passed TIMEOUT_S; this is the retry's result
    )
    cpu_seconds: float = 0.0  # user + system time of bishengir itself (wall time depends on load)
    single_attempt: bool = False  # the 950's compiler ran once (SINGLE_ATTEMPT), not five times
    dma: dict | None = None  # GM <-> on-chip DMA bytes of a block (work_ir.hivm_dma)


def _run_timed(args: list[str], cwd: Path, timeout: float | None = None) -> tuple[int, str, float]:
    """Run, returning (exit status, stdout + stderr, the child's CPU seconds)."""
    timeout = TIMEOUT_S if timeout is None else timeout
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=cwd)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise subprocess.TimeoutExpired(args, timeout)
            time.sleep(0.01)
        proc.returncode = os.waitstatus_to_exitcode(status)
        log.seek(0)
        return (
            proc.returncode,
            log.read().decode("utf-8", "replace"),
            usage.ru_utime + usage.ru_stime,
        )


OVERFLOW = re.compile(r"ub overflow, requires (\d+) bits while (\d+) bits available")
RETRY_MB = "automatically set enable-auto-multi-buffer to false"
ERROR_LINE = re.compile(r"error: (.*)")


# bishengir-compile-a5 (the 950's) treats the missing hivmc-a5 as a failed attempt and runs its
# whole pipeline again, five times in all, to the same HIVM module; with --enable-tuning-mode it
# stops after one. A single attempt that reaches hivmc is the result; any other outcome (an
# overflow, an error) is decided by triton-ascend's own command, retries included.
SINGLE_ATTEMPT = "--enable-tuning-mode"


def run(cmd: list[str], linalg: str, workdir: Path) -> HivmResult:
    """Run a derived bishengir command on ``linalg`` in ``workdir`` (its input and temps)."""
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / "kernel.ttadapter.mlir"
    src.write_text(linalg)
    # triton-ascend's own temp paths are replaced by ours: input, output, and the temps folder
    args = [str(src) if a.endswith("kernel.ttadapter.mlir") else a for a in cmd]
    if "-o" in args:
        args[args.index("-o") + 1] = str(workdir / "kernel")
    args.append(f"--save-temps={workdir}")
    if Path(args[0]).resolve().name.endswith("-a5"):
        once = _attempt([*args, SINGLE_ATTEMPT], workdir)
        if once.ok:
            once.command, once.single_attempt = args, True
            return once
        (workdir / HIVM_FILE).unlink(missing_ok=True)
    return _attempt(args, workdir)


def _attempt(args: list[str], workdir: Path) -> HivmResult:
    t0 = time.monotonic()
    retried = False
    try:
        with _RUNS.shared():
            returncode, out, cpu = _run_timed(args, workdir)
    except subprocess.TimeoutExpired:
        retried = True
        try:
            with _RUNS.alone():
                returncode, out, cpu = _run_timed(args, workdir, RETRY_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return HivmResult(
                False,
                round(time.monotonic() - t0, 3),
                args,
                f"bishengir timed out after {TIMEOUT_S}s, and again alone after {RETRY_TIMEOUT_S}s",
                retried_after_timeout=True,
            )
    res = HivmResult(
        False,
        round(time.monotonic() - t0, 3),
        args,
        cpu_seconds=round(cpu, 3),
        retried_after_timeout=retried,
    )
    res.retried_without_multibuffer = RETRY_MB in out
    m = OVERFLOW.search(out)
    if m:
        res.ub_required_bytes, res.ub_available_bytes = int(m.group(1)) // 8, int(m.group(2)) // 8
    errors = [e.strip() for e in ERROR_LINE.findall(out)]
    others = [e for e in errors if HIVMC_MISSING not in e]
    hivm = workdir / HIVM_FILE
    if hivm.exists():
        text = hivm.read_text(errors="replace")
        res.ub_bytes = ub_layout(text)
        res.ub_available_bytes = res.ub_available_bytes or ub_size(text)
        res.dma = _dma(text)
    if others or m:
        res.error = "; ".join(dict.fromkeys(others)) or m.group(0)
    elif not hivm.exists():
        res.error = f"no {HIVM_FILE} written (exit {returncode}): " + out.strip()[-1500:]
    elif returncode and HIVMC_MISSING not in out and not HIVMC_NOT_FOUND.search(out):
        res.error = f"bishengir exited {returncode}: " + out.strip()[-1500:]
    else:
        res.ok = True
    return res


# `%c8192_i64 = arith.constant 8192 : i64` / `%2 = llvm.mlir.constant(8192 : i64) : i64`
_CONST = re.compile(
    r"(%[\w.$-]+)\s*=\s*(?:arith\.constant\s+(-?\d+)\s*:\s*i\d+|llvm\.mlir\.constant\((-?\d+)\s*:\s*i\d+\))"
)
_CAST = re.compile(
    r"hivm\.hir\.pointer_cast\(([^)]*)\)[^:]*:\s*memref<(?:(\d+(?:x\d+)*)x)?([a-z]\w*)[^#]*#hivm\.address_space<ub>>"
)
_ELEM_BITS = re.compile(r"^[a-z]+(\d+)$")


def _elem_bits(ty: str) -> int:
    m = _ELEM_BITS.match(ty)
    return int(m.group(1)) if m else 32


def ub_layout(hivm_text: str) -> int:
    """Bytes of UB the module planned: max(offset + buffer size) over its UB pointer casts."""
    consts: dict[str, int] = {}
    end = 0
    for line in hivm_text.splitlines():
        if "func.func" in line:
            consts = {}
        for m in _CONST.finditer(line):
            consts[m.group(1)] = int(m.group(2) if m.group(2) is not None else m.group(3))
        m = _CAST.search(line)
        if not m:
            if "hivm.hir.pointer_cast" in line and "address_space<ub>" in line:
                raise ValueError(f"UB buffer not understood: {line.strip()}")
            continue
        numel = 1
        for d in (m.group(2) or "").split("x"):
            numel *= int(d) if d else 1
        size = -(-numel * _elem_bits(m.group(3)) // 8)  # i1 masks are bits (rows padded to 256)
        for off in (o.strip() for o in m.group(1).split(",") if o.strip()):
            if off not in consts:
                raise ValueError(f"UB buffer at a non-constant offset {off}: {line.strip()}")
            end = max(end, consts[off] + size)
    return end


def _dma(hivm_text: str) -> dict | None:
    try:
        import work_ir  # beside this file (check.py puts the folder on sys.path)

        return work_ir.hivm_dma(hivm_text)
    except Exception:  # noqa: BLE001 - a report, never a reason to fail the config
        return None


def ub_size(hivm_text: str) -> int | None:
    m = re.search(r'"UB_SIZE",\s*(\d+)', hivm_text)
    return int(m.group(1)) // 8 if m else None


def once_more_on_a_signal(run):
    """``run()``, a compiler step run as a process, once more if the process died by a signal:
    triton-adapter-opt once crashed (-11) on a 950 front end with the machine loaded and lowered
    the same kernel alone. A crash that repeats, or any exit with a status, is the verdict."""
    try:
        return run()
    except subprocess.CalledProcessError as e:
        if e.returncode >= 0:
            raise
    return run()
