"""npu's fusion policy against upstream's on the same npu graphs (issue 20 item 4).

Each workload is compiled for npu (npu-sim) twice in this process, with a fresh Inductor
cache each time: ``policy`` (npu-fusion's defaults: the UB rule, the round-trip
preference and combo kernels of npu reductions) and ``upstream`` (all three off: upstream's
scheduler, choices and flags alone).
Reported per workload and variant: kernels generated per call (Inductor's
``generated_kernel_count``, forward and backward together where the workload trains) and
bytes moved through GM by those kernels (Inductor's ``num_bytes_accessed``: each kernel's
loads and stores). ``--ascend-check`` also saves every kernel and runs
npu-lowering's ascend_check on them (triton-ascend's front end and bishengir; slow) and
reports the kernels that fail.

    .venv/bin/python bench/fusion.py [--json bench/fusion.json] [--only softmax,mlp8]
        [--ascend-check [--check-configs first]] [--check-python /work/main/.venv-ascend/bin/python]

Shapes are small (npu-sim runs every kernel in Triton's interpreter); numbers go to the
npu-fusion README, no test asserts them.

``--llm`` measures the LLM workloads of bench/llm_workloads.py instead (residual add + RMSNorm,
+ per-token int8 quant, QK-norm + RoPE, split QKV + norm + RoPE, SwiGLU + quant) at realistic
shapes, per token count and dtype, next to the minimum GM traffic (each input read once, each
output written once). They are compiled without running a kernel (Inductor compiles Dynamo's
fake inputs; the graph then runs eagerly), so 4096 tokens cost no interpreter time:

    .venv/bin/python bench/fusion.py --llm [--tokens 1,16,256,4096] [--dtypes bfloat16,float16]
        [--json bench/fusion_llm.json] [--ascend-check [--check-variants policy]]

With ``--ascend-check`` the LLM rows' kernels are saved and checked by one ascend_check run at
the end (each row's variant gets ``ascend_check``: its kernels and the failing ones); the rows
then go to bench/fusion_llm_ascend_check.json unless ``--json`` names another file.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

ROOT = Path(__file__).resolve().parents[1]
# upstream: npu-fusion's rules, preference and combo kernels off (upstream's scheduler alone)
VARIANTS = {
    "policy": {},
    "upstream": {
        "ub_rule": False,
        "prefer_round_trips": False,
        "combo_kernels": False,
        "recompute_norm_inputs": False,
    },
}


class Block(nn.Module):
    """Pre-norm transformer block: attention (manual softmax) and a GELU MLP."""

    def __init__(self, d=64, heads=2):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, s, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, -1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, s, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def mlp8(width=64, hidden=256):
    class B(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln, self.fc1, self.fc2 = (
                nn.LayerNorm(width),
                nn.Linear(width, hidden),
                nn.Linear(hidden, width),
            )

        def forward(self, h):
            return h + self.fc2(F.gelu(self.fc1(self.ln(h))))

    return nn.Sequential(*[B() for _ in range(8)])


def workloads():
    """name -> (make() -> (fn, args), trains)."""
    dev = "npu"

    def rows(n=8, m=1024):
        return torch.randn(n, m, device=dev)

    def block_train():
        torch.manual_seed(0)
        model = Block().to(dev)
        x = torch.randn(2, 16, 64, device=dev, requires_grad=True)

        def step(x):
            out = model(x)
            out.sum().backward()
            return out

        return step, (x,)

    return {
        "1-kernel function": lambda: (
            lambda a, b: (a + b) * 2.0,
            (torch.randn(1024, device=dev), torch.randn(1024, device=dev)),
        ),
        "softmax": lambda: (lambda x: torch.softmax(x, -1), (rows(),)),
        "layer_norm": lambda: (
            lambda x, w: F.layer_norm(x, (1024,), w),
            (rows(), torch.randn(1024, device=dev)),
        ),
        "rms_norm": lambda: (
            lambda x, w: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
            (rows(), torch.randn(1024, device=dev)),
        ),
        "cross_entropy": lambda: (
            lambda x, t: F.cross_entropy(x, t),
            (rows(), torch.randint(0, 1024, (8,), device=dev)),
        ),
        "split reduction": lambda: (
            lambda x: (x.sum(), x.abs().max()),
            (torch.randn(1 << 16, device=dev),),
        ),
        "stress: wide sum (24 inputs)": lambda: (
            lambda *xs: (sum(xs[:13]), sum(xs[12:]) * 2),
            tuple(torch.randn(1024, device=dev) for _ in range(24)),
        ),
        "MLP8 (width 64, batch 4)": lambda: (mlp8().to(dev), (torch.randn(4, 64, device=dev),)),
        "transformer block fwd+bwd (d 64, seq 16, batch 2)": block_train,
    }


def _counted(compile_and_call, variant: dict) -> tuple[dict, object]:
    """Kernels and GM bytes Inductor's codegen counts while ``compile_and_call()`` runs under
    npu-fusion's ``variant``, with a fresh Dynamo state and Inductor cache; and its result."""
    import logging

    from npu_fusion import config as fusion_config
    from torch._inductor import compile_fx, metrics
    from torch._inductor.utils import fresh_cache

    # Inductor counts each scheduled kernel's read and write bytes when its metrics log is on
    compile_fx.inductor_metrics_log.setLevel(logging.INFO)
    torch._dynamo.reset()
    metrics.reset()
    with fresh_cache(), fusion_config.patch(variant):
        out = compile_and_call()
    return {"kernels": metrics.generated_kernel_count, "gm_bytes": metrics.num_bytes_accessed}, out


