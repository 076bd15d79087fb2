"""tools/bump_version.py on a copy of the packages' pyproject.toml and CHANGELOG.md files."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def bump(tmp_path, monkeypatch):
    for folder in (ROOT / "packages").iterdir():
        if (folder / "pyproject.toml").is_file():
            (tmp_path / "packages" / folder.name).mkdir(parents=True)
            for name in ("pyproject.toml", "CHANGELOG.md"):
                shutil.copy(folder / name, tmp_path / "packages" / folder.name / name)
    spec = importlib.util.spec_from_file_location(
        "bump_version", ROOT / "tools" / "bump_version.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "ROOT", tmp_path)
    folder = tmp_path / "packages" / "npu-launcher"
    # the copy starts with nothing unreleased, whatever the real file holds today
    log = folder / "CHANGELOG.md"
    text = log.read_text()
    start = text.index("## Unreleased\n")
    log.write_text(text[:start] + "## Unreleased\n" + text[text.index("\n## ", start + 1) :])
    return module, folder


def test_minor_bump_rewrites_version_and_changelog_and_names_stale_ranges(bump, capsys):
    module, folder = bump
    log = folder / "CHANGELOG.md"
    log.write_text(
        log.read_text().replace("## Unreleased\n", "## Unreleased\n\n- descriptor schema 3\n", 1)
    )
    old = module.VERSION_LINE.search((folder / "pyproject.toml").read_text())["version"]
    new = module.next_version(old, "minor")
    assert module.main(["npu-launcher", "minor", "--date", "2026-12-05"]) == 0
    assert f'version = "{new}"' in (folder / "pyproject.toml").read_text()
    text = log.read_text()
    assert f"## Unreleased\n\n## {new} (2026-12-05)\n\n- descriptor schema 3\n\n## {old}" in text
    out = capsys.readouterr().out
    # npu-lowering talks to it (extra 'siblings'), npu-cache too, npu-inductor depends on it
    for dependent in ("npu-lowering", "npu-cache", "npu-inductor-meta"):
        assert f"packages/{dependent}/pyproject.toml: npu-launcher" in out


def test_a_bump_without_changelog_entries_is_refused(bump):
    module, _ = bump
    with pytest.raises(SystemExit, match="nothing under '## Unreleased'"):
        module.main(["npu-launcher", "patch"])
