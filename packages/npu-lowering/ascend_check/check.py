"""Ascend validity check: lower saved npu kernels TTIR -> linalg with triton-ascend's front end.

Run it with the triton-ascend venv's Python (``setup.py`` creates it)::

    .venv-ascend/bin/python packages/npu-lowering/ascend_check/check.py KERNEL_DIR_OR_FILE... \
        [--json report.json] [--configs all|first] [--arch Ascend910B2]

Input: kernel modules saved by npu-lowering ($NPU_LOWERING_SAVE_KERNELS=<dir> writes
``<dir>/npu_kernel_<hash>.py``). For each module:

1. load: execute it the way Ascend would import it. Its decorator is npu-lowering's own
   heuristics (``npu_lowering.runtime.heuristics``, imported from this checkout's
   ``src/``) evaluated under the "ascend" flavour (triton-ascend is installed here, so
   ``libdevice`` is triton-ascend's overlaid on the portable one); the only thing replaced
   is Inductor's ``cached_autotune``, which here records the configs, triton_meta and the
   ``@triton.jit`` function instead of building an autotuner.
2. ttir: for each checked config (all configs the heuristics produce, or only the first
   with ``--configs first``), generate Triton IR from the kernel's AST with the kernel's
   signature, its constants plus the config's block sizes as constexprs, its
   ``tt.divisibility`` hints, ``num_warps``/``num_stages`` from the config, for the target
   ``GPUTarget("npu", <arch>, 0)``, and run triton-ascend's ``make_ttir`` passes.
3. linalg: triton-ascend's ``ttir_to_linalg`` (the ``triton-adapter-opt`` binary shipped in
   the wheel, with the pass pipeline and options its NPU backend uses), then a sanity check
   that the output is a ``func.func`` module with no ``tt.`` operations left; then HIVM with
   bishengir-compile per target (``hivm.py``). One line per kernel and config; exit status 0
   when every config of every kernel passed, 1 when any failed, 2 when no kernel was found.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import contextlib
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import types
import warnings
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import hivm  # noqa: E402  (stage 2: linalg -> HIVM with bishengir)
import kernel_files  # noqa: E402  (the kernel files to check, followed while pytest runs)
import run_report  # noqa: E402  (the per-config lines, the JSON report, the summary)
from ub_report import (  # noqa: E402  (our UB estimates and the UB report)
    body_estimates,
    ub_below,
    ub_estimate,
    ub_model_of,
    ub_profile_of,
)
import work_ir  # noqa: E402  (GM bytes and vector work read from the IR)
import work_report  # noqa: E402  (those against the cost model's work record)

SRC = HERE.parent / "src"  # npu-lowering's source in this checkout
CORE_SRC = HERE.parents[1] / "npu-inductor-core" / "src"  # npu-inductor-core's, which it imports
DEFAULT_ARCH = "Ascend910B2"
TIMEOUT_S = 120  # per config (AST -> TTIR -> linalg)
# an operation of the Triton dialect at the start of a statement: `%x = tt.load`, `tt.store`, `"tt.foo"(`
TT_OP = re.compile(r'^\s*(?:%[\w#:, %]+=\s*)?"?(tt\.\w+)', re.MULTILINE)


@dataclass
class Captured:
    """What the kernel's heuristics decorator computed."""

    fn: object
    configs: list
    triton_meta: dict
    heuristic: str
    inductor_meta: dict = field(default_factory=dict)
    size_hints: dict = field(default_factory=dict)


@dataclass
class ConfigResult:
    index: int
    kwargs: dict
    num_warps: int | None
    ok: bool
    stage: str  # "ttir" | "linalg" | "done"
    error: str = ""
    seconds: float = 0.0
    # what triton-ascend's linalg -> binary step would put on the CompiledKernel (its
    # _parse_linalg_metadata, pure Python over the linalg text): the fields a launcher reads
    launch: dict = field(default_factory=dict)
    num_stages: int | None = None
    ub_ours: int | None = None  # npu-lowering's UB estimate (bytes)
    ub_body: dict = field(default_factory=dict)  # npu_inductor_core.ub_model's, per SoC family
    ub_apart: dict = field(
        default_factory=dict
    )  # its buffers each at its own address (ub_model.apart)
    # the body model's buffer bytes by class at each statement where the peak may fall, as
    # profiled here (with triton-ascend's Triton, as on Ascend): what the calibration fits
    ub_classes: list = field(default_factory=list)
    # per target ("910B2", "950"): front end + bishengir outcome, UB bytes bishengir planned
    targets: dict = field(default_factory=dict)
    futures: dict = field(default_factory=dict)
    dropped: bool = False  # a UB overflow, dropped from the candidates (--ub-overflow drop)
    work: dict = field(default_factory=dict)  # work_report: IR's bytes per block vs the record's

    @property
    def xfails(self) -> list[str]:
        return [k for k, t in self.targets.items() if t.get("xfail")]


