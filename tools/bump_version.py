"""Bumps one package's version: ``python tools/bump_version.py PACKAGE major|minor|patch|X.Y.Z``.

PACKAGE is a distribution name (``npu-sim``, ``npu-inductor``) or a folder of packages/.
It rewrites ``version`` in the package's pyproject.toml (the one source of the version:
``importlib.metadata`` and the wheel read it), turns the CHANGELOG.md's "Unreleased" entries
into the new version's section under a fresh empty "Unreleased", and lists every sibling
range in the other packages' pyproject.toml (dependencies and extras) that the new version
falls outside of: widen those once the sibling is tested with the new release, and bump that
sibling too (README "Releases": the release checklist).
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "packages" / "npu-inductor-meta" / "src"))
from npu_inductor import versions  # noqa: E402  (the range check enable() runs; imports no torch)

VERSION_LINE = re.compile(r'^version = "(?P<version>[^"]+)"$', re.M)
PLAIN = re.compile(r"^\d+\.\d+\.\d+$")
UNRELEASED = "## Unreleased\n"


def packages() -> dict[str, Path]:
    """distribution name -> package folder"""
    out = {}
    for pp in sorted((ROOT / "packages").glob("*/pyproject.toml")):
        out[tomllib.loads(pp.read_text())["project"]["name"]] = pp.parent
    return out


def next_version(current: str, part: str) -> str:
    if PLAIN.match(part):
        return part
    major, minor, patch = (int(x) for x in current.split("."))
    if part == "major":
        return f"{major + 1}.0.0"
    if part == "minor":
        return f"{major}.{minor + 1}.0"
    if part == "patch":
        return f"{major}.{minor}.{patch + 1}"
    raise SystemExit(f"bump_version: {part!r} is not major, minor, patch or X.Y.Z")


def excluded_ranges(name: str, version: str) -> list[str]:
    """'packages/x/pyproject.toml: npu-y>=0.1,<0.2' for every sibling range excluding ``version``."""
    out = []
    for folder in packages().values():
        project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
        lines = list(project.get("dependencies", []))
        for extra in project.get("optional-dependencies", {}).values():
            lines += extra
        for line in lines:
            req = versions._requirement(line)
            if (
                req
                and req[0] == versions.normalize(name)
                and versions.contains(req[1], version) != versions.OK
            ):
                out.append(f"{(folder / 'pyproject.toml').relative_to(ROOT)}: {line}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("package", help="distribution name or packages/ folder")
    parser.add_argument("part", help="major, minor, patch or an explicit X.Y.Z")
    parser.add_argument(
        "--date", default=datetime.date.today().isoformat(), help="release date in the changelog"
    )
    args = parser.parse_args(argv)

    by_name = packages()
    by_folder = {folder.name: name for name, folder in by_name.items()}
    name = args.package if args.package in by_name else by_folder.get(args.package)
    if name is None:
        raise SystemExit(
            f"bump_version: no package {args.package!r} (one of {', '.join(sorted(by_name))})"
        )
    folder = by_name[name]
    pyproject = folder / "pyproject.toml"
    text = pyproject.read_text()
    current = VERSION_LINE.search(text)["version"]
    new = next_version(current, args.part)
    if versions.release(new) <= versions.release(current):
        raise SystemExit(f"bump_version: {name} {new} is not after {current}")

    changelog = folder / "CHANGELOG.md"
    log = changelog.read_text()
    if UNRELEASED not in log:
        raise SystemExit(
            f"bump_version: {changelog.relative_to(ROOT)} has no '{UNRELEASED.strip()}' section"
        )
    head, _, rest = log.partition(UNRELEASED)
    entries, sep, older = rest.partition("\n## ")
    if not entries.strip():
        raise SystemExit(
            f"bump_version: nothing under '{UNRELEASED.strip()}' in {changelog.relative_to(ROOT)}: "
            "say what changed first"
        )
    changelog.write_text(
        f"{head}{UNRELEASED}\n## {new} ({args.date})\n\n{entries.strip()}\n{sep}{older}"
    )
    pyproject.write_text(VERSION_LINE.sub(f'version = "{new}"', text, count=1))
    print(
        f"{name}: {current} -> {new} ({pyproject.relative_to(ROOT)}, {changelog.relative_to(ROOT)})"
    )
    stale = excluded_ranges(name, new)
    if stale:
        print(
            f"sibling ranges that exclude {name} {new} (widen each once tested with it, then bump that package):"
        )
        print("\n".join(f"  {s}" for s in stale))
    return 0


if __name__ == "__main__":
    sys.exit(main())
