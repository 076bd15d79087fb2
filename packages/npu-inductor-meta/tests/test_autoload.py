"""Autoload: a plain ``import torch`` gives device "npu" and npu compiles (entry-point group
``torch.backends``), ``TORCH_DEVICE_BACKEND_AUTOLOAD=0`` opts out, and beside torch_npu our
components register after torch_npu's own autoload entry point, in either order.

Each check runs in a fresh interpreter: autoload happens once per process, at ``import torch``.
torch_npu is never installed here (it needs CANN); its entry point is checked statically: the
line recorded in ``fixtures/`` (compared with the torch_npu 2.13.0 wheel where the wheel can be
had) is declared by a stand-in torch_npu distribution that does what the real one does at
import (switches autoload off around its own ``import torch``, names PrivateUse1 "npu").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "fixtures" / "torch_npu-2.13.0.entry_points.txt"
WHEEL_GLOB = "torch_npu-2.13.0-*.whl"
WHEEL_CACHES = [Path(p) for p in (os.environ.get("NPU_LAUNCHER_WHEEL_CACHE"),) if p] + [
    Path.home() / ".cache" / "npu_launcher" / "wheels"
]  # where the other torch_npu wheel tests keep it
COMPONENT_MODULES = (
    "npu_lowering",
    "npu_autotune",
    "npu_cache",
    "npu_fusion",
    "npu_graphtree",
    "npu_launcher",
)


def _run(code: str, *args: str, env: dict | None = None, tmp: Path) -> dict:
    base = {k: v for k, v in os.environ.items() if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"}
    base["TORCHINDUCTOR_CACHE_DIR"] = str(tmp / "inductor-cache")
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


COMPILE = """
    import json, sys
    import torch
    after_import = sorted(m for m in sys.modules if m.split(".")[0] in {components!r} or m in
                          ("torch._dynamo", "torch._inductor"))
    device = torch._C._get_privateuse1_backend_name()
    if sys.argv[1] == "inductor-first":  # Inductor imported before any compile (Dynamo inside it)
        from torch._inductor.utils import run_and_get_code
    else:
        run_and_get_code = None

    def f(x, y):
        return torch.softmax(x * y, dim=-1).sin() + y.sum()

    x, y = torch.randn(8, 32, device="npu"), torch.randn(8, 32, device="npu")
    compiled = torch.compile(f)
    if run_and_get_code is None:
        out = compiled(x, y)
        codes = []
    else:
        out, codes = run_and_get_code(compiled, x, y)
    from torch._inductor.codegen.common import get_scheduling_for_device
    import npu_inductor
    print(json.dumps({{
        "after_import": after_import, "device": device, "out_device": str(out.device),
        "match": torch.allclose(out.cpu(), f(x, y).cpu(), rtol=1e-5, atol=1e-5),
        "enabled": npu_inductor.enabled(), "scheduling": get_scheduling_for_device("npu").__module__,
        "kernels": sum(c.count("@triton.jit") for c in codes), "n_codes": len(codes)}}))