@dataclass
class KernelResult:
    name: str
    path: str
    heuristic: str = ""
    ok: bool = False
    stage: str = "load"  # "load" when the module itself failed
    error: str = ""
    configs_total: int = 0
    configs: list = field(default_factory=list)
    ub_model: dict = field(default_factory=dict)


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _deadline(seconds: int):
    def fire(signum, frame):
        raise _Timeout(f"timed out after {seconds}s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _setup_imports():
    """Import triton-ascend and npu-lowering's runtime; fail loudly in the wrong venv."""
    warnings.filterwarnings("ignore")
    for src in (CORE_SRC, SRC):
        if str(src) not in sys.path:
            sys.path.insert(0, str(src))
    from importlib import metadata

    try:
        version = metadata.version("triton-ascend")
    except metadata.PackageNotFoundError:
        raise SystemExit(
            "ascend_check: triton-ascend is not installed in this Python "
            f"({sys.executable}); run it with the venv that setup.py creates"
        ) from None
    from torch._inductor.runtime import triton_heuristics as upstream

    from npu_lowering.runtime import heuristics
    from npu_lowering.runtime.flavour import flavour

    if flavour() != "ascend":
        raise SystemExit(
            f"ascend_check: npu_lowering resolves flavour {flavour()!r}, expected 'ascend'"
        )

    def capture(
        size_hints, configs, triton_meta, heuristic_type, filename=None, inductor_meta=None, **_
    ):
        def decorate(fn):
            return Captured(
                fn,
                list(configs or ()),
                dict(triton_meta or {}),
                str(getattr(heuristic_type, "name", heuristic_type)),
                dict(inductor_meta or {}),
                dict(size_hints or {}),
            )

        return decorate

    # the only replacement: record what the decorator built instead of making an autotuner
    heuristics.cached_autotune = capture
    upstream.cached_autotune = capture
    return version


def load_kernel(path: Path) -> Captured:
    name = path.stem
    mod = types.ModuleType(name)
    mod.__file__ = str(path)
    code = compile(path.read_text(), str(path), "exec")
    sys.modules[name] = mod  # triton's JIT looks functions' globals up through their module
    try:
        exec(code, mod.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    kernels = [v for v in vars(mod).values() if isinstance(v, Captured)]
    if len(kernels) != 1:
        raise RuntimeError(f"expected one decorated kernel in {path.name}, found {len(kernels)}")
    return kernels[0]


def _divisible_indices(triton_meta: dict) -> list[int]:
    """Argument indices carrying tt.divisibility=16 in Inductor's triton_meta['configs']."""
    out = set()
    for cfg in triton_meta.get("configs") or ():
        if isinstance(cfg, dict):
            for key, props in cfg.items():
                idx = key[0] if isinstance(key, tuple) else key
                if any(list(p)[:2] == ["tt.divisibility", 16] for p in props):
                    out.add(int(idx))
        else:  # an AttrsDescriptor-like object (older Inductor)
            out.update(getattr(cfg, "divisibility_16", ()) or ())
    return sorted(out)


def kernel_arch(cap: Captured, default: str | None) -> str:
    """The SoC the kernel was generated for (triton_meta's device), unless overridden."""
    return default or getattr(cap.triton_meta.get("device"), "cc", None) or DEFAULT_ARCH


LAUNCH_FIELDS = ("name", "kernel_name", "mix_mode", "parallel_mode", "shared", "tensor_kinds")


def launch_metadata(linalg: str, arch: str) -> dict:
    """The launch fields triton-ascend derives from the linalg module before compiling it."""
    from triton.backends.ascend import compiler as ascend

    _, md = ascend._parse_linalg_metadata(linalg, {})
    return {**{k: md[k] for k in LAUNCH_FIELDS if k in md}, "arch": arch}


def _lower(
    cap: Captured,
    config,
    arch: str,
    on_stage=lambda stage: None,
    target_options: dict | None = None,
    on_ttir=lambda text: None,
):
    """AST -> TTIR -> linalg for one config; returns the linalg module's text, the compile
    metadata and the NPUOptions (what triton-ascend's linalg -> binary step reads)."""
    from triton._C.libtriton import ir
    from triton.backends.ascend import compiler as ascend
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, make_backend

    meta = cap.triton_meta
    sig = meta.get("signature", {})
    constexpr_names = [k for k, v in sig.items() if v == "constexpr"]
    signature = {k: v for k, v in sig.items() if v != "constexpr"}
    constants = {str(k): v for k, v in (meta.get("constants") or {}).items()}

    target = GPUTarget("npu", arch, 0)
    backend = make_backend(target)
    option_fields = set(ascend.NPUOptions.__dataclass_fields__)
    opts = {
        "num_warps": getattr(config, "num_warps", 1) or 1,
        "num_stages": getattr(config, "num_stages", 1) or 1,
        **(target_options or {}),
    }
    from npu_inductor_core import tiles

    opts.update(tiles.compile_options(config))  # what the compile path passes (runtime/ub_fit.py)
    if "enable_fp_fusion" in meta:
        opts["enable_fp_fusion"] = bool(meta["enable_fp_fusion"])
    for k, v in dict(getattr(config, "kwargs", {})).items():
        if k in sig:
            constants[k] = v
        elif k in option_fields:  # e.g. multibuffer: a compile option, not a kernel argument
            opts[k] = v
        else:
            raise RuntimeError(
                f"config sets {k}={v!r}, neither a kernel argument nor an NPU option"
            )
    missing = [k for k in constexpr_names if k not in constants]
    if missing:
        raise RuntimeError(f"constexpr arguments without a value: {missing}")
    options = backend.parse_options(opts)

    attrs = backend.get_attrs_descriptor(None, None)
    attrs.arg_properties["tt.divisibility"] = _divisible_indices(meta)
    attrs.arg_properties["tt.equal_to"] = []
    attrs._init_slots()

    src = ASTSource(cap.fn, signature, constants, attrs)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    metadata = {"hash": src.hash(), "target": target, **options.__dict__}
    try:
        mod = src.make_ir(
            options, backend.get_codegen_implementation(), backend.get_module_map(), context
        )
        mod = ascend.make_ttir(mod, metadata, options)
        on_ttir(str(mod))
        on_stage("linalg")
        try:
            linalg = hivm.once_more_on_a_signal(
                lambda: ascend.ttir_to_linalg(mod, metadata, options, named_ops=True)
            )
        except subprocess.CalledProcessError as e:
            err = (e.stderr or b"").decode("utf-8", "replace")
            err = re.split(
                r"^(?:PLEASE submit a bug report|Stack dump:)", err, maxsplit=1, flags=re.M
            )[0].strip() or str(e)
            raise RuntimeError(f"triton-adapter-opt exited {e.returncode}: {err}") from None
    finally:
        context.disable_multithreading()
    if not re.search(r"func\.func\s+@", linalg):
        raise RuntimeError("triton-adapter-opt produced no func.func")
    left = sorted(set(TT_OP.findall(linalg)))
    if left:
        raise RuntimeError(f"Triton ops left after lowering to linalg: {', '.join(left)}")
    return linalg, metadata, options


@contextlib.contextmanager
def _front_end_for(target):
    """triton-ascend's language modules branch on a build-time ``is_compile_on_910_95`` (fp8 /
    fp64 casts): for the 950 the front end runs as a 950 build of triton-ascend would."""
    if target is None or not target.compile_on_910_95:
        yield
        return
    mods = [
        m
        for name, m in list(sys.modules.items())
        if name.startswith("triton") and isinstance(getattr(m, "is_compile_on_910_95", None), bool)
    ]
    saved = [(m, m.is_compile_on_910_95) for m in mods]
    try:
        for m in mods:
            m.is_compile_on_910_95 = True
        yield
    finally:
        for m, v in saved:
            m.is_compile_on_910_95 = v


def _same_front_end(target, t_arch: str, own_arch: str) -> bool:
    """Whether a target's front end is stage 1's: the same SoC and no options of its own (the
    910B2 target for a kernel generated for the 910B2). Its lowering is then stage 1's output,
    not computed again: the front end is deterministic in (kernel, config, arch, options)."""
    return t_arch == own_arch and not target.front_end_options() and not target.compile_on_910_95


def _front_end(cap, config, arch, target, printed):
    """(linalg, metadata, options) or raises; stage recorded in ``state['stage']``."""
    state = {"stage": "ttir"}
    opts = target.front_end_options() if target is not None else {}

    def lower(seconds):
        with _deadline(seconds), contextlib.redirect_stdout(printed), _front_end_for(target):
            return (
                *_lower(
                    cap,
                    config,
                    arch,
                    on_stage=lambda stage: state.__setitem__("stage", stage),
                    target_options=opts,
                    on_ttir=lambda text: state.__setitem__("ttir", text),
                ),
                state,
            )

    try:
        try:
            return lower(TIMEOUT_S)
        except _Timeout:
            # a slow machine, not a bad kernel: once more, alone and with a longer limit
            state["stage"] = "ttir"
            with hivm.exclusive():
                return lower(hivm.RETRY_TIMEOUT_S)
    except BaseException as e:
        e.stage = state["stage"]
        raise


def check_kernel(
    path: Path,
    arch: str,
    which: str,
    dump: Path | None,
    targets=(),
    pool=None,
    workroot: Path | None = None,
    only_config: dict | None = None,
) -> KernelResult:
    """Load the kernel and lower every chosen config; with ``targets`` (hivm.Target) also run
    each config's front end for each target and submit its bishengir run to ``pool`` (the
    futures are in ``ConfigResult.hivm``; ``finish_kernel`` collects them)."""
    res = KernelResult(name=path.stem, path=str(path))
    try:
        source = path.read_text()  # (the UB model and the work report read it)
        with _deadline(TIMEOUT_S):
            cap = load_kernel(path)
    except BaseException as e:  # noqa: BLE001 - any failure is the kernel's
        if isinstance(e, KeyboardInterrupt):
            raise
        res.error = _short(e)
        return res
    res.heuristic = cap.heuristic
    if (
        only_config is not None
    ):  # one given config instead of the heuristics' (a compile stand-in's)
        from triton import Config

        cap.configs = [
            Config(
                dict(only_config["kwargs"]),
                num_warps=1,
                num_stages=only_config.get("num_stages", 1),
            )
        ]
    res.configs_total = len(cap.configs)
    res.ub_model = ub_model_of(cap)
    body_profile = ub_profile_of(source, cap, res.name, res.ub_model)
    if not cap.configs:
        res.error = "the heuristics produced no config"
        return res
    chosen = cap.configs if which == "all" else cap.configs[:1]
    for i, config in enumerate(chosen):
        t0 = time.monotonic()
        cr = ConfigResult(
            index=i,
            kwargs=dict(config.kwargs),
            num_warps=getattr(config, "num_warps", None),
            ok=False,
            stage="ttir",
        )
        cr.num_stages = getattr(config, "num_stages", None)
        cr.ub_ours = ub_estimate(cap, config)
        if body_profile is not None:
            cr.ub_body, cr.ub_apart, cr.ub_classes = body_estimates(body_profile, config)
        # stage 1 for the kernel's own SoC (as before), then per target: front end + bishengir
        own_arch = kernel_arch(cap, arch)
        runs = [(None, own_arch)] + [(t, t.arch) for t in targets]
        own = None  # stage 1's (linalg, metadata, options): a target with the same front end reuses it
        for target, t_arch in runs:
            printed = io.StringIO()
            key = target.name if target is not None else None
            try:
                if (
                    target is not None
                    and own is not None
                    and _same_front_end(target, t_arch, own_arch)
                ):
                    linalg, metadata, options = own
                else:
                    linalg, metadata, options, fe = _front_end(cap, config, t_arch, target, printed)
                if target is None:
                    own = (linalg, metadata, options)
                    cr.work = _work(cap, config, source, fe.get("ttir", ""))
                    cr.launch = launch_metadata(linalg, t_arch)
                    if dump is not None:
                        dump.mkdir(parents=True, exist_ok=True)
                        (dump / f"{path.stem}.cfg{i}.linalg.mlir").write_text(linalg)
                else:
                    cmd = hivm.derive_command(linalg, metadata, options, target)
                    work = workroot / f"{path.stem}.cfg{i}.{target.name}"
                    cr.targets[key] = {
                        "stage": "hivm",
                        "ok": False,
                        "arch": t_arch,
                        "multibuffer": metadata.get("multibuffer"),
                        "enable_auto_bind_sub_block": metadata.get("enable_auto_bind_sub_block"),
                    }
                    cr.futures[key], first = _hivm_run(
                        pool, cmd, linalg, work, path.stem, f"{path.stem} cfg{i}"
                    )
                    if first != f"{path.stem} cfg{i}":
                        cr.targets[key]["same_run_as"] = first
            except BaseException as e:  # noqa: BLE001
                if isinstance(e, KeyboardInterrupt):
                    raise
                err = _short(e)
                if (
                    printed.getvalue().strip()
                ):  # triton's static_print output explains some failures
                    err += "\n[printed while compiling] " + printed.getvalue().strip()[:2000]
                stage = getattr(e, "stage", "hivm")
                if target is None:
                    cr.error, cr.stage = err, stage
                    break  # the kernel's own front end failed: no target can do better
                cr.targets[key] = {"stage": stage, "ok": False, "arch": t_arch, "error": err}
            else:
                if target is None:
                    cr.stage = "done"
        cr.seconds = round(time.monotonic() - t0, 3)
        res.configs.append(cr)
    return res


# (compiler, flags, linalg) with the kernel's name taken out -> (bishengir's future, whose run)
_HIVM_RUNS: dict = {}


def _hivm_run(pool, cmd: list[str], linalg: str, work: Path, kernel: str, who: str):
    """bishengir's run of one config for one target, once per distinct input: kernels the suite
    generated twice under two names (the same body from two tests) lower to the same linalg
    and command but for the name, and bishengir's result is then the same; the second one
    shares the first one's run. Returns the future and ``who`` of the run it got (its report
    says ``same_run_as`` and counts the run's seconds once)."""
    flags = tuple(
        a.replace(kernel, "@") for a in cmd[1:] if not a.startswith("/")
    )  # paths are per run
    key = (cmd[0], flags, hashlib.sha256(linalg.replace(kernel, "@").encode()).hexdigest())
    if key not in _HIVM_RUNS:
        _HIVM_RUNS[key] = (pool.submit(hivm.run, cmd, linalg, work), who)
    return _HIVM_RUNS[key]


# failures of Ascend's compiler itself, known and reported (an "xfail" per config, counted on
# the summary line and in the report), which do not fail the run: (target, error pattern, why)
KNOWN_FAILURES = (
    (
        "950",
        re.compile(
            r"failed to legalize operation 'linalg\.reduce' that was explicitly marked illegal"
        ),
        "bishengir-compile-a5 (ascendnpu-ir 1.2.0) cannot lower a reduce with index (argmax/argmin: "
        "a two-operand linalg.reduce) for the 950; the 910B's bishengir-compile does",
    ),
)


def _known_failure(target: str, error: str) -> str | None:
    return next(
        (why for t, pattern, why in KNOWN_FAILURES if t == target and pattern.search(error or "")),
        None,
    )


def finish_kernel(res: KernelResult, ub_overflow: str = "fail") -> KernelResult:
    """Collect the bishengir results of a kernel's configs and decide its verdict. With
    ``ub_overflow="drop"`` a config bishengir rejects only for the UB counts as dropped (as the
    compile path on Ascend drops it, runtime/ub_fit.py), and the kernel fails only when no
    config is left."""
    for cr in res.configs:
        for key, fut in cr.futures.items():
            h = fut.result()
            t = cr.targets[key]
            t.update(
                ok=h.ok,
                seconds=h.seconds,
                cpu_seconds=h.cpu_seconds,
                ub_bytes=h.ub_bytes,
                ub_available_bytes=h.ub_available_bytes,
                ub_required_bytes=h.ub_required_bytes,
                retried_without_multibuffer=h.retried_without_multibuffer,
                single_attempt=h.single_attempt,
                command=" ".join(h.command[1:]),
            )
            if h.dma:
                t["dma"] = h.dma
                cr.work.setdefault("hivm_dma_bytes_per_block", {})[key] = h.dma["bytes"]
            if h.ok:
                t["stage"] = "done"
            else:
                t["error"] = h.error
                t["xfail"] = _known_failure(key, h.error)
        cr.futures = {}
        bad = [(k, t) for k, t in cr.targets.items() if not t["ok"] and not t.get("xfail")]
        if cr.stage == "done" and bad:
            key, t = bad[0]
            cr.stage, cr.error = f"{key}:{t['stage']}", t.get("error", "")
        cr.ok = cr.stage == "done"
        cr.dropped = (
            not cr.ok
            and ub_overflow == "drop"
            and cr.stage.endswith(":hivm")
            and bool(bad)
            and all(
                t.get("ub_required_bytes") and "ub overflow" in t.get("error", "") for _, t in bad
            )
        )
    kept = [c for c in res.configs if not getattr(c, "dropped", False)]
    res.ok = bool(kept) and all(c.ok for c in kept)
    if res.configs:
        res.stage = "done" if res.ok else next((c.stage for c in kept if not c.ok), "hivm")
    if not res.ok and res.configs:
        res.error = next(
            (c.error for c in kept if not c.ok), None
        ) or "every config overflows the UB: " + next(c.error for c in res.configs if not c.ok)
    return res


def _work(cap, config, source: str, ttir: str) -> dict:
    """The config's work per block from its TTIR beside the codegen record's (work_report);
    ``source`` is the kernel module's text."""
    try:
        w = work_ir.ttir_work(ttir)
        return {
            "ttir_gm_bytes_per_block": w["gm_bytes"],
            "ttir_gm_bytes_per_program": w["gm_bytes_outside_loops"],
            "ttir_vector": w["vector"],
            "ttir_dynamic_loops": w["dynamic_loops"],
            **work_report.record_per_block(
                cap.inductor_meta, dict(config.kwargs), cap.size_hints, source
            ),
        }
    except Exception as e:  # noqa: BLE001 - a report, never a check failure
        return {"error": _short(e)}


def _short(e: BaseException, limit: int = 4000) -> str:
    text = "".join(traceback.format_exception_only(type(e), e)).strip()
    if type(e).__name__ != "CompilationError" and not (
        isinstance(e, (RuntimeError, _Timeout)) and str(e)
    ):
        # an error while loading the module: where in the kernel, and where it was raised
        frames = traceback.extract_tb(e.__traceback__)
        ours = [f for f in frames if "npu_kernel_" in f.filename]
        for f in ours[-1:] + [f for f in frames[-1:] if f not in ours[-1:]]:
            text += f"\n  at {f.filename}:{f.lineno}: {f.line}"
    return text if len(text) <= limit else text[:limit] + " ..."


SERVE_MARK = "@@ascend-check@@ "  # answers start with it (anything else on stdout is not one)


def serve(targets) -> int:
    """``--serve``: one request per stdin line, ``{"path": KERNEL_FILE, "config": {"kwargs": ...,
    "num_stages": n}}``, one JSON answer per stdout line after SERVE_MARK (the config's per-target results), so
    a compile stand-in pays the imports once (tests/ub_fit_child.py)."""
    _setup_imports()
    with (
        tempfile.TemporaryDirectory(prefix="npu-ascend-serve-") as root,
        concurrent.futures.ThreadPoolExecutor(1) as pool,
    ):
        for n, line in enumerate(sys.stdin):
            req = json.loads(line)
            with contextlib.redirect_stdout(io.StringIO()):
                r = finish_kernel(
                    check_kernel(
                        Path(req["path"]),
                        None,
                        "all",
                        None,
                        targets,
                        pool,
                        Path(root) / str(n),
                        req["config"],
                    )
                )
            answer = {
                "ok": r.ok,
                "error": r.error,
                "targets": r.configs[0].targets if r.configs else {},
            }
            print(SERVE_MARK + json.dumps(answer, default=str), flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help="kernel files or folders of npu_kernel_*.py")
    ap.add_argument("--serve", action="store_true", help="answer requests on stdin (see serve())")
    ap.add_argument("--json", type=Path, help="write the report here")
    ap.add_argument(
        "--configs",
        choices=("all", "first"),
        default="all",
        help="check every config the heuristics produce (default) or only the first",
    )
    ap.add_argument(
        "--arch",
        default=os.environ.get("NPU_ASCEND_CHECK_ARCH") or None,
        help=f"SoC of the TTIR -> linalg stage and launch fields (default: the kernel's triton_meta "
        f"device, else {DEFAULT_ARCH})",
    )
    ap.add_argument(
        "--targets",
        default=os.environ.get("NPU_ASCEND_CHECK_TARGETS", ",".join(hivm.TARGETS)),
        help=f"SoCs for front end + bishengir (comma-separated of {', '.join(hivm.TARGETS)}; "
        "'none': stop at linalg)",
    )
    ap.add_argument(
        "--jobs",
        type=int,
        default=int(os.environ.get("NPU_ASCEND_CHECK_JOBS", "2")),
        help="bishengir processes at once (default 2)",
    )
    ap.add_argument(
        "--ub-overflow",
        choices=("fail", "drop"),
        default=os.environ.get("NPU_ASCEND_CHECK_UB_OVERFLOW", "fail"),
        help="a config bishengir rejects only for the UB: fails the run (default), or is counted as "
        "dropped, as the Ascend compile path drops it; a kernel with no config left fails either way",
    )
    ap.add_argument(
        "--keep-hivm", type=Path, help="keep bishengir's temps (module.hivm.opt.mlir ...) here"
    )
    ap.add_argument(
        "--config",
        type=json.loads,
        default=None,
        help='check only this config: {"kwargs": {"XBLOCK": 1024}, "num_stages": 1}',
    )
    ap.add_argument("--dump-linalg", type=Path, help="write each lowered kernel's linalg here")
    ap.add_argument(
        "--follow",
        type=Path,
        metavar="DONE_FILE",
        help="check kernels as they appear in the folders, one bishengir at a time, until DONE_FILE "
        "exists (the test command writes it when pytest ends); then the rest with --jobs",
    )
    args = ap.parse_args(argv)

    targets = (
        [] if args.targets in ("", "none") else [hivm.TARGETS[t] for t in args.targets.split(",")]
    )
    if args.serve:
        return serve(targets)
    if not args.paths:
        ap.error("kernel files or folders are required")
    t0 = time.monotonic()
    version = _setup_imports()
    results = []
    with contextlib.ExitStack() as stack:
        workroot = args.keep_hivm or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="npu-ascend-hivm-"))
        )
        jobs = max(1, args.jobs)
        pool = kernel_files.GatedPool(
            stack.enter_context(concurrent.futures.ThreadPoolExecutor(jobs)),
            1 if args.follow else jobs,
        )
        pending = collections.deque()

        def finish(keep: int) -> None:
            while len(pending) > keep:
                r = finish_kernel(pending.popleft(), args.ub_overflow)
                results.append(r)
                for line in run_report.kernel_lines(r):
                    print(line, flush=True)

        for path in kernel_files.kernel_files(
            args.paths, args.follow, pool, jobs
        ):  # front ends here, bishengir in the pool
            pending.append(
                check_kernel(
                    path,
                    args.arch,
                    args.configs,
                    args.dump_linalg,
                    targets,
                    pool,
                    workroot,
                    args.config,
                )
            )
            finish(4 * jobs)
        finish(0)
    failed = [r for r in results if not r.ok]
    elapsed = time.monotonic() - t0
    report = run_report.build(
        results,
        targets,
        triton_ascend=version,
        arch=args.arch,
        configs=args.configs,
        seconds=elapsed,
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1, default=str))
    for line in run_report.summary_lines(report, results, targets, elapsed):
        print(line, flush=True)
    if not results:
        print("ascend_check: FAILED: no kernels to check", flush=True)
        return 2
    # configs are sized with the model's estimate (its held-out margin included,
    # npu_inductor_core.ub_model.MARGIN): an estimate below what bishengir required (an overflow)
    # is a config the heuristics could size past the UB and fails the run; a bound below a plan
    # that fit is a model missing buffers bishengir keeps, reported (the suite's kernels on torch
    # 2.13, 2026-12-05: a 910B2 reduction at 4x8 planned 35,392 B for 29,830 estimated)
    below = ub_below(results, targets) if targets else []
    fatal = ub_below(results, targets, required_only=True) if targets else []
    for line in run_report.verdict_lines(results, below, fatal):
        print(line, flush=True)
    return exit_status(failed, fatal)


def exit_status(failed, below) -> int:
    """1 when a kernel failed or a config's UB estimate is below what bishengir required, else 0."""
    return 1 if failed or below else 0


if __name__ == "__main__":
    sys.exit(main())