def measure(make, variant: dict, save_dir: Path | None) -> dict:
    import npu_lowering.config as lowering_config

    fn, args = make()
    old = lowering_config.save_kernels
    lowering_config.save_kernels = str(save_dir) if save_dir else None
    try:
        return _counted(lambda: torch.compile(fn)(*args), variant)[0]
    finally:
        lowering_config.save_kernels = old


def measure_compile_only(fn, args: tuple, variant: dict) -> tuple[dict, object]:
    """Kernels and GM bytes of ``fn``'s compile for ``args``, without running a kernel: the
    backend lets Inductor compile the graph (codegen counts) and hands Dynamo the graph itself,
    which runs eagerly. Returns the counts and the (eager) outputs."""
    from torch._inductor import compile_fx

    def backend(gm, example_inputs):
        compile_fx.compile_fx(gm, example_inputs)
        return gm.forward

    def call():
        with torch.no_grad():
            return torch.compile(fn, backend=backend, dynamic=False)(*args)

    return _counted(call, variant)


def training_kernels(fn, args: tuple, variant: dict) -> dict:
    """Kernels of ``fn``'s training step per direction, compiled without running a kernel:
    the backward graph is lowered with the forward (functorch's
    ``force_non_lazy_backward_lowering``), each compile counted as Inductor's inner compile
    is told which direction it is."""
    from torch._functorch import config as functorch_config
    from torch._inductor import compile_fx, metrics

    counts = {"forward": 0, "backward": 0, "forward_gm_bytes": 0, "backward_gm_bytes": 0}

    def inner(gm, example_inputs, **kwargs):
        before = metrics.generated_kernel_count, metrics.num_bytes_accessed
        compiled = compile_fx.compile_fx_inner(gm, example_inputs, **kwargs)
        direction = "backward" if kwargs.get("is_backward") else "forward"
        counts[direction] += metrics.generated_kernel_count - before[0]
        counts[f"{direction}_gm_bytes"] += metrics.num_bytes_accessed - before[1]
        return compiled

    def backend(gm, example_inputs):
        with functorch_config.patch(force_non_lazy_backward_lowering=True):
            compile_fx.compile_fx(gm, example_inputs, inner_compile=inner)
        return gm.forward

    _counted(lambda: torch.compile(fn, backend=backend, dynamic=False)(*args), variant)
    return counts


def llm_rows(
    tokens: list[int], dtypes: list[str], only: str | None, save_root: Path | None = None
) -> list[dict]:
    """One row per workload, dtype and token count; with ``save_root``, each row's kernels
    under ``save_root/<row>-<variant>`` (for one ascend_check run over all of them)."""
    import llm_workloads as W

    rows = []
    for w, dtype, t, args in W.cases(tokens, dtypes, only):
        row = {"workload": w.name, "tokens": t, "dtype": dtype}
        for vname, variant in VARIANTS.items():
            save = save_root / f"{w.name}-{t}-{dtype}-{vname}" if save_root else None
            with _saving(save):
                row[vname], out = measure_compile_only(w.fn, args, variant)
        row["minimum_gm_bytes"] = W.minimum_gm_bytes(args, out, w.gather)
        if w.trains:  # the training step's kernels are saved with the row's too
            for vname, variant in VARIANTS.items():
                save = save_root / f"{w.name}-{t}-{dtype}-{vname}" if save_root else None
                with _saving(save):
                    row[vname]["training"] = training_kernels(w.fn, W.trainable(w, args), variant)
        rows.append(row)
        print_llm_row(row)
    return rows


