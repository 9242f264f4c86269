"""Citations in code and docs: extraction, attachment to chunks, resolution against a library."""
from __future__ import annotations

from pathlib import Path

import pytest

from codeteacher.contracts.models import Chunk
from codeteacher.papers.citations import (
    RecordIndex,
    citations_from_cff,
    citations_in_chunks,
    extract_citations,
    resolve,
)
from codeteacher.papers.formats import load_file
from codeteacher.papers.model import PaperRecord

REPO = Path(__file__).resolve().parents[1]
MINIPIC = REPO / "src" / "codeteacher" / "demo" / "minipic"
SHARED_BIB = REPO.parent / "shared" / "papers" / "scientific_computing.bib"


# Any connection to a non-loopback address fails the test (fixture in conftest.py).
pytestmark = pytest.mark.usefixtures("no_network")


@pytest.fixture(scope="module")
def index() -> RecordIndex:
    if not SHARED_BIB.is_file():
        pytest.skip(f"shared paper library not found at {SHARED_BIB}")
    return RecordIndex([r.normalized() for r in load_file(SHARED_BIB)[0]])


def found(text: str, index: RecordIndex) -> list[tuple[str, str | None]]:
    cites = resolve(extract_citations(text, chunk_id="c"), index, {"c": text})
    return [(c.kind, c.resolved) for c in cites]


def test_identifiers_in_comments(index):
    text = """// CG (see doi:10.6028/JRES.049.044), and https://doi.org/10.1016/0021-9991(69)90058-8.
    /* preprint: arXiv:2205.11052v2; also https://arxiv.org/abs/1604.03155 and
       https://math.mit.edu/~stevenj/fft-deriv.pdf, https://github.com/some/repo */"""
    assert found(text, index) == [
        ("doi", "hestenes1952methods"), ("doi", "birdsall1969clouds"),
        ("arxiv", "muralikrishnan2022scaling_arxiv"), ("arxiv", "vico2016fast"),
        ("url", "johnson2011fftderiv")]  # an unknown URL is not a citation


@pytest.mark.parametrize("text, key", [
    ("Conjugate gradients (Hestenes & Stiefel 1952).", "hestenes1952methods"),
    ("as in Hestenes and Stiefel [1952]", "hestenes1952methods"),
    ("unpreconditioned, see Saad (2003), alg. 6.18", "saad2003iterative"),
    ("following Dongarra et al. (2016)", "dongarra2016high"),
    ("Muralikrishnan et al. 2024", "muralikrishnan2024scaling"),
    ("(Golub and Welsch, 1969)", "golub1969calculation"),
    ("Hairer, Lubich and Wanner (2003) explain why", "hairer2003geometric"),
    ("Courant, Friedrichs & Lewy 1928", "courant1928partiellen"),
    ("the Nédélec (1980) edge elements", "nedelec1980mixed"),
    ("Nedelec 1980 elements", "nedelec1980mixed"),
    ("Yee's (1966) staggered grid", "yee1966numerical"),
    ("Marsaglia 2003", "marsaglia2003xorshift"),
])
def test_author_year_mentions(text, key, index):
    assert found(text, index) == [("author_year", key)]


def test_noise_is_not_a_citation(index):
    text = ("Copyright 2021 PSI. Version 2020 of C++ 2017. In 1952 nobody. ISO 9001. "
            "Released June 2019, see Table 2003.")
    assert found(text, index) == []
    # a strong but unknown mention is kept, unresolved, for the report
    assert found("Smith et al. (2019) disagree.", index) == [("author_year", None)]


def test_author_year_ambiguity_resolved_by_title_words():
    a = PaperRecord(key="gol1", title="Chebyshev semi-iterative methods", year=1961,
                    authors=["Golub, Gene H."])
    b = PaperRecord(key="gol2", title="Calculation of Gauss quadrature rules", year=1961,
                    authors=["Golub, Gene"])
    idx = RecordIndex([a, b])
    text = "// Gauss quadrature nodes via the Jacobi matrix (Golub 1961, but see ...)"
    cites = resolve(extract_citations(text, chunk_id="c"), idx, {"c": text})
    assert [(c.resolved, c.resolution) for c in cites] == [("gol2", "author-year + title words")]
    cites = resolve(extract_citations("(Golub, 1961)", chunk_id="d"), idx, {"d": "no words"})
    assert cites[0].resolved is None and cites[0].resolution.startswith("ambiguous")


def test_bibtex_block_in_docs(index):
    text = """## Citing

```bibtex
@article{hs,
  title = {Methods of Conjugate Gradients for Solving Linear Systems},
  author = {Hestenes, M. and Stiefel, E.},
  year = {1952},
  doi = {10.6028/jres.049.044}
}
@software{mycode2024, title = {mycode}, author = {{The developers}}, year = {2024}}
```
"""
    cites = resolve(extract_citations(text, path="README.md", chunk_id="r", start_line=10),
                    index, {})
    assert [(c.kind, c.resolved, c.line, c.repo_level) for c in cites] == [
        ("bibtex", "hestenes1952methods", 13, True), ("bibtex", None, 19, True)]


