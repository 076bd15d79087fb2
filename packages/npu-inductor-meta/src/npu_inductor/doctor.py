"""``npu-inductor doctor``: what this environment has, what registered, what is missing.

Exit status 1 when something present is broken (torch does not import, a component fails
to register, torch_npu is installed without CANN); absent optional parts are reported, not
failures.
"""

from __future__ import annotations

import argparse
import importlib.util
import platform
from importlib import metadata
from pathlib import Path

from npu_inductor_core import env_config as _env
from npu_inductor_core import patches
from npu_inductor_core.device import plannable_ub

from . import autoload, catalogue, components, doctor_patches, results, versions
from .table import render

OK, ABSENT, ERROR = "ok", "absent", "error"
CANN_ENV = ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH")
CANN_DEFAULT = Path("/usr/local/Ascend/ascend-toolkit/latest")


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _cann_home() -> str | None:
    for var in CANN_ENV:
        where = _env.text(var)
        if where and Path(where).is_dir():
            return where
    return str(CANN_DEFAULT) if CANN_DEFAULT.is_dir() else None


def _ascend_stack() -> dict:
    torch_npu = _dist_version("torch_npu") or _dist_version("torch-npu")
    cann = _cann_home()
    info = {
        "torch_npu": torch_npu,
        "triton_ascend": _dist_version("triton-ascend") or _dist_version("triton_ascend"),
        "cann": cann,
        "status": OK,
        "detail": "",
    }
    if torch_npu and not cann:
        info["status"] = ERROR
        info["detail"] = (
            "torch_npu is installed but no CANN toolkit was found "
            f"(${CANN_ENV[0]}, ${CANN_ENV[1]} or {CANN_DEFAULT}): its autoload entry point "
            "makes `import torch` fail; install CANN or `pip uninstall torch_npu`"
        )
    return info


def _triton() -> dict:
    ascend = _dist_version("triton-ascend") or _dist_version("triton_ascend")
    nvidia = _dist_version("triton")
    flavour = "triton-ascend" if ascend else "nvidia" if nvidia else None
    info = {
        "flavour": flavour,
        "version": ascend or nvidia,
        "interpreter": _env.text("TRITON_INTERPRET") == "1",
        "status": OK,
        "detail": "",
    }
    if flavour is None:
        info["status"] = ABSENT
        info["detail"] = (
            "no Triton: install npu-inductor[sim] (interpreter) or npu-inductor[ascend]"
        )
    elif importlib.util.find_spec("triton") is None:
        info["status"] = ERROR
        info["detail"] = f"{flavour} {info['version']} is installed but `triton` is not importable"
    return info


def _torch(ascend: dict) -> dict:
    if ascend["status"] == ERROR:
        # importing torch would autoload torch_npu and fail; report instead of crashing
        _env.setdefault("TORCH_DEVICE_BACKEND_AUTOLOAD", "0")
    try:
        import torch
    except Exception as exc:
        return {
            "version": _dist_version("torch"),
            "status": ERROR,
            "detail": f"import torch failed: {exc}",
        }
    return {"version": torch.__version__, "status": OK, "detail": ""}


def _components() -> dict:
    info = {
        "installed": [
            {"name": c.name, "distribution": c.distribution, "version": c.version}
            for c in components.discover()
        ],
        "registered": [],
        "status": OK,
        "detail": "",
        # torch's switch, and whether our torch.backends entry point ran in this process
        "autoload": {
            "on": _env.text("TORCH_DEVICE_BACKEND_AUTOLOAD", "1") == "1",
            "ran": autoload.state["autoloaded"],
            "torch_npu_entry_point": autoload.state["torch_npu"],
        },
    }
    # the installed version matrix: each package's declared range for each sibling (versions.py)
    info["versions"] = [
        {
            "package": r.component,
            "version": r.version,
            "sibling": r.sibling,
            "range": r.spec,
            "installed": r.installed,
            "status": r.status if r.installed else ABSENT,
        }
        for r in versions.matrix([c.distribution for c in components.discover() if c.distribution])
    ]
    try:
        info["registered"] = components.enable()
    except components.ComponentError as exc:
        info["status"], info["detail"] = ERROR, str(exc)
    info["patches"] = len(patches.active())
    return info


