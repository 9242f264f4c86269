"""Paper library: identity rules, import/merge/export, bad input, the `papers` CLI."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from codeteacher.contracts.errors import UserError
from codeteacher.papers import identity
from codeteacher.papers.cli import main as papers_main
from codeteacher.papers.formats import load_file, parse_bibtex, parse_cff, to_bibtex
from codeteacher.papers.library import Library, snapshot_path
from codeteacher.papers.model import PaperRecord

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "papers"
SHARED_BIB = REPO.parent / "shared" / "papers" / "scientific_computing.bib"


# Any connection to a non-loopback address fails the test (fixture in conftest.py).
pytestmark = pytest.mark.usefixtures("no_network")


@pytest.fixture(scope="module")
def shared_bib() -> Path:
    if not SHARED_BIB.is_file():
        pytest.skip(f"shared paper library not found at {SHARED_BIB} (expects ../shared beside "
                    "the repository)")
    return SHARED_BIB


@pytest.fixture
def lib(tmp_path, shared_bib) -> Library:
    library = Library.open(tmp_path / "papers.sqlite", create=True)
    library.add(load_file(shared_bib)[0])
    yield library
    library.close()


# ---- identity ---------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, expected", [
    ("10.6028/JRES.049.044", "10.6028/jres.049.044"),
    ("https://doi.org/10.6028/jres.049.044", "10.6028/jres.049.044"),
    ("http://dx.doi.org/10.6028/jres.049.044", "10.6028/jres.049.044"),
    ("doi: 10.6028/jres.049.044.", "10.6028/jres.049.044"),
    ("DOI:https://doi.org/10.1137/1.9780898718003", "10.1137/1.9780898718003"),
    ("https://doi.org/10.1016/0021-9991(69)90058-8", "10.1016/0021-9991(69)90058-8"),
    ("(doi:10.1016/0021-9991(69)90058-8)", None),  # a leading parenthesis is not a DOI
    ("10.1016/0021-9991(69)90058-8),", "10.1016/0021-9991(69)90058-8"),
    ("https://doi.org/10.1002%2Fandp.19213690304", "10.1002/andp.19213690304"),
    ("not a doi", None), ("11.1234/x", None), ("", None),
])
def test_normalize_doi(raw, expected):
    assert identity.normalize_doi(raw) == expected


@pytest.mark.parametrize("raw, expected", [
    ("2205.11052", "2205.11052"), ("arXiv:2205.11052v3", "2205.11052"),
    ("https://arxiv.org/abs/2205.11052v2", "2205.11052"),
    ("https://arxiv.org/pdf/2205.11052v1.pdf", "2205.11052"),
    ("http://export.arxiv.org/abs/1604.03155", "1604.03155"),
    ("10.48550/arXiv.2205.11052", "2205.11052"), ("https://doi.org/10.48550/ARXIV.2205.11052", "2205.11052"),
    ("hep-th/9901001", "hep-th/9901001"), ("arXiv:hep-th/9901001v2", "hep-th/9901001"),
    ("math.na/0601001", "math.NA/0601001"), ("0803.0982", "0803.0982"),
    ("2205.1105", None), ("1412.12345", None), ("2213.12345", None), ("10.6028/jres.049.044", None), ("", None),
])
def test_normalize_arxiv(raw, expected):
    assert identity.normalize_arxiv(raw) == expected


def test_aliases_unify_and_identifiers_parse():
    ids = identity.canonical_ids({"doi": "https://doi.org/10.48550/arXiv.2205.11052v2",
                                  "openalex": "https://openalex.org/w2029573958"})
    assert ids == {"doi": "10.48550/arxiv.2205.11052v2", "arxiv": "2205.11052",
                   "openalex": "W2029573958"}
    assert identity.parse_identifier("arXiv:2205.11052") == ("arxiv", "2205.11052")
    assert identity.parse_identifier("https://doi.org/10.1/X") is None  # too short a prefix
    assert identity.parse_identifier("https://doi.org/10.1234/X") == ("doi", "10.1234/x")
    assert identity.parse_identifier("W123") == ("openalex", "W123")
    assert identity.normalize_title("Über die {P}artiellen -- Differenzengleichungen!") == \
        "uber die partiellen differenzengleichungen"
    assert identity.surname("N{\\'e}d{\\'e}lec, Jean-Claude") == "nedelec"
    assert identity.surname("Jean-Pierre Berenger") == "berenger"


def test_same_title_years_within_one():
    t = "Methods of conjugate gradients for solving linear systems"
    assert identity.same_title_and_year(t, 1952, t.upper() + ".", 1953)
    assert not identity.same_title_and_year(t, 1952, t, 1954)
    assert not identity.same_title_and_year(t, 1952, "Other title", 1952)


# ---- the shared library -----------------------------------------------------------------------

def test_import_shared_library_and_reimport(lib, shared_bib):
    assert len(lib) == 60
    again = lib.add(load_file(shared_bib)[0])
    assert (len(again.added), len(again.merged), len(again.unchanged)) == (0, 0, 60)
    assert len(lib) == 60
    keys = [r.key for r in lib.all()]
    assert len(set(keys)) == 60
    # the 2022 preprint and the 2024 paper share a title but are two years apart: two records
    assert lib.get("muralikrishnan2024scaling").key != lib.get("arXiv:2205.11052").key


def test_lookup_by_any_identifier_form(lib):
    assert lib.get("https://doi.org/10.6028/JRES.049.044").key == "hestenes1952methods"
    assert lib.get("doi:10.1016/0021-9991(69)90058-8").key == "birdsall1969clouds"
    assert lib.get("https://arxiv.org/abs/1604.03155v2").key == "vico2016fast"
    rec = lib.get("szego1939orthogonal")
    assert rec.authors == ["Szegő, Gábor"]
    assert lib.get("nedelec1980mixed").title == "Mixed finite elements in ℝ^3"
    assert lib.get("unknown-key") is None


def test_search_ranks_topical_records(lib):
    top = [r.key for r, _ in lib.search("conjugate gradient", 3)]
    assert top[0] == "hestenes1952methods"
    assert [r.key for r, _ in lib.search("cloud-in-cell charge assignment", 2)][0] == \
        "birdsall1969clouds"
    assert [r.key for r, _ in lib.search("10.1090/S0025-5718-1965-0178586-1")] [0] == \
        "cooley1965algorithm"
    assert lib.search('NEAR("gradient* AND -- )', 5)[0][0].key  # no FTS syntax reaches SQLite


def test_merge_by_identifier_and_by_title_year(lib):
    enriched = PaperRecord(key="hs52", title="Methods of Conjugate Gradients",  # other title
                           ids={"doi": "doi:10.6028/JRES.049.044", "openalex": "W2029573958"},
                           citation_count=9000, sources={"*": "openalex"})
    by_title = PaperRecord(key="cooley-preprint", title="An algorithm for the machine "
                           "calculation of complex Fourier series.", year=1964,
                           ids={"arxiv": "hep-th/9901001"}, keywords=["radix-2"])
    report = lib.add([enriched, by_title])
    assert report.merged == [("hs52", "hestenes1952methods"),
                             ("cooley-preprint", "cooley1965algorithm")]
    assert len(lib) == 60
    hs = lib.get("W2029573958")
    assert hs.key == "hestenes1952methods" and hs.citation_count == 9000
    assert hs.title.startswith("Methods of conjugate gradients for solving")  # first source wins
    assert hs.sources["citation_count"] == "openalex" and "hs52" in hs.aliases
    assert lib.get("hs52").key == "hestenes1952methods"
    ct = lib.get("arXiv:hep-th/9901001")
    assert ct.key == "cooley1965algorithm" and "radix-2" in ct.keywords


def test_same_key_different_work_gets_new_key(lib):
    other = PaperRecord(key="hestenes1952methods", title="A different paper", year=1990)
    report = lib.add([other])
    assert report.added == ["hestenes1952methodsa"]
    assert lib.get("hestenes1952methods").year == 1952


def test_snapshot_and_exports_round_trip(lib, tmp_path):
    snap = snapshot_path(lib.path)
    lines = snap.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 60 and [json.loads(x)["key"] for x in lines] == sorted(
        json.loads(x)["key"] for x in lines)
    other = Library.open(tmp_path / "copy.sqlite", create=True)
    assert len(other.add(load_file(snap)[0]).added) == 60
    assert [r.model_dump() for r in other.all()] == [r.model_dump() for r in lib.all()]
    records, problems = parse_bibtex(to_bibtex(lib.all()), "export.bib")
    assert problems == [] and len(records) == 60
    back = {r.key: r.normalized() for r in records}
    for rec in lib.all():
        got = back[rec.key]
        assert (got.title, got.authors, got.year, got.ids, got.keywords) == \
            (rec.title, rec.authors, rec.year, rec.ids, rec.keywords), rec.key
    other.close()


# ---- bad input --------------------------------------------------------------------------------

def test_malformed_bibtex_reports_lines_and_keeps_the_rest(tmp_path):
    records, problems = load_file(DATA / "malformed.bib")
    assert [r.key for r in records] == ["good1", "good2", "good1dup"]
    assert any(p.startswith("malformed.bib:9: malformed entry skipped") for p in problems)
    assert any(p.startswith("malformed.bib:21: malformed entry skipped") for p in problems)
    assert "malformed.bib:23: entry 'notitle' has no title, skipped" in problems
    library = Library.open(tmp_path / "p.sqlite", create=True)
    report = library.add(records)
    # good1dup: same normalised title, year one apart -> merged, never doubled
    assert report.added == ["good1", "good2"] and report.merged == [("good1dup", "good1")]
    merged = library.get("good1dup")
    assert merged.key == "good1" and merged.venue == "J. Res. Nat. Bur. Standards"
    assert merged.ids == {"doi": "10.6028/jres.049.044"}


def test_duplicate_keys_in_one_file_are_merged():
    text = ("@article{a, title={Same work}, year={2000}}\n"
            "@article{a, title={Same work}, year={2000}, doi={10.1234/abc}}\n")
    records, problems = parse_bibtex(text, "dup.bib")
    assert len(records) == 2 and "dup.bib:2: duplicate key 'a'" in problems[0]


def test_csl_json_and_cff_import(tmp_path):
    records, problems = load_file(DATA / "library.csl.json")
    assert [r.key for r in records] == ["yee1966", "stroustrup2013"]
    assert len(problems) == 2
    library = Library.open(tmp_path / "p.sqlite", create=True)
    library.add(records)
    yee = library.get("10.1109/tap.1966.1138693")
    assert yee.year == 1966 and yee.authors == ["Yee, Kane S."]
    assert yee.keywords == ["FDTD", "staggered grid"]
    recs, probs = parse_cff("title: x\nauthors: [\n", "CITATION.cff")
    assert recs == [] and probs[0].startswith("CITATION.cff:")


def test_corrupt_library_file_is_refused_untouched(tmp_path):
    junk = tmp_path / "papers.sqlite"
    junk.write_bytes(b"this is not a database\n" * 10)
    before = junk.read_bytes()
    with pytest.raises(UserError, match="not a paper library"):
        Library.open(junk)
    with pytest.raises(UserError, match="not a paper library"):
        Library.open(junk, create=True)
    assert papers_main(["papers", "import", str(DATA / "malformed.bib"), "--library",
                        str(junk)]) == 2
    assert junk.read_bytes() == before
    assert not snapshot_path(junk).exists()

    other = tmp_path / "other.sqlite"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t(x)")
    conn.commit()
    conn.close()
    before = other.read_bytes()
    with pytest.raises(UserError, match="wrong schema"):
        Library.open(other, create=True)
    assert other.read_bytes() == before
    with pytest.raises(UserError, match="no paper library"):
        Library.open(tmp_path / "missing.sqlite")


def test_failed_batch_writes_nothing(tmp_path, shared_bib):
    library = Library.open(tmp_path / "p.sqlite", create=True)
    good = load_file(shared_bib)[0][:3]

    class Boom(PaperRecord):
        def normalized(self):
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        library.add(good + [Boom(key="x", title="y")])
    assert len(library) == 0 and not snapshot_path(library.path).exists()


# ---- CLI --------------------------------------------------------------------------------------

def test_cli_import_search_show_export(tmp_path, shared_bib, capsys):
    db = str(tmp_path / "lib" / "papers.sqlite")
    assert papers_main(["papers", "import", str(shared_bib), str(DATA / "malformed.bib"),
                        "--library", db]) == 0
    out, err = capsys.readouterr()
    # malformed.bib's three good entries are works already in the shared library: merged
    assert "60 added, 3 merged" in out and "malformed.bib:9" in err
    assert papers_main(["papers", "search", "fast Fourier transform", "--library", db,
                        "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits[0]["key"] == "cooley1965algorithm"
    assert papers_main(["papers", "show", "arXiv:2205.11052", "--library", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["key"] == "muralikrishnan2022scaling_arxiv"
    assert papers_main(["papers", "show", "10.6028/jres.049.044", "--library", db]) == 0
    assert "Hestenes" in capsys.readouterr().out
    assert papers_main(["papers", "show", "nope", "--library", db]) == 2
    assert "no paper 'nope'" in capsys.readouterr().err
    out_file = tmp_path / "out.bib"
    assert papers_main(["papers", "export", "--format", "bibtex", "-o", str(out_file),
                        "--library", db]) == 0
    assert len(parse_bibtex(out_file.read_text(encoding="utf-8"))[0]) == 60
    assert papers_main(["papers", "export", "--format", "jsonl", "--library", db]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 60
    assert papers_main(["papers", "import", str(tmp_path / "missing.bib"), "--library",
                        db]) == 2