def test_chunks_carry_their_citations():
    chunks = [
        Chunk(id="f1", path="src/cg.cpp", kind="function", start_line=40, end_line=60,
              name="solve", comment="Conjugate gradients (Hestenes & Stiefel 1952).",
              text="void solve() {\n  // see doi:10.6028/jres.049.044\n}"),
        Chunk(id="f2", path="src/cg.cpp", kind="function", start_line=70, end_line=75,
              name="other", text="void other() {}"),
    ]
    cites = citations_in_chunks(chunks)
    assert [(c.chunk_id, c.kind, c.line) for c in cites] == [
        ("f1", "author_year", 40), ("f1", "doi", 41)]


def test_citation_cff(index):
    text = """cff-version: 1.2.0
title: "mycode"
authors: [{name: "The developers"}]
preferred-citation:
  type: article
  title: "Clouds-in-clouds, clouds-in-cells physics for many-body plasma simulation"
  authors: [{family-names: Birdsall, given-names: C. K.}]
  year: 1969
  doi: 10.1016/0021-9991(69)90058-8
references:
  - type: article
    title: "Methods of conjugate gradients for solving linear systems"
    authors: [{family-names: Hestenes}]
    year: 1952
"""
    cites, problems = citations_from_cff(text)
    assert problems == []
    resolved = resolve(cites, index)
    assert [(c.kind, c.resolved) for c in resolved] == [
        ("cff", "birdsall1969clouds"), ("cff", None), ("cff", "hestenes1952methods")]
    assert all(c.repo_level for c in resolved)


# ---- the sample app ---------------------------------------------------------------------------

def _minipic_doc_chunks() -> list[Chunk]:
    from codeteacher.ingest.parse.text import chunk_doc

    out = []
    for rel in ("README.md", "docs/ALGORITHMS.md"):
        path = MINIPIC / rel
        if path.is_file():
            out += chunk_doc(rel, path.read_text(encoding="utf-8"), fmt="markdown").chunks
    return out


def test_minipic_readme_and_cff(index):
    if not (MINIPIC / "README.md").is_file() or not (MINIPIC / "CITATION.cff").is_file():
        pytest.skip("src/codeteacher/demo/minipic README.md / CITATION.cff not present yet")
    pytest.importorskip("codeteacher.ingest.parse.text")
    chunks = [c for c in _minipic_doc_chunks() if c.path == "README.md"]
    cites = resolve(citations_in_chunks(chunks), index,
                    {c.id: c.text for c in chunks})
    resolved = {c.resolved for c in cites if c.resolved}
    assert {"birdsall1991plasma", "hockney1988computer", "birdsall1969clouds",
            "cooley1965algorithm", "hestenes1952methods", "saad2003iterative",
            "boris1970relativistic", "box1958note", "marsaglia2003xorshift",
            "muralikrishnan2024scaling", "muralikrishnan2022scaling_arxiv",
            "yee1966numerical", "courant1928partiellen"} <= resolved
    assert all(c.repo_level for c in cites)
    citing = [c for c in cites if c.kind == "bibtex"]
    assert {c.resolved for c in citing} == {"birdsall1969clouds", None}  # + the software itself
    assert all(c.chunk_id and c.line > 0 for c in cites)
    unresolved = [c for c in cites if not c.resolved and c.kind != "bibtex"]
    assert unresolved == [], [(c.text, c.resolution) for c in unresolved]

    cff, problems = citations_from_cff((MINIPIC / "CITATION.cff").read_text(encoding="utf-8"))
    assert problems == []
    assert {c.resolved for c in resolve(cff, index)} >= {
        "birdsall1969clouds", "cooley1965algorithm", "hestenes1952methods",
        "boris1970relativistic", "hockney1988computer"}


def test_minipic_sources_cite_methods(index):
    parse_cpp = pytest.importorskip("codeteacher.ingest.parse.cpp").parse_cpp
    chunks = []
    for rel in ("src/cg_solver.cpp", "src/deposit.cpp", "src/fft_poisson.cpp"):
        path = MINIPIC / rel
        if not path.is_file():
            pytest.skip(f"src/codeteacher/demo/minipic/{rel} not present yet")
        chunks += parse_cpp(rel, path.read_text(encoding="utf-8")).chunks
    cites = resolve(citations_in_chunks(chunks), index, {c.id: c.text for c in chunks})
    by_chunk = {}
    for c in cites:
        by_chunk.setdefault(next(ch.name for ch in chunks if ch.id == c.chunk_id), set()).add(
            c.resolved)
    assert "hestenes1952methods" in by_chunk["solve"]
    assert {"birdsall1969clouds", "hockney1988computer"} <= by_chunk["depositChargeCIC"]
    assert any("cooley1965algorithm" in keys for keys in by_chunk.values())
    assert all(c.path.startswith("src/") and c.line >= 1 for c in cites)
