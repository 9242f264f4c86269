"""Benchmark of code-to-paper links on IPPL (not a test): precision@3 for hand-picked entities.

Parses the IPPL sources with codeteacher.ingest.parse.cpp (and its Markdown docs with parse_text),
links a dozen entities whose method is known against the shared 60-paper library, and prints a
table with the top three papers, P@3 and the reasons of the best link. Gold sets were written
from the code's purpose and the library's abstracts before looking at the results.

P@3 here is |top3 ∩ gold| / min(3, |gold|), so an entity with one applicable paper scores 1
when that paper is in its top three.

    .venv/bin/python eval/bench_papers.py [--ippl /work/corpora/ippl] [--bib FILE] [--json OUT]
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# (path, qualified name, occurrence index among same-named chunks, gold paper keys)
TARGETS = [
    ("src/LinearSolvers/PCG.h", "ippl::CG::operator()", 0,
     {"hestenes1952methods", "saad2003iterative"}),
    ("src/Interpolation/CIC.hpp", "ippl::detail::scatterToField", 0,
     {"birdsall1969clouds", "hockney1988computer", "birdsall1991plasma"}),
    ("src/PoissonSolvers/FFTOpenPoissonSolver.hpp", "ippl::FFTOpenPoissonSolver::initializeFields",
     0, {"hockney1988computer", "eastwood1979remarks", "vico2016fast", "budiardja2011parallel"}),
    ("src/FFT/FFT.hpp", "ippl::FFT::transform", 0,
     {"ayala2020heffte", "cooley1965algorithm", "frigo2005design"}),
    ("src/Random/InverseTransformSampling.h", "ippl::random::InverseTransformSampling", 0,
     {"devroye1986nonuniform"}),
    ("src/Random/Randn.h", "ippl::random::randn", 0,
     {"box1958note", "marsaglia1964convenient", "devroye1986nonuniform"}),
    ("src/FEM/Quadrature/GaussJacobiQuadrature.hpp",
     "ippl::GaussJacobiQuadrature::computeNodesAndWeights", 0,
     {"golub1969calculation", "press2007numerical", "lehrfempp", "szego1939orthogonal",
      "lowan1942table"}),
    ("src/FEM/NedelecSpace.hpp", "ippl::NedelecSpace::evaluateAx", 0,
     {"nedelec1980mixed", "hiptmair2002finite", "monk2003finite"}),
    ("src/MaxwellSolvers/StandardFDTDSolver.hpp", "ippl::StandardFDTDSolver::step", 0,
     {"yee1966numerical", "taflove1995computational", "courant1928partiellen"}),
    ("src/MaxwellSolvers/AbsorbingBC.h", "second_order_abc_face", 0,
     {"mur1981absorbing", "engquist1977absorbing", "taflove1995computational"}),
    ("src/MaxwellSolvers/NonStandardFDTDSolver.hpp", "ippl::NonStandardFDTDSolver::step", 0,
     {"fallahi2020mithra", "taflove1995computational", "yee1966numerical"}),
    ("src/Decomposition/OrthogonalRecursiveBisection.hpp",
     "ippl::OrthogonalRecursiveBisection::binaryRepartition", 0, {"berger1987partitioning"}),
]


def parse_corpus(root: Path):
    from codeteacher.ingest.parse.cpp import parse_cpp
    from codeteacher.ingest.parse.text import chunk_doc

    chunks = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if not path.is_file() or rel.startswith((".git/", "build")):
            continue
        if path.suffix in (".h", ".hpp", ".cpp", ".cc", ".cxx", ".cu", ".tpp"):
            chunks += parse_cpp(rel, path.read_text(encoding="utf-8", errors="replace")).chunks
        elif path.suffix == ".md" and "/" not in rel:
            chunks += chunk_doc(rel, path.read_text(encoding="utf-8", errors="replace"),
                                fmt="markdown").chunks
    return chunks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ippl", default="/work/corpora/ippl")
    ap.add_argument("--bib", default=str(REPO.parent / "shared" / "papers" /
                                         "scientific_computing.bib"))
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("-v", "--verbose", action="store_true", help="reasons for all top-3 links")
    args = ap.parse_args(argv)
    from codeteacher.contracts.settings import Settings
    from codeteacher.papers.formats import load_file
    from codeteacher.papers.library import Library
    from codeteacher.papers.linking import (
        CitationMap,
        Linker,
        gather_citations,
        related_ids,
    )

    root = Path(args.ippl)
    if not root.is_dir() or not Path(args.bib).is_file():
        print(f"needs the IPPL corpus ({root}) and the library ({args.bib})", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    settings = Settings()
    chunks = parse_corpus(root)
    t_parse = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        with Library.open(Path(tmp) / "papers.sqlite", create=True) as lib:
            lib.add(load_file(args.bib)[0])
            papers = lib.all()
    linker = Linker(papers, settings)
    cites, _ = gather_citations(chunks, linker.index, root)
    kinds = set(settings.papers.link_kinds)
    corpus = [c for c in chunks if c.kind in kinds]
    targets = []
    for path, qn, nth, gold in TARGETS:
        same = [c for c in chunks if c.path == path and c.qualified_name == qn
                and not c.is_declaration and c.kind != "declaration"]
        if len(same) <= nth:
            print(f"warning: {path} {qn} not found", file=sys.stderr)
            continue
        targets.append((same[nth], gold))
    t1 = time.perf_counter()
    links = linker.link([t for t, _ in targets], CitationMap.build(cites), related_ids(chunks),
                        corpus=corpus)
    t_link = time.perf_counter() - t1
    rows, total = [], 0.0
    for ent, gold in targets:
        top = links.get(ent.id, [])[:3]
        hits = sum(1 for l in top if l.key in gold)
        p3 = hits / min(3, len(gold))
        total += p3
        rows.append({"entity": f"{ent.path}::{ent.qualified_name}", "gold": sorted(gold),
                     "top3": [(l.key, l.score) for l in top], "p@3": round(p3, 3),
                     "reasons": top[0].reasons if top else [],
                     "all_reasons": {l.key: l.reasons for l in top}})
    mean = total / max(len(rows), 1)
    print(f"IPPL: {len(chunks)} chunks parsed in {t_parse:.1f}s, {len(corpus)} linkable, "
          f"{sum(1 for c in cites if c.resolved)}/{len(cites)} citations resolved; "
          f"{len(rows)} entities linked in {t_link:.1f}s (incl. model load)\n")
    print("| entity | top 3 (score) | P@3 | reasons for the top link |")
    print("| --- | --- | --- | --- |")
    for r in rows:
        top = ", ".join(f"{'**' if k in r['gold'] else ''}{k}{'**' if k in r['gold'] else ''}"
                        f" ({s:.2f})" for k, s in r["top3"]) or "(none)"
        print(f"| `{r['entity'].split('::', 1)[1]}` ({r['entity'].split('::')[0]}) | {top} | "
              f"{r['p@3']:.2f} | {'; '.join(r['reasons'])} |")
    print(f"\nmean P@3 = {mean:.3f} over {len(rows)} entities (bold = in the gold set)")
    if args.verbose:
        for r in rows:
            print(f"\n{r['entity']}")
            for key, reasons in r["all_reasons"].items():
                print(f"  {key}: {'; '.join(reasons)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"mean_p@3": mean, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