def _version_rows(rows: list[dict]) -> list[tuple[str, ...]]:
    """One row per package: its version, the siblings in range, those out of range (with the range it needs)."""
    by_package: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        by_package.setdefault((r["package"], r["version"]), []).append(r)
    out = []
    for (package, version), sibs in sorted(by_package.items()):
        good = ", ".join(
            f"{s['sibling']} {s['installed']}" for s in sibs if s["status"] == versions.OK
        )
        bad = "; ".join(
            f"{s['sibling']} {s['installed']} ({s['status']}: needs {s['range']})"
            for s in sibs
            if s["status"] not in (versions.OK, ABSENT)
        )
        out.append((package, version, good or "-", bad or "-"))
    return out


def _reports() -> dict:
    """What components report about past compiles (entry points ``npu_inductor.doctor_reports``:
    a callable returning a dict with ``summary``, optional ``rows`` and ``status``)."""
    out = {}
    for ep in metadata.entry_points(group="npu_inductor.doctor_reports"):
        try:
            out[ep.name] = dict(ep.load()())
        except Exception as exc:
            out[ep.name] = {"status": ERROR, "summary": f"{ep.value} failed: {exc}"}
    return {
        "reports": out,
        "status": ERROR if any(r.get("status") == ERROR for r in out.values()) else OK,
    }


def _device() -> dict:
    import torch

    info = {
        "provider": None,
        "soc": None,
        "device_count": 0,
        "vector_cores": None,
        "cube_cores": None,
        "ub_bytes": None,
        "total_memory": None,
        "status": ABSENT,
        "detail": "no package provides device 'npu': install npu-inductor[sim] (simulated) or torch_npu",
    }
    if torch._C._get_privateuse1_backend_name() != "npu" or not hasattr(torch, "npu"):
        return info
    mod = torch.npu
    info["provider"] = getattr(mod, "__name__", type(mod).__name__).split(".")[0]
    try:
        info["device_count"] = mod.device_count()
        props = mod.get_device_properties(0)
        soc_version = None
        if hasattr(mod, "get_soc_version"):
            soc_version = mod.get_soc_version()
        info["kernels_run_in"] = (
            "Triton's interpreter (npu-sim)"
            if info["provider"] == "npu_sim"
            else "triton-ascend (Ascend NPU)"
        )
        info.update(
            soc=getattr(props, "name", None),
            vector_cores=getattr(props, "vector_core_num", None),
            cube_cores=getattr(props, "cube_core_num", None),
            ub_bytes=plannable_ub(getattr(props, "ub_size", None), soc_version),
            total_memory=getattr(props, "total_memory", None),
            status=OK,
            detail="",
        )
    except Exception as exc:
        info.update(
            status=ERROR, detail=f"{info['provider']} provides 'npu' but querying it failed: {exc}"
        )
    return info


def _groups() -> tuple[dict, str | None]:
    rows = catalogue.load()
    path = results.find()
    res = None
    note = None
    if path is not None:
        try:
            res = results.load(path)
        except results.ResultsError as exc:
            note = str(exc)
    statuses = results.derive(rows, res)
    groups: dict[str, dict] = {}
    for st in statuses:
        g = groups.setdefault(
            st.row.group,
            {"owners": set(), "rows": 0, "verified": 0, "not_applicable": 0, "missing": []},
        )
        g["rows"] += 1
        if st.row.owner:
            g["owners"].add(st.row.owner)
        if st.status == results.VERIFIED:
            g["verified"] += 1
        elif st.status == results.NOT_APPLICABLE:
            g["not_applicable"] += 1
        else:
            g["missing"].append(f"{st.row.id}:{st.status}")
    for g in groups.values():
        owners = sorted(g.pop("owners"))
        g["owners"] = owners
        g["owners_not_installed"] = [o for o in owners if _dist_version(o) is None]
    return groups, (str(res.path) if res else note)


def _summary(not_verified: list[str], shown: int = 6) -> str:
    """'3 missing, 2 failing: ' then the first ``shown`` ids and ' ...' for the text table
    (--json has every id)."""
    if not not_verified:
        return "-"
    counts: dict[str, int] = {}
    for item in not_verified:
        status = item.partition(":")[2]
        counts[status] = counts.get(status, 0) + 1
    ids = " ".join(item.partition(":")[0] for item in not_verified[:shown])
    more = " ..." if len(not_verified) > shown else ""
    return ", ".join(f"{n} {s}" for s, n in counts.items()) + f": {ids}{more}"


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--patches",
        action="store_true",
        help="list every upstream symbol npu-inductor replaced (symbol, owner, versions, reason, "
        "the upstream hook that would remove it) after enabling the backend",
    )


