"""scripts/mutation.py's list of equivalent mutants (test/mutation_equivalents.txt): every entry
names a mutant the script generates from the current source, so the score it prints excluding
them stays true when the code moves."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _mutation():
    spec = importlib.util.spec_from_file_location("mutation", REPO / "scripts" / "mutation.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_listed_equivalent_is_a_mutant_of_the_current_source():
    mutation = _mutation()
    path = REPO / mutation.EQUIVALENTS
    assert path.exists()
    listed = mutation.read_equivalents(path)
    assert mutation.stale_equivalents(listed) == []


def test_a_moved_or_unknown_entry_is_reported(tmp_path):
    mutation = _mutation()
    path = tmp_path / "equivalents.txt"
    path.write_text(
        "# comment\n\n"
        "dynamics/budgets.py | 1:0 | comparison -> GtE | no such mutant on line 1\n"
        "stream/nothing.py | 3:4 | returns None | not a target\n"
    )
    listed = mutation.read_equivalents(path)
    assert len(listed) == 2
    assert mutation.stale_equivalents(listed) == [
        "dynamics/budgets.py: no mutant comparison -> GtE at 1:0",
        "stream/nothing.py: not a target",
    ]


@pytest.mark.parametrize("line", ["a | 1:0 | b", "a | 1:0 | b | ", "a | | b | reason"])
def test_a_malformed_line_is_refused(tmp_path, line):
    path = tmp_path / "equivalents.txt"
    path.write_text(line + "\n")
    with pytest.raises(
        SystemExit, match=re.escape("expected 'module | line:column | mutation | reason'")
    ):
        _mutation().read_equivalents(path)
