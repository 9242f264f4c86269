"""Code-to-paper links: ranking, the minimum score, paper_links.json, links_for, link_target, CLI."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeteacher.contracts.errors import UserError
from codeteacher.contracts.models import Chunk
from codeteacher.contracts.settings import Settings
from codeteacher.papers.cli import main as papers_main
from codeteacher.papers.formats import load_file
from codeteacher.papers.library import Library
from codeteacher.papers.linking import (
    CitationMap,
    Linker,
    build_paper_links,
    link_target,
    links_for,
)

REPO = Path(__file__).resolve().parents[1]
SHARED_BIB = REPO.parent / "shared" / "papers" / "scientific_computing.bib"


# Any connection to a non-loopback address fails the test (fixture in conftest.py).
pytestmark = pytest.mark.usefixtures("no_network")


@pytest.fixture(scope="module")
def library_file(tmp_path_factory) -> Path:
    if not SHARED_BIB.is_file():
        pytest.skip(f"shared paper library not found at {SHARED_BIB}")
    path = tmp_path_factory.mktemp("papers") / "papers.sqlite"
    with Library.open(path, create=True) as lib:
        lib.add(load_file(SHARED_BIB)[0])
    return path


@pytest.fixture(scope="module")
def linker(library_file) -> Linker:
    """One linker (and one embedding model load) for the module."""
    with Library.open(library_file) as lib:
        return Linker(lib.all(), Settings())


def fn(cid: str, name: str, text: str, comment: str = "") -> Chunk:
    return Chunk(id=cid, path=f"src/{cid}.cpp", kind="function", start_line=1, end_line=20,
                 name=name, qualified_name=name, text=text, comment=comment, language="cpp")


CG = fn("cg", "solveCG", """template <class Op, class Vec>
int solveCG(const Op& A, const Vec& b, Vec& x, double tol, int maxit) {
  Vec r = b - A(x); Vec p = r; double rr = dot(r, r);
  for (int it = 0; it < maxit; ++it) {
    Vec Ap = A(p); double alpha = rr / dot(p, Ap);
    x += alpha * p; r -= alpha * Ap;
    double rrNew = dot(r, r); if (std::sqrt(rrNew) < tol) return it;
    p = r + (rrNew / rr) * p; rr = rrNew;
  }
  return maxit;
}""", "Solves A x = b for a symmetric positive definite operator with conjugate gradients.")
FFT = fn("fft", "fftRadix2", """void fftRadix2(std::vector<std::complex<double>>& a, bool inv) {
  const std::size_t n = a.size();
  for (std::size_t i = 1, j = 0; i < n; ++i) {
    std::size_t bit = n >> 1; for (; j & bit; bit >>= 1) j ^= bit; j ^= bit;
    if (i < j) std::swap(a[i], a[j]);
  }
  for (std::size_t len = 2; len <= n; len <<= 1) {
    double ang = 2 * M_PI / len * (inv ? 1 : -1);
    std::complex<double> wl(std::cos(ang), std::sin(ang));
    for (std::size_t i = 0; i < n; i += len) {
      std::complex<double> w(1);
      for (std::size_t k = 0; k < len / 2; ++k) {
        auto u = a[i + k], v = a[i + k + len / 2] * w;
        a[i + k] = u + v; a[i + k + len / 2] = u - v; w *= wl;
      }
    }
  }
}""", "In-place iterative radix-2 fast Fourier transform: bit reversal, then butterflies.")
CIC = fn("cic", "depositCharge", """void depositCharge(const Particles& p, Grid& rho) {
  for (std::size_t n = 0; n < p.size(); ++n) {
    double x = p.x[n] / rho.dx - 0.5; int i = int(std::floor(x)); double w = x - i;
    rho(i) += p.q * (1 - w) / rho.dx; rho(i + 1) += p.q * w / rho.dx;
  }
}""", "Scatter particle charge to the grid with linear cloud-in-cell weights.")
GETTER = fn("get", "extent", "int extent(int d) const { return extent_[d]; }  // cells along d")
ARGS = fn("args", "parseArgs", """Options parseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--steps") o.steps = std::stoi(argv[++i]);
    else if (a == "--out") o.out = argv[++i];
    else throw std::invalid_argument("unknown option " + a);
  }
  return o;
}""", "Parses the command line.")


def test_semantic_links_rank_the_method_paper_first(linker):
    links = linker.link([CG, FFT, CIC], CitationMap())
    assert links["cg"][0].key == "hestenes1952methods"
    assert links["fft"][0].key == "cooley1965algorithm"
    assert {l.key for l in links["cic"][:2]} == {"birdsall1969clouds", "hockney1988computer"}
    for ls in links.values():
        assert all(l.reasons and 0.15 <= l.score <= 1 for l in ls)
        assert [l.score for l in ls] == sorted((l.score for l in ls), reverse=True)
    assert any(r.startswith("shared concepts: conjugate") for r in links["cg"][0].reasons)


def test_minimum_score_cuts_weak_links(linker):
    assert Settings().papers.min_score == 0.15
    links = linker.link([GETTER, ARGS, CG], CitationMap())
    assert "get" not in links and "args" not in links  # nothing applicable: nothing linked
    strict = Settings.model_validate({"papers": {"min_score": 0.95}})
    strict_linker = Linker(linker.papers, strict, embedder=linker.embedder)
    assert strict_linker.link([CG, FFT, CIC], CitationMap()) == {}


def test_explicit_citation_links_even_without_shared_content(linker):
    from codeteacher.papers.citations import citations_in_chunks, resolve

    chunk = fn("rng", "nextRandom", "std::uint64_t next() { s ^= s << 13; s ^= s >> 7; "
               "s ^= s << 17; return s; }", "Generator of Devroye (1986), chapter 2.")
    cites = resolve(citations_in_chunks([chunk]), linker.index)
    links = linker.link([chunk], CitationMap.build(cites))["rng"]
    top = next(l for l in links if l.key == "devroye1986nonuniform")
    assert top.score >= 0.6 and top.reasons[0].startswith("cited here: 'Devroye (1986'")


# ---- on a real index of the sample app --------------------------------------------------------

@pytest.fixture(scope="module")
def linked_index(tmp_path_factory, minipic_index, library_file) -> Path:
    """A private copy of the session's sample-app index with paper_links.json built."""
    import shutil

    index = tmp_path_factory.mktemp("linked") / "minipic"
    shutil.copytree(minipic_index, index)
    report = build_paper_links(index, library_file, Settings())
    assert report.papers_in_library == 60 and report.entities_linked > 10
    assert report.citations_resolved >= 40
    return index