""".format(components=COMPONENT_MODULES)


@pytest.mark.feature("B01")
@pytest.mark.parametrize("order", ["compile-first", "inductor-first"])
def test_import_torch_alone_gives_npu_compiles(order, tmp_path):
    r = _run(COMPILE, order, tmp=tmp_path)
    # import torch started the device and nothing heavier: Dynamo, Inductor and the components wait
    assert r["device"] == "npu"
    assert r["after_import"] == []
    assert r["out_device"].startswith("npu") and r["match"]
    assert {"npu-sim", "npu-lowering", "npu-autotune", "npu-cache", "npu-launcher"} <= set(
        r["enabled"]
    )
    assert r["scheduling"].startswith("npu_lowering")
    if order == "inductor-first":
        assert r["n_codes"] and r["kernels"] >= 1


def test_autoload_opt_out(tmp_path):
    r = _run(
        """
        import json, sys
        import torch
        import torch._dynamo, torch._inductor.compile_fx  # the modules that would trigger registration
        sim = sys.modules.get("npu_sim")  # Triton's backend entry point may import it, never start it
        print(json.dumps({"device": torch._C._get_privateuse1_backend_name(), "npu": hasattr(torch, "npu"),
                          "sim_started": bool(sim and sim.is_started()),
                          "ours": sorted(m for m in sys.modules if m.split(".")[0] in %r + ("npu_inductor",))}))
    """
        % (COMPONENT_MODULES,),
        env={"TORCH_DEVICE_BACKEND_AUTOLOAD": "0"},
        tmp=tmp_path,
    )
    assert r == {"device": "privateuseone", "npu": False, "sim_started": False, "ours": []}


def test_explicit_enable_still_works_and_does_not_nest(tmp_path):
    # enable() starts npu-sim, whose Dynamo interface imports torch._dynamo: the autoload hook
    # must leave that to the running enable() (a nested one deadlocked on its lock)
    r = _run(
        """
        import json, torch, npu_inductor
        from npu_inductor import autoload
        print(json.dumps({"enabled": npu_inductor.enable(), "hook": autoload.state["components"]}))
    """,
        tmp=tmp_path,
    )
    assert "npu-lowering" in r["enabled"] and r["hook"] is None


def test_direct_sim_start_leaves_registration_to_the_compile(tmp_path):
    # npu_sim.start() imports torch._dynamo under its own lock: the hook waits for the compile
    r = _run(
        """
        import json, torch, npu_sim, npu_inductor
        npu_sim.start()
        after_start = npu_inductor.enabled()
        x = torch.randn(16, device="npu")
        out = torch.compile(lambda x: x.sin() + 1)(x)
        print(json.dumps({"after_start": after_start, "enabled": npu_inductor.enabled(),
                          "match": torch.allclose(out.cpu(), (x.sin() + 1).cpu())}))
    """,
        tmp=tmp_path,
    )
    assert r["after_start"] is None and "npu-lowering" in r["enabled"] and r["match"]


def test_inductor_compile_workers_register_no_components(tmp_path):
    # a script at the path of Inductor's compile-worker entry, importing what that entry imports
    script = tmp_path / "torch" / "_inductor" / "compile_worker" / "__main__.py"
    script.parent.mkdir(parents=True)
    script.write_text(
        textwrap.dedent("""
        import json, torch
        from torch._inductor.codecache import torch_key  # imports compile_fx too
        import npu_inductor
        print(json.dumps({"enabled": npu_inductor.enabled(), "device": torch._C._get_privateuse1_backend_name()}))
    """)
    )
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"}
    proc = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path.parent,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"enabled": None, "device": "npu"}


def test_our_entry_points_are_declared():
    eps = {ep.name: ep.value for ep in metadata.entry_points(group="torch.backends")}
    assert eps.get("npu_inductor") == "npu_inductor.autoload:autoload"
    assert eps.get("npu_sim") == "npu_sim:autoload"


# --- torch_npu, statically -------------------------------------------------------------------


def _recorded_line() -> tuple[str, str]:
    lines = [
        ln.strip()
        for ln in FIXTURE.read_text().splitlines()
        if ln.strip() and not ln.startswith("#")
    ]
    assert lines[0] == "[torch.backends]" and len(lines) == 2, lines
    name, value = (s.strip() for s in lines[1].split("=", 1))
    return name, value


def _torch_npu_wheel() -> Path | None:
    for cache in WHEEL_CACHES:
        hits = sorted(cache.glob(WHEEL_GLOB))
        if hits:
            return hits[0]
    cache = WHEEL_CACHES[0]
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.11",
            "--implementation",
            "cp",
            "--platform",
            "manylinux_2_28_x86_64",
            "-d",
            str(cache),
            "torch_npu==2.13.0",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    hits = sorted(cache.glob(WHEEL_GLOB))
    return hits[0] if hits else None


def test_recorded_entry_point_is_the_wheels():
    wheel = _torch_npu_wheel()
    if wheel is None:
        pytest.skip("torch_npu 2.13.0 wheel not available: the recorded copy stands in")
    with zipfile.ZipFile(wheel) as zf:
        text = zf.read("torch_npu-2.13.0.dist-info/entry_points.txt").decode()
    section = text.split("[torch.backends]", 1)[1].split("[", 1)[0]
    assert [ln.strip() for ln in section.splitlines() if ln.strip()] == [
        "%s = %s" % _recorded_line()
    ]


def _stand_in_torch_npu(root: Path) -> None:
    """A torch_npu distribution declaring the recorded entry point; its module does what torch_npu
    2.13's ``__init__`` does that matters to ordering, and records when it ran."""
    name, value = _recorded_line()
    module, attr = value.split(":")
    dist = root / f"{module}-2.13.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 2.13.0\n")
    (dist / "entry_points.txt").write_text(f"[torch.backends]\n{name} = {value}\n")
    pkg = root / module
    (pkg / "utils").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        textwrap.dedent(f"""
        import os, sys
        EVENTS = []
        _ORG = os.getenv("TORCH_DEVICE_BACKEND_AUTOLOAD", "1")
        os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = "0"  # torch_npu 2.13 does this before `import torch`
        import torch
        auto = sys.modules.get("npu_inductor.autoload")
        EVENTS.append(["init", bool(auto and auto.state["autoloaded"]), sorted(m for m in sys.modules
                       if m.split(".")[0] in {COMPONENT_MODULES!r})])
        torch.utils.rename_privateuse1_backend("npu")

        def {attr}():
            os.environ["TORCH_DEVICE_BACKEND_AUTOLOAD"] = _ORG
            EVENTS.append(["autoload"])

        {attr}()
    """)
    )
    (pkg / "utils" / "__init__.py").write_text("")
    # torch_npu 2.13 re-registers its own Inductor backend for "npu" at each compile unless this is called
    (pkg / "utils" / "_dynamo.py").write_text(
        "DISABLED = False\n\ndef disable_register_inductor_npu():\n"
        "    global DISABLED\n    DISABLED = True\n"
    )


