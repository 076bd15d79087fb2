"""Every package follows the layout and the plugin contract; no component imports another
(every one may import the core package, which imports none)."""

import ast
import tomllib
from pathlib import Path

import pytest

PACKAGES = Path(__file__).resolve().parents[2]
EXPECTED = {
    "npu-sim": ("npu-sim", "npu_sim"),
    "npu-lowering": ("npu-lowering", "npu_lowering"),
    "npu-fusion": ("npu-fusion", "npu_fusion"),
    "npu-autotune": ("npu-autotune", "npu_autotune"),
    "npu-cache": ("npu-cache", "npu_cache"),
    "npu-launcher": ("npu-launcher", "npu_launcher"),
    "npu-graphtree": ("npu-graphtree", "npu_graphtree"),
    "npu-inductor-meta": ("npu-inductor", "npu_inductor"),
    "npu-inductor-core": ("npu-inductor-core", "npu_inductor_core"),
}
CORE = "npu_inductor_core"  # the shared seam: not a component, importable by every component
IMPORT_NAMES = {imp for _, imp in EXPECTED.values()} - {CORE}


def test_no_other_package_directories():
    assert sorted(p.name for p in PACKAGES.iterdir() if p.is_dir()) == sorted(EXPECTED)


@pytest.mark.parametrize("folder", sorted(EXPECTED))
def test_package_layout(folder):
    dist, imp = EXPECTED[folder]
    root = PACKAGES / folder
    meta = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert meta["name"] == dist
    assert meta["version"].count(".") == 2
    assert (root / "README.md").read_text().strip()
    assert (root / "src" / imp / "__init__.py").is_file()
    assert (root / "tests").is_dir()
    deps = " ".join(meta.get("dependencies", []))
    assert "torch_npu" not in deps and "triton-ascend" not in deps  # only in npu-inductor[ascend]
    if imp == CORE:  # depends on torch only; registers nothing
        assert [d.split(">")[0].split("=")[0].strip() for d in meta["dependencies"]] == ["torch"]
        assert "entry-points" not in meta
    elif dist != "npu-inductor":
        eps = meta["entry-points"]["npu_inductor.components"]
        assert eps == {dist: f"{imp}:register"}


@pytest.mark.parametrize("folder", sorted(EXPECTED))
def test_components_never_import_each_other(folder):
    """Components find each other through entry points only."""
    _, own = EXPECTED[folder]
    offenders = []
    for path in (PACKAGES / folder / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top in IMPORT_NAMES and top != own:
                    offenders.append(f"{path.relative_to(PACKAGES)}:{node.lineno} imports {name}")
    assert not offenders, offenders


@pytest.mark.parametrize("folder", sorted(EXPECTED))
def test_package_ships_the_repository_license(folder):
    """Each package is built alone (its sdist and wheel hold its LICENSE): a copy of the root
    LICENSE, not a link (sdists store links as links, which dangle once unpacked)."""
    license_file = PACKAGES / folder / "LICENSE"
    assert not license_file.is_symlink()
    assert license_file.read_bytes() == (PACKAGES.parent / "LICENSE").read_bytes()