def _links(index: Path) -> dict:
    return json.loads((index / "paper_links.json").read_text(encoding="utf-8"))


def _entity(doc: dict, qualified_name: str) -> dict:
    hits = [e for e in doc["entities"].values() if e["name"] == qualified_name]
    assert hits, qualified_name
    return max(hits, key=lambda e: e["end_line"] - e["start_line"])


def test_build_paper_links_on_minipic(linked_index):
    doc = _links(linked_index)
    assert doc["schema_version"] == 1 and doc["min_score"] == 0.15
    assert not [p for p in linked_index.iterdir() if p.name.endswith(".tmp")]
    assert _entity(doc, "minipic::CGSolver::solve")["links"][0]["key"] == "hestenes1952methods"
    assert {l["key"] for l in _entity(doc, "minipic::depositChargeCIC")["links"][:2]} == \
        {"birdsall1969clouds", "hockney1988computer"}
    assert _entity(doc, "minipic::detail::fft1d")["links"][0]["key"] == "cooley1965algorithm"
    assert _entity(doc, "minipic::borisPush")["links"][0]["key"] == "boris1970relativistic"
    for ent in doc["entities"].values():
        assert all(l["score"] >= 0.15 and l["reasons"] for l in ent["links"])
    kinds = {c["kind"] for c in doc["citations"]}
    assert {"doi", "author_year", "bibtex", "cff"} <= kinds


def test_links_for_answer_evidence(linked_index):
    doc = _links(linked_index)
    solve = next(eid for eid, e in doc["entities"].items()
                 if e["name"] == "minipic::CGSolver::solve")
    links = links_for(linked_index, chunk_ids=[solve], paths=["src/deposit.cpp"], k=4)
    keys = [l.key for l in links]
    assert "hestenes1952methods" in keys and "birdsall1969clouds" in keys
    hs = next(l for l in links if l.key == "hestenes1952methods")
    assert solve in hs.attached_to
    assert [l.score for l in links] == sorted((l.score for l in links), reverse=True)
    assert links_for(linked_index, chunk_ids=["no-such-id"]) == []
    assert links_for(linked_index.parent / "missing", chunk_ids=[solve]) == []


def test_link_target_symbol_path_and_live(linked_index, library_file):
    stored = link_target(linked_index, "CGSolver::solve", k=3)
    assert stored[0].key == "hestenes1952methods"
    by_path = link_target(linked_index, "src/fft_poisson.cpp", k=5)
    assert "cooley1965algorithm" in [l.key for l in by_path]
    live = link_target(linked_index, "CGSolver::solve", library=library_file, k=3)
    assert live[0].key == "hestenes1952methods"
    with pytest.raises(UserError, match="no file or symbol"):
        link_target(linked_index, "noSuchSymbol")


def test_cli_build_and_link(fresh_minipic, library_file, capsys):
    _, index = fresh_minipic
    assert papers_main(["papers", "build", "--index", str(index), "--library",
                        str(library_file)]) == 0
    assert "entities linked" in capsys.readouterr().out
    assert papers_main(["papers", "link", "depositChargeCIC", "--index", str(index), "--json",
                        "-k", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [set(x) for x in out] == [{"key", "title", "year", "doi", "score", "signal",
                                      "reasons"}] * 3
    assert {out[0]["key"], out[1]["key"]} == {"birdsall1969clouds", "hockney1988computer"}
    assert out[0]["score"] >= out[1]["score"] >= out[2]["score"]
    assert papers_main(["papers", "link", "src/cg_solver.cpp", "--index", str(index)]) == 0
    assert "hestenes1952methods" in capsys.readouterr().out
    (index / "paper_links.json").write_text("{broken", encoding="utf-8")
    assert papers_main(["papers", "link", "depositChargeCIC", "--index", str(index)]) == 2
    assert "corrupt" in capsys.readouterr().err


def test_links_and_library_files_get_the_ordinary_mode(linked_index, library_file):
    """One atomic writer for every file (contracts/jsonio): umask-based modes, never 0600."""
    import os

    umask = os.umask(0)
    os.umask(umask)
    for path in (linked_index / "paper_links.json", library_file):
        assert path.stat().st_mode & 0o777 == 0o666 & ~umask, path


def test_index_vectors_are_reused_under_the_index_key_rule(minipic_index):
    from codeteacher.papers.linking import index_vectors, read_records

    records = read_records(minipic_index)
    keys = json.loads((minipic_index / "vector_keys.json").read_text())
    assert "" in keys  # declarations are not embedded in the index ...
    reused = index_vectors(minipic_index, records, Settings())
    embedded = {r.id for r, k in zip(records, keys) if k}
    assert embedded <= set(reused)  # ... but every embedded record is reused
    parent = {r.id: r.parent_id for r in records}
    # a record without a vector of its own borrows its whole's (a split part of a function)
    assert all(parent[i] in embedded for i in set(reused) - embedded)
