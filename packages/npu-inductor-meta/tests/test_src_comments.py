"""Source comments and docstrings say what and why in words (issue 35): a catalogue id ("A54",
"GT10") names a feature only in test markers (``@pytest.mark.feature``) and docs, never in a src
comment or docstring, where a reader would have to look it up. Other strings are data (a
feature id handed to a function, a message naming an id) and are not checked."""

import ast
import io
import re
import tokenize
from pathlib import Path

from npu_inductor import catalogue

PACKAGES = Path(__file__).resolve().parents[2]
WORD = re.compile(r"\b[A-Z]{1,2}\d{2}\b")


def _catalogue_ids_in_comments(path: Path, ids: set[str]) -> list[tuple[int, str]]:
    with tokenize.open(path) as f:
        tokens = tokenize.generate_tokens(io.StringIO(f.read()).readline)
        return [
            (t.start[0], t.string)
            for t in tokens
            if t.type == tokenize.COMMENT and set(WORD.findall(t.string)) & ids
        ]


def _catalogue_ids_in_docstrings(path: Path, ids: set[str]) -> list[tuple[int, str]]:
    """(line, source line) of each docstring line (module, class, function) naming an id."""
    with tokenize.open(path) as f:
        source = f.read()
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        first = node.body[0] if node.body else None
        if not (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            continue
        for n in range(first.value.lineno, first.value.end_lineno + 1):
            if set(WORD.findall(lines[n - 1])) & ids:
                found.append((n, lines[n - 1].strip()))
    return sorted(found)


def test_no_catalogue_ids_in_src_comments_or_docstrings():
    ids = catalogue.ids()
    assert {"A54", "GT10", "N18"} <= ids  # the catalogue is what the check reads
    found = []
    for path in sorted(PACKAGES.glob("*/src/**/*.py")):
        found += [
            f"{path.relative_to(PACKAGES)}:{n}: {c}"
            for n, c in _catalogue_ids_in_comments(path, ids)
            + _catalogue_ids_in_docstrings(path, ids)
        ]
    assert not found, "say what and why in words, not a catalogue id:\n" + "\n".join(found)


def test_the_check_finds_a_planted_id(tmp_path):
    planted = tmp_path / "m.py"
    planted.write_text(
        'x = 1  # A54\ny = "A54 in a string is not a comment"\n# C99 pow: not an id\n'
    )
    assert _catalogue_ids_in_comments(planted, {"A54"}) == [(1, "# A54")]
    assert _catalogue_ids_in_docstrings(planted, {"A54"}) == []
    planted.write_text(
        '"""Module.\n\nSee A54."""\n'
        "class K:\n"
        '    """GT10 here."""\n'
        "    def f(self):\n"
        '        """Words only."""\n'
        '        return "N18"  # data, not a docstring\n'
        "async def g():\n"
        '    """C99 is no id;\n    N18 is."""\n'
        '    feature("A54")\n'
    )
    assert _catalogue_ids_in_docstrings(planted, {"A54", "GT10", "N18"}) == [
        (3, 'See A54."""'),
        (5, '"""GT10 here."""'),
        (11, 'N18 is."""'),
    ]
