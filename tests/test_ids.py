"""Identity rules (chunk ids, graph node ids, entity ids) have one home: index/layout.py."""
from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

from codeteacher.index.layout import (ChunkIds, chain_id, chain_root, file_node, module_node,
                                      node_chunk, node_path, split_node, sym_node)
from codeteacher.ingest.parse.cpp import parse_cpp
from codeteacher.ingest.parse.text import chunk_doc

SRC = Path(__file__).resolve().parents[1] / "src" / "codeteacher"
PREFIX = re.compile(r"""^[rbuf]*['"]{1,3}(sym|file|module|chain):""", re.I)


def test_node_ids_round_trip():
    cid = "src/a.cpp#function:ns::f@12"
    assert node_chunk(sym_node(cid)) == cid and node_path(sym_node(cid)) is None
    assert node_path(file_node("src/a.cpp")) == "src/a.cpp" and node_chunk(file_node("x")) is None
    assert chain_root(chain_id(cid)) == cid and chain_root(file_node("x")) is None
    assert split_node(module_node("src")) == ("module", "src")
    assert split_node(sym_node(cid)) == ("sym", cid)  # only the first colon separates


def test_chunk_ids_are_unique_per_file():
    ids = ChunkIds("a.h")
    assert [ids.new("declaration", "f", 1) for _ in range(3)] == \
        ["a.h#declaration:f@1", "a.h#declaration:f@1~2", "a.h#declaration:f@1~3"]


def test_both_parsers_use_the_one_id_rule():
    code = parse_cpp("a.h", "namespace n { int f(int a); int f(double a); }\n", language="cpp")
    assert [c.id for c in code.chunks] == ["a.h#declaration:n::f@1", "a.h#declaration:n::f@1~2"]
    doc = chunk_doc("r.md", "# A\n\nsome words here\n\n# A\n\nmore words here\n", fmt="markdown")
    assert [c.id for c in doc.chunks] == ["r.md#doc_section:A@1", "r.md#doc_section:A@5"]


def test_no_id_is_built_or_sliced_by_hand_outside_layout():
    """String literals starting with a node or entity prefix belong in index/layout.py only."""
    offenders = []
    for path in SRC.rglob("*.py"):
        if path == SRC / "index" / "layout.py":
            continue
        toks = list(tokenize.generate_tokens(io.StringIO(path.read_text("utf-8")).readline))
        for tok, nxt in zip(toks, toks[1:] + toks[:1]):
            literal = tok.string
            if tok.type == getattr(tokenize, "FSTRING_START", None):  # Python 3.12+
                literal += nxt.string if nxt.type == tokenize.FSTRING_MIDDLE else ""
            elif tok.type != tokenize.STRING:
                continue
            if PREFIX.match(literal):
                offenders.append(f"{path.relative_to(SRC)}:{tok.start[0]}: {literal[:40]}")
    assert not offenders, offenders