BESIDE_TORCH_NPU = """
    import json, os, sys
    stub, where = sys.argv[1], sys.argv[2]
    sys.path.insert(0, stub) if where == "torch_npu-first" else sys.path.append(stub)
    from importlib import metadata
    order = [ep.name for ep in metadata.entry_points(group="torch.backends")]
    import torch
    import torch_npu, npu_inductor
    from npu_inductor import autoload
    before_compile = npu_inductor.enabled()
    import torch._dynamo  # what torch.compile imports first
    from torch._inductor.codegen.common import get_scheduling_for_device
    from torch_npu.utils import _dynamo as tn_dynamo
    print(json.dumps({"order": order, "events": torch_npu.EVENTS, "state": autoload.state,
                      "before_compile": before_compile, "enabled": npu_inductor.enabled(),
                      "scheduling": get_scheduling_for_device("npu").__module__,
                      "torch_npu_inductor_off": tn_dynamo.DISABLED,
                      "autoload_env": os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD")}))
"""


@pytest.mark.parametrize("where", ["torch_npu-first", "npu_inductor-first"])
def test_components_register_after_torch_npu(where, tmp_path):
    _stand_in_torch_npu(tmp_path / "site")
    name, value = _recorded_line()
    r = _run(BESIDE_TORCH_NPU, str(tmp_path / "site"), where, tmp=tmp_path)
    # torch really ran the entry points in the order this case is about
    first = name if where == "torch_npu-first" else "npu_inductor"
    assert r["order"].index(first) < r["order"].index(({name, "npu_inductor"} - {first}).pop())
    # torch_npu's import ran before our autoload finished and before any component was imported
    assert r["events"][0] == ["init", False, []]
    assert ["autoload"] in r["events"] and r["autoload_env"] == "1"
    assert r["state"]["torch_npu"] == value
    # components register afterwards (at the first Dynamo import), npu-sim not: torch_npu is the device
    assert r["before_compile"] is None
    assert "npu-lowering" in r["enabled"] and "npu-sim" not in r["enabled"]
    # and npu compiles are ours: torch_npu's own Inductor registration is switched off
    assert r["scheduling"].startswith("npu_lowering") and r["torch_npu_inductor_off"]


@pytest.mark.parametrize("where", ["torch_npu-first", "npu_inductor-first"])
def test_a_torch_npu_that_cannot_import_is_named_not_us(where, tmp_path):
    # torch_npu without CANN: `import torch` fails (torch_npu's own entry point), naming torch_npu
    _stand_in_torch_npu(tmp_path / "site")
    (tmp_path / "site" / "torch_npu" / "__init__.py").write_text(
        "raise ImportError('libascendcl.so: no CANN')\n"
    )
    add = "sys.path.insert(0, %r)" if where == "torch_npu-first" else "sys.path.append(%r)"
    env = {k: v for k, v in os.environ.items() if k != "TORCH_DEVICE_BACKEND_AUTOLOAD"}
    proc = subprocess.run(
        [sys.executable, "-c", f"import sys; {add % str(tmp_path / 'site')}; import torch"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode != 0
    assert "Failed to load the backend extension: torch_npu." in proc.stderr
    assert "backend extension: npu_inductor" not in proc.stderr
