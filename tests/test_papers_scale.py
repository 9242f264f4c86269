"""Paper links at library scale: vectors stored once per library change (incremental), the
prepared link state, the ANN index beside the library, citations ranked first, and an index's
term/citation cache. Real SQLite, the packaged MiniLM and FAISS, on small generated libraries."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from codeteacher.contracts.models import Chunk
from codeteacher.contracts.settings import Settings
from codeteacher.papers import linking
from codeteacher.papers.api import import_files
from codeteacher.papers.citations import citations_in_chunks, resolve
from codeteacher.papers.library import Library
from codeteacher.papers.linking import CitationMap, open_linker

pytestmark = pytest.mark.usefixtures("no_network")

TOPICS = [
    ("sparse", "Sparse matrix ordering for direct factorisation",
     "Nested dissection orderings reduce fill-in during Cholesky factorisation."),
    ("wave", "Spectral element methods for acoustic waves",
     "High-order spectral elements resolve acoustic wave propagation with little dispersion."),
    ("mesh", "Adaptive mesh refinement for hyperbolic conservation laws",
     "Block-structured refinement follows shocks in hyperbolic systems."),
    ("mc", "Monte Carlo transport of neutrons",
     "Particles are tracked through materials, sampling collisions from cross sections."),
    ("io", "Parallel I/O for checkpointing large simulations",
     "Collective writes aggregate data from many ranks into few files."),
]


def bib(entries: list[tuple[str, str, str, int]]) -> str:
    return "\n".join(f"@article{{{k},\n  title = {{{t}}},\n  author = {{Doe, Jane}},\n"
                     f"  year = {{{y}}},\n  abstract = {{{a}}}\n}}\n" for k, t, a, y in entries)


def generated(n: int, start: int = 0) -> list[tuple[str, str, str, int]]:
    """n distinct records: the topics above, varied by a numbered study."""
    out = []
    for i in range(start, start + n):
        key, title, abstract = TOPICS[i % len(TOPICS)]
        out.append((f"{key}{i}", f"{title}: study {i}", f"{abstract} Case {i}.", 1990 + i % 30))
    return out


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def vector_rows(lib_path: Path) -> dict[str, str]:
    with sqlite3.connect(lib_path) as c:
        return dict(c.execute("SELECT key, hash FROM paper_vectors"))


def test_import_embeds_only_new_and_changed_records(tmp_path):
    lib = tmp_path / "papers.sqlite"
    first = import_files([write(tmp_path, "a.bib", bib(generated(12)))], library=lib)
    assert first.embedded == 12 and len(vector_rows(lib)) == 12
    before = vector_rows(lib)
    # 3 known records again (unchanged), 4 new ones: only the 4 are embedded
    second = import_files([write(tmp_path, "b.bib", bib(generated(3) + generated(4, 12)))],
                          library=lib)
    assert (len(second.added), second.embedded) == (4, 4)
    after = vector_rows(lib)
    assert len(after) == 16 and all(after[k] == h for k, h in before.items())
    again = import_files([tmp_path / "b.bib"], library=lib)
    assert again.embedded == 0 and len(again.unchanged) == 7
    # a record whose embedded text changes (a merge fills its missing keywords) is re-embedded
    extra = bib([("sparse0", "Sparse matrix ordering for direct factorisation: study 0",
                  "", 1990)]).replace("  abstract = {}\n", "  keywords = {fill-in, ordering}\n")
    third = import_files([write(tmp_path, "c.bib", extra)], library=lib)
    assert third.merged and third.embedded == 1 and vector_rows(lib)["sparse0"] != after["sparse0"]


def test_linker_is_prepared_once_and_reused_until_the_library_changes(tmp_path):
    lib = tmp_path / "papers.sqlite"
    import_files([write(tmp_path, "a.bib", bib(generated(10)))], library=lib)
    s = Settings()
    a = open_linker(lib, s)
    assert open_linker(lib, s) is a  # warm: nothing is read again
    with sqlite3.connect(lib) as c:
        gen = int(c.execute("SELECT value FROM meta WHERE name = 'generation'").fetchone()[0])
        stored = dict(c.execute("SELECT name, generation FROM derived"))
    assert stored["link_state"] == gen and all(v == gen for v in stored.values())
    linking._LINKERS.clear()  # a new process: the prepared state is read, not recomputed
    b = open_linker(lib, s)
    assert b is not a and b.keys == a.keys and np.allclose(b.vectors.vecs, a.vectors.vecs)
    import_files([write(tmp_path, "b.bib", bib(generated(2, 10)))], library=lib)
    c = open_linker(lib, s)
    assert c is not b and len(c.keys) == 12
    # records are read only when they are candidates, and then found by key
    assert c.index.record("wave11").title.startswith("Spectral element")


def test_ann_index_beside_the_library_past_the_threshold(tmp_path):
    lib = tmp_path / "papers.sqlite"
    import_files([write(tmp_path, "a.bib", bib(generated(60)))], library=lib)
    s = Settings.model_validate({"papers": {"ann_min_papers": 50}})
    linker = open_linker(lib, s)
    pv = linker.vectors
    files = list(tmp_path.glob("papers.sqlite.ann-*.faiss"))
    assert pv.ann is not None and len(files) == 1
    q = pv.vecs[7]
    exact = np.argsort(-(pv.vecs @ q))[:10]
    assert len(set(pv.nearest(q, 10)) & set(int(i) for i in exact)) >= 9
    assert abs(pv.mean_similarity(q) - float((pv.vecs @ q).mean())) < 1e-5
    mtime = files[0].stat().st_mtime_ns
    linking._LINKERS.clear()
    assert open_linker(lib, s).vectors.ann is not None
    assert files[0].stat().st_mtime_ns == mtime  # read, not rebuilt
    import_files([write(tmp_path, "b.bib", bib(generated(1, 60)))], library=lib)
    open_linker(lib, s)
    now = list(tmp_path.glob("papers.sqlite.ann-*.faiss"))
    assert len(now) == 1 and now != files  # the stale index is replaced, never read
    small = open_linker(lib, Settings())  # default threshold (2000): exact search, no index
    assert small.vectors.ann is None


def entity(cid: str, comment: str, text: str) -> Chunk:
    return Chunk(id=cid, path=f"src/{cid}.cpp", kind="function", start_line=1, end_line=30,
                 name=cid, qualified_name=cid, comment=comment, text=text, language="cpp")


def test_cited_paper_wins_over_a_semantically_closer_distractor(tmp_path):
    records = generated(20) + [
        ("target", "A note on reordering", "We discuss a method.", 1978),
        ("closer", "Nested dissection ordering to reduce fill-in of sparse Cholesky "
         "factorisation", "Orderings for sparse direct solvers: nested dissection reduces "
         "fill-in in Cholesky factorisation.", 2001)]
    text = bib(records).replace("  title = {A note on reordering}",
                                "  title = {A note on reordering},\n  doi = {10.1234/note.5678}")
    lib = tmp_path / "papers.sqlite"
    import_files([write(tmp_path, "a.bib", text)], library=lib)
    linker = open_linker(lib, Settings())
    ent = entity("order", "Nested dissection ordering of the sparse matrix to reduce fill-in "
                 "before the Cholesky factorisation; see doi:10.1234/note.5678",
                 "void nestedDissection(const Graph& g, std::vector<int>& perm) {\n"
                 "  // recursive bisection of the graph, separators numbered last\n"
                 "  bisect(g, perm, 0, g.size());\n}\n")
    cites = resolve(citations_in_chunks([ent]), linker.index)
    links = linker.link([ent], CitationMap.build(cites))["order"]
    by_key = {l.key: l for l in links}
    assert links[0].key == "target" and links[0].signal == "citation"
    assert links[0].reasons[0].startswith("cited here")
    closer = by_key["closer"]
    assert closer.signal in ("concepts", "semantic") and closer.score > 0.15
    # without the citation the distractor is the better match on content
    plain = linker.link([ent.model_copy(update={"comment": ent.comment.split(";")[0]})],
                        CitationMap())["order"]
    assert plain[0].key == "closer"


def test_index_terms_and_citations_are_cached_in_the_index(tmp_path, minipic_index):
    import shutil

    index = tmp_path / "minipic"
    shutil.copytree(minipic_index, index)
    s = Settings()
    state = linking.IndexState(index, s)
    df = state.corpus_df
    cache = json.loads((index / linking.TERMS_FILE).read_text(encoding="utf-8"))
    assert cache["n"] == df[0] == len(state.corpus) and cache["df"] == dict(df[1])
    assert len(cache["terms"]) == len(state.corpus) and cache["citations"]
    again = linking.IndexState(index, s)
    (index / linking.TERMS_FILE).write_text(json.dumps({**cache, "df": {"planted": 1}}),
                                            encoding="utf-8")
    assert again.corpus_df[1] == {"planted": 1}  # read from the cache, not recomputed
    (index / linking.TERMS_FILE).write_text("{broken", encoding="utf-8")
    assert linking.IndexState(index, s).corpus_df == df  # a broken cache is rebuilt