def llm_ascend_check(rows: list[dict], root: Path, python: str, configs: str, variants) -> dict:
    """One ascend_check over every saved LLM kernel of ``variants``; each row's variant gets
    its kernels' count and failures."""
    folders = [
        f
        for r in rows
        for v in variants
        if (f := root / f"{r['workload']}-{r['tokens']}-{r['dtype']}-{v}").is_dir()
    ]
    summary = ascend_check(folders, python, configs)
    for r in rows:
        for v in variants:
            folder = root / f"{r['workload']}-{r['tokens']}-{r['dtype']}-{v}"
            names = {p.stem for p in folder.glob("npu_kernel_*.py")}
            per_kernel = summary.get("ttir_gm_bytes", {})
            r[v]["ascend_check"] = {
                "kernels_checked": len(names),
                "failed": sorted(names & set(summary.get("failed", []))),
                # the row's kernels' TTIR bytes, the configs' least and most (see ttir_gm_bytes);
                # None where a kernel has no figure (a combo kernel: no block count)
                "ttir_gm_bytes": [
                    sum(min(per_kernel[n]) for n in names),
                    sum(max(per_kernel[n]) for n in names),
                ]
                if names and names <= per_kernel.keys()
                else None,
            }
    return summary


@contextlib.contextmanager
def _saving(folder: Path | None):
    """npu-lowering saves every kernel compiled meanwhile into ``folder`` (None: none)."""
    import npu_lowering.config as lowering_config

    old = lowering_config.save_kernels
    if folder:
        folder.mkdir(parents=True, exist_ok=True)
    lowering_config.save_kernels = str(folder) if folder else None
    try:
        yield
    finally:
        lowering_config.save_kernels = old


def print_llm_row(row: dict) -> None:
    p, u, m = row["policy"], row["upstream"], row["minimum_gm_bytes"]
    train = " | ".join(
        f"{v['training']['forward']} + {v['training']['backward']}"
        f" ({v['training']['backward_gm_bytes']} B backward)"
        if "training" in v
        else "-"
        for v in (p, u)
    )
    print(
        f"| {row['workload']} | {row['tokens']} | {row['dtype']} | {p['kernels']} / {u['kernels']} "
        f"| {p['gm_bytes']} / {u['gm_bytes']} / {m} | {p['gm_bytes'] / m:.2f} / {u['gm_bytes'] / m:.2f} "
        f"| {train} |",
        flush=True,
    )


