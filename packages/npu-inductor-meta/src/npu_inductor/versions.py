"""Sibling version ranges: which releases of each other the installed components work with.

Every package is versioned and released on its own, so an environment can hold a component
next to a sibling it was never released with (``pip install --no-deps``, one package
upgraded alone, an editable checkout beside wheels). The ranges have one source, the
distributions' own metadata (``Requires-Dist``), which pip enforces at install:

- a hard dependency on a sibling (``npu-inductor-core>=0.1,<0.2``; npu-inductor's on every
  component) is a range;
- a sibling a component talks to through entry points without depending on it (npu-lowering
  asks for npu-launcher's ``npu_inductor.kernel_launcher`` entries, for instance) is declared
  in the component's extra ``siblings`` (``pip install "npu-lowering[siblings]"`` installs
  them in range); it is checked only when the sibling is installed. Requirements under any
  other extra (npu-inductor's ``sim``) are ranges in the same way.

``check()`` runs at ``npu_inductor.enable()`` before any component is loaded: a component
whose sibling is out of range fails with both versions and the pip command that fixes it.
``matrix()`` is what ``npu-inductor doctor`` prints.

Versions here are plain releases (``X.Y.Z``, what tools/bump_version.py writes); a local
label (``0.1.0+torch2.13``, npu-sim's per-torch wheels) is ignored in comparisons, as in
PEP 440 specifiers without one.
"""

from __future__ import annotations

import operator
import re
from dataclasses import dataclass
from importlib import metadata

PREFIX = "npu-"  # the project's distributions; requirements on anything else are not ours to check
META = "npu-inductor"
OK, TOO_OLD, TOO_NEW, EXCLUDED = "ok", "too old", "too new", "excluded"

_REQUIREMENT = re.compile(
    r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*\(?(?P<spec>[^;()]*)\)?"
    r"\s*(?:;\s*(?P<marker>.*))?$"
)
_EXTRA_MARKER = re.compile(r"""^extra\s*==\s*['"](?P<extra>[^'"]+)['"]$""")
_CLAUSE = re.compile(r"^\s*(?P<op>~=|==|!=|<=|>=|<|>)\s*(?P<version>[0-9][0-9A-Za-z.*+!-]*)\s*$")


class SiblingVersionError(RuntimeError):
    """Installed components and siblings they talk to that are not releases that work together;
    ``rows`` holds every out-of-range pair, ``row`` the first."""

    def __init__(self, rows: list["Range"]):
        self.rows, self.row = rows, rows[0]
        super().__init__("\n".join(r.message() for r in rows))


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def release(version: str) -> tuple[int, ...]:
    """'0.1.0' -> (0, 1, 0); local labels and pre/post/dev suffixes are ignored (see module doc)."""
    head = re.match(r"^\s*(?:\d+!)?(\d+(?:\.\d+)*)", version)
    if head is None:
        raise ValueError(f"not a release version: {version!r}")
    return tuple(int(p) for p in head.group(1).split("."))


def _padded(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)), b + (0,) * (n - len(b))


_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _clause_holds(op: str, bound: str, version: str) -> bool:
    have = release(version)
    if op in ("==", "!=") and bound.endswith(".*"):
        prefix = release(bound[:-2])
        equal = _padded(have, prefix)[0][: len(prefix)] == prefix
        return equal if op == "==" else not equal
    want = release(bound)
    if op == "~=":  # >= bound, == bound's prefix without its last part
        prefix = want[:-1]
        return _padded(have, want)[0] >= _padded(have, want)[1] and have[: len(prefix)] == prefix
    a, b = _padded(have, want)
    if op == "==":
        return a == b
    if op == "!=":
        return a != b
    return _ORDER[op](a, b)


