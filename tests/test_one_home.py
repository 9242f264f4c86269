"""One home per rule: one identifier splitter and stemmer (index/lexical.py) for the index and
for paper linking, so code terms and paper terms meet on the same stems."""
from __future__ import annotations

import ast
from pathlib import Path

from codeteacher.index import lexical
from codeteacher.papers import terms

SRC = Path(__file__).resolve().parents[1] / "src" / "codeteacher"


def test_papers_use_the_index_splitter_and_stemmer():
    assert terms.stem is lexical.stem and terms.split_identifier is lexical.split_identifier
    # prose and identifiers meet: "initialized grids" in a paper, initGrids()/initializedGrid in code
    assert set(terms.words("initialized grids")) <= set(terms.code_words("initializedGrids();"))


def test_no_second_stemmer_or_splitter():
    defined = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name in ("stem", "split_identifier"):
                defined.setdefault(node.name, []).append(str(path.relative_to(SRC)))
    assert defined == {"stem": ["index/lexical.py"], "split_identifier": ["index/lexical.py"]}


def test_one_progress_display(capsys):
    from codeteacher.contracts.progress import stage_progress

    with stage_progress() as report:
        report("answering", 1, 4)
        report("answering", 4, 4)
        report("judging", 2, 2)
    err = capsys.readouterr()
    assert "answering" in err.err and "4/4" in err.err and "judging" in err.err
    assert err.out == ""  # stdout holds results only
    users = [str(p.relative_to(SRC)) for p in SRC.rglob("*.py")
             if "rich.progress" in p.read_text(encoding="utf-8")]
    assert users == ["contracts/progress.py"]