def _run(args: argparse.Namespace):
    if getattr(args, "patches", False):
        return doctor_patches.run()
    ascend = _ascend_stack()
    data = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "ascend": ascend,
        "triton": _triton(),
        "torch": _torch(ascend),
    }
    if data["torch"]["status"] == OK:
        data["components"] = _components()
        data["device"] = _device()
        data["compiles"] = _reports()
    data["groups"], data["results"] = _groups()

    failed = [k for k, v in data.items() if isinstance(v, dict) and v.get("status") == ERROR]
    data["status"] = ERROR if failed else OK
    return (1 if failed else 0), data, _text(data, failed)


def _text(d: dict, failed: list[str]) -> str:
    t, dev, comp = d["triton"], d.get("device", {}), d.get("components", {})
    a = d["ascend"]
    lines = [
        f"python        {d['python']} on {d['platform']}",
        f"torch         {d['torch']['version']} [{d['torch']['status']}] {d['torch']['detail']}".rstrip(),
        f"triton        {t['flavour'] or '-'} {t['version'] or ''}"
        f"{' (interpreter)' if t['interpreter'] else ''} [{t['status']}] {t['detail']}".rstrip(),
        f"torch_npu     {a['torch_npu'] or 'absent'}",
        f"triton-ascend {a['triton_ascend'] or 'absent'}",
        f"CANN          {a['cann'] or 'absent'}{'  [error] ' + a['detail'] if a['status'] == ERROR else ''}",
    ]
    if dev:
        lines.append(
            f"device npu    [{dev['status']}] provider={dev['provider'] or '-'} devices={dev['device_count']} "
            f"soc={dev['soc'] or '-'} vector_cores={dev['vector_cores'] or '-'} "
            f"cube_cores={dev['cube_cores'] or '-'} ub_bytes={dev['ub_bytes'] or '-'}"
        )
        if dev.get("kernels_run_in"):
            lines.append(f"              npu kernels run in {dev['kernels_run_in']}")
        if dev["detail"]:
            lines.append(f"              {dev['detail']}")
    if comp:
        lines.append(
            "components    " + ", ".join(f"{c['name']} {c['version']}" for c in comp["installed"])
            if comp["installed"]
            else "components    none installed"
        )
        lines += [
            "",
            "installed versions (each package's declared sibling ranges; absent siblings not shown):",
        ]
        lines += render(
            ("package", "version", "siblings in range", "out of range"),
            _version_rows(comp["versions"]),
        )
        lines.append("")
        lines.append(
            f"registered    {', '.join(comp['registered']) or '-'}"
            f"{'  [error] ' + comp['detail'] if comp['status'] == ERROR else ''}"
        )
        auto = comp.get("autoload", {})
        lines.append(
            f"autoload      {'on' if auto.get('on') else 'off (TORCH_DEVICE_BACKEND_AUTOLOAD=0)'}"
            f"{', ran at import torch' if auto.get('ran') else ''}"
        )
        lines.append(
            f"patches       {comp['patches']} upstream symbols replaced (npu-inductor doctor --patches lists them)"
        )
    for name, rep in d.get("compiles", {}).get("reports", {}).items():
        lines.append(
            f"{name:<13} {rep.get('summary', '')}{'  [error]' if rep.get('status') == ERROR else ''}"
        )
        lines += [f"              {row}" for row in rep.get("rows", [])]
    lines += ["", f"catalogue (results: {d['results'] or 'none; run the test command'}):"]
    lines += render(
        ("group", "rows", "verified", "n/a", "owner", "not verified"),
        [
            (
                g,
                str(v["rows"]),
                str(v["verified"]),
                str(v["not_applicable"]),
                ",".join(
                    o + ("(not installed)" if o in v["owners_not_installed"] else "")
                    for o in v["owners"]
                )
                or "-",
                _summary(v["missing"]),
            )
            for g, v in sorted(d["groups"].items())
        ],
    )
    lines.append("")
    lines.append(f"doctor: {'broken: ' + ', '.join(failed) if failed else 'ok'}")
    return "\n".join(lines)


class _Doctor:
    help = "report torch, Triton, the Ascend stack, device 'npu', registered components and catalogue gaps"
    configure = staticmethod(_configure)
    run = staticmethod(_run)


COMMAND = _Doctor()
