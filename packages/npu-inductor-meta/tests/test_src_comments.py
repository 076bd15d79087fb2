"""Source comments say what and why in words (issue 35): a catalogue id ("A54", "GT10") names
a feature only in test markers (``@pytest.mark.feature``) and docs, never in a src comment,
where a reader would have to look it up."""

import io
import re
import tokenize
from pathlib import Path

from npu_inductor import catalogue

PACKAGES = Path(__file__).resolve().parents[2]


def _catalogue_ids_in_comments(path: Path, ids: set[str]) -> list[tuple[int, str]]:
    word = re.compile(r"\b[A-Z]{1,2}\d{2}\b")
    with tokenize.open(path) as f:
        tokens = tokenize.generate_tokens(io.StringIO(f.read()).readline)
        return [
            (t.start[0], t.string)
            for t in tokens
            if t.type == tokenize.COMMENT and set(word.findall(t.string)) & ids
        ]


def test_no_catalogue_ids_in_src_comments():
    ids = catalogue.ids()
    assert {"A54", "GT10", "N18"} <= ids  # the catalogue is what the check reads
    found = []
    for path in sorted(PACKAGES.glob("*/src/**/*.py")):
        found += [
            f"{path.relative_to(PACKAGES)}:{n}: {c}"
            for n, c in _catalogue_ids_in_comments(path, ids)
        ]
    assert not found, "say what and why in words, not a catalogue id:\n" + "\n".join(found)


def test_the_check_finds_a_planted_id(tmp_path):
    planted = tmp_path / "m.py"
    planted.write_text(
        'x = 1  # A54\ny = "A54 in a string is not a comment"\n# C99 pow: not an id\n'
    )
    assert _catalogue_ids_in_comments(planted, {"A54"}) == [(1, "# A54")]