def ascend_check(folder: Path | list[Path], python: str, configs: str = "all") -> dict:
    folders = folder if isinstance(folder, list) else [folder]
    report = (
        folders[0].parent / "report.json" if isinstance(folder, list) else folder / "report.json"
    )
    cmd = [
        python,
        str(ROOT / "packages/npu-lowering/ascend_check/check.py"),
        *map(str, folders),
        "--jobs",
        "1",
        "--configs",
        configs,
        "--json",
        str(report),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if not report.exists():
        return {"error": (proc.stderr or proc.stdout)[-500:]}
    rep = json.loads(report.read_text())
    return {
        "kernels_checked": rep["kernels"],
        "configs_checked": rep["kernel_configs"],
        "kernels_failed": len(rep["failed"]),
        "failed": rep["failed"],
        "ttir_gm_bytes": ttir_gm_bytes(rep),
    }


def _ttir_launch_bytes(work: dict) -> int:
    """A config's TTIR bytes in one launch: what its sub-block loop moves, per block, and what
    it moves before the loop (a load hoisted out of it), per program."""
    once = work.get("ttir_gm_bytes_per_program") or 0
    programs = work.get("programs")
    if not programs:  # a program per block: all of it per block
        return work["ttir_gm_bytes_per_block"] * work["blocks"]
    return (work["ttir_gm_bytes_per_block"] - once) * work["blocks"] + once * programs


def ttir_gm_bytes(report: dict) -> dict:
    """Per kernel, the GM bytes its TTIR loads and stores move in one launch, per config
    (bytes per block x blocks, as the check reads them from triton-ascend's IR): what the
    kernel moves as Ascend's compiler sees it, where Inductor's count takes whole buffers."""
    out = {}
    for kernel in report.get("results", []):
        figures = [
            _ttir_launch_bytes(c["work"])
            for c in kernel.get("configs", [])
            if (c.get("work") or {}).get("ttir_gm_bytes_per_block") is not None
            and c["work"].get("blocks")
        ]
        if figures:
            out[kernel["name"]] = figures
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=ROOT / "bench/fusion.json")
    ap.add_argument("--only", help="comma-separated workload names (substrings)")
    ap.add_argument(
        "--ascend-check", action="store_true", help="run ascend_check on every kernel (slow)"
    )
    ap.add_argument("--check-python", default="/work/main/.venv-ascend/bin/python")
    ap.add_argument(
        "--check-variants",
        default="policy,upstream",
        help="comma-separated variants whose kernels ascend_check checks",
    )
    ap.add_argument(
        "--check-configs",
        choices=("all", "first"),
        default="all",
        help="ascend_check every config of a kernel or its first",
    )
    ap.add_argument(
        "--llm",
        action="store_true",
        help="the LLM workloads (bench/llm_workloads.py), compile only",
    )
    ap.add_argument("--tokens", default="1,16,256,4096", help="--llm: token counts")
    ap.add_argument("--dtypes", default="bfloat16,float16", help="--llm: input dtypes")
    args = ap.parse_args(argv)

    import npu_inductor

    # the whole backend, as autoload gives a user (npu-autotune's mix-order reduction on npu
    # included: registering only npu-sim, npu-lowering and npu-fusion measured without it)
    npu_inductor.enable()

    if args.llm:
        print(
            "| workload | tokens | dtype | kernels policy / upstream | GM bytes policy / upstream / minimum "
            "| x minimum policy / upstream | training kernels forward + backward, policy "
            "| upstream |"
        )
        print("|---|---|---|---|---|---|---|---|")
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        tokens, dtypes = [int(t) for t in args.tokens.split(",")], args.dtypes.split(",")
        default = ROOT / (
            "bench/fusion_llm_ascend_check.json" if args.ascend_check else "bench/fusion_llm.json"
        )
        out = default if args.json == ROOT / "bench/fusion.json" else args.json
        if not args.ascend_check:
            return _write(out, llm_rows(tokens, dtypes, args.only))
        with tempfile.TemporaryDirectory(prefix="npu-fusion-llm-") as tmp:
            rows = llm_rows(tokens, dtypes, args.only, Path(tmp))
            variants = args.check_variants.split(",")
            summary = llm_ascend_check(
                rows, Path(tmp), args.check_python, args.check_configs, variants
            )
        shown = {k: v for k, v in summary.items() if k not in ("failed", "ttir_gm_bytes")}
        print(shown, "failed:", summary.get("failed"))
        print(
            "| workload | tokens | dtype | TTIR GM bytes (configs' least-most) | minimum | ratio |"
        )
        for row in rows:
            if row["policy"]["ascend_check"]["ttir_gm_bytes"] is None:
                continue
            low, high = row["policy"]["ascend_check"]["ttir_gm_bytes"]
            m = row["minimum_gm_bytes"]
            print(
                f"| {row['workload']} | {row['tokens']} | {row['dtype']} | {low}-{high} | {m} "
                f"| {low / m:.2f}-{high / m:.2f} |"
            )
        return _write(out, rows)

    chosen = workloads()
    if args.only:
        keys = [k.strip() for k in args.only.split(",")]
        chosen = {n: m for n, m in chosen.items() if any(k in n for k in keys)}
    rows = []
    with tempfile.TemporaryDirectory(prefix="npu-fusion-bench-") as tmp:
        for i, (name, make) in enumerate(chosen.items()):
            row = {"workload": name}
            for vname, variant in VARIANTS.items():
                checked = args.ascend_check and vname in args.check_variants.split(",")
                save = Path(tmp) / f"{i}-{vname}" if checked else None
                if save:
                    save.mkdir()
                row[vname] = measure(make, variant, save)
                if save:
                    row[vname]["ascend_check"] = ascend_check(
                        save, args.check_python, args.check_configs
                    )
            rows.append(row)
            print_row(row)
    return _write(args.json, rows)


def _write(path: Path, rows: list[dict]) -> int:
    out = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} {platform.machine()} ({platform.processor() or 'cpu'})",
        "torch": torch.__version__,
        "device": "npu-sim",
        "rows": rows,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1))
    print(f"wrote {path}")
    return 0


_HEADER = False


def print_row(row: dict) -> None:
    global _HEADER
    if not _HEADER:
        print(
            "| workload | kernels policy / upstream | GM bytes policy / upstream | Ascend check failures policy / upstream |"
        )
        print("|---|---|---|---|")
        _HEADER = True
    p, u = row["policy"], row["upstream"]

    def fails(r):
        c = r.get("ascend_check")
        return "-" if c is None else str(c.get("kernels_failed", "error"))

    print(
        f"| {row['workload']} | {p['kernels']} / {u['kernels']} | {p['gm_bytes']} / {u['gm_bytes']} "
        f"| {fails(p)} / {fails(u)} |",
        flush=True,
    )


if __name__ == "__main__":
    sys.exit(main())