def contains(spec: str, version: str) -> str:
    """OK when ``version`` satisfies every clause of ``spec`` ('>=0.1,<0.2'), else which way it misses."""
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        m = _CLAUSE.match(clause)
        if m is None:
            raise ValueError(f"unsupported version clause {clause!r} in {spec!r}")
        if not _clause_holds(m["op"], m["version"], version):
            if m["op"] == "!=":
                return EXCLUDED
            have, bound = _padded(release(version), release(m["version"].removesuffix(".*")))
            return TOO_OLD if have < bound or (have == bound and m["op"] == ">") else TOO_NEW
    return OK


@dataclass(frozen=True)
class Range:
    """``component`` (at ``version``) works with ``sibling`` in ``spec``; ``installed`` is what is there."""

    component: str
    version: str
    sibling: str
    spec: str
    how: str  # "depends on it" or "talks to it through entry points (extra 'siblings')"
    installed: str | None

    @property
    def status(self) -> str:
        return OK if self.installed is None else contains(self.spec, self.installed)

    def pip_command(self) -> str:
        fix = f'pip install "{self.sibling}{self.spec}"'
        if (
            self.status == TOO_NEW
        ):  # the sibling is newer than this component knows: upgrade the component instead
            return f"pip install -U {self.component}  (or {fix})"
        return fix

    def message(self) -> str:
        return (
            f"{self.component} {self.version} works with {self.sibling}{self.spec} ({self.how}), but "
            f"{self.sibling} {self.installed} is installed ({self.status}). Fix: {self.pip_command()}"
        )


def _requirement(line: str) -> tuple[str, str, str | None] | None:
    """'npu-launcher<0.2,>=0.1; extra == "siblings"' -> ('npu-launcher', '<0.2,>=0.1', 'siblings');
    None for requirements with markers other than one extra (not used for our siblings)."""
    m = _REQUIREMENT.match(line)
    if m is None:
        return None
    extra = None
    if m["marker"]:
        em = _EXTRA_MARKER.match(m["marker"].strip())
        if em is None:
            return None
        extra = em["extra"]
    return normalize(m["name"]), _ordered_spec(m["spec"]), extra


def _ordered_spec(spec: str) -> str:
    """'<0.2,>=0.1' (as metadata stores it) -> '>=0.1,<0.2' (as people write it): lower bounds first."""
    clauses = [c.strip().replace(" ", "") for c in spec.split(",") if c.strip()]
    return ",".join(sorted(clauses, key=lambda c: c.startswith("<")))


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def declared(dist: metadata.Distribution) -> list[Range]:
    """The sibling ranges ``dist`` declares, with what is installed of each."""
    own = normalize(dist.metadata["Name"])
    rows = []
    for line in dist.requires or []:
        req = _requirement(line)
        if req is None or not req[0].startswith(PREFIX) or req[0] == own:
            continue
        name, spec, extra = req
        how = (
            "depends on it"
            if extra is None
            else "talks to it through entry points (extra 'siblings')"
            if extra == "siblings"
            else f"extra {extra!r}"
        )
        rows.append(Range(own, dist.version, name, spec, how, _installed(name)))
    return rows


def checked_distributions(component_dists: list[str]) -> list[metadata.Distribution]:
    """The distributions whose ranges are checked: every component's, npu-inductor's and
    npu-inductor-core's (the first found of each name, as importlib.metadata resolves it)."""
    names = sorted({normalize(n) for n in component_dists} | {META, "npu-inductor-core"})
    out = []
    for name in names:
        try:
            out.append(metadata.distribution(name))
        except metadata.PackageNotFoundError:
            continue
    return out


def matrix(component_dists: list[str]) -> list[Range]:
    """Every declared sibling range of the checked distributions (installed siblings and absent ones)."""
    return [row for dist in checked_distributions(component_dists) for row in declared(dist)]


def check(component_dists: list[str]) -> None:
    """Raise :class:`SiblingVersionError` naming every installed sibling outside a declared range."""
    bad = [row for row in matrix(component_dists) if row.status != OK]
    if bad:
        raise SiblingVersionError(bad)
