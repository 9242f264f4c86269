"""Structure graph and code-derived entities, on a small repository written for the test.

The graph must only hold edges it can justify: includes resolved to repository files, calls
resolved by qualified name or narrowed unambiguously, ownership incl. out-of-line members.
"""
from __future__ import annotations

import pytest

from codeteacher.contracts.jsonio import read_jsonl
from codeteacher.contracts.models import Chunk
from codeteacher.contracts.settings import Settings
from codeteacher.index import layout as L
from codeteacher.ingest import stages as st

REPO = {
    "include/geo/shape.h": """\
// shape.h -- abstract shapes and the total area of a scene.
#pragma once
#include <vector>
#include "geo/util.h"
#include "geo/holder.h"

namespace geo {

/// Base of every shape.
class Shape {
public:
    virtual ~Shape();
    virtual double area() const = 0;
};

/// A circle of given radius.
class Circle : public Shape {
public:
    explicit Circle(double r);
    double area() const override;
    double scaled(double f) const;
private:
    double r_;
};

double totalArea(const std::vector<Shape*>& shapes);

}  // namespace geo
""",
    "include/geo/util.h": """\
// util.h -- small math helpers.
#pragma once
namespace geo {
double square(double x);
}
""",
    "include/geo/holder.h": """\
#pragma once
namespace geo {
template <typename T>
class Holder {
public:
    T value;
};
class IntHolder : public Holder<int> {
public:
    int twice() const { return value * 2; }
};
}
""",
    "src/util.cpp": """\
#include "geo/util.h"
namespace geo {
double square(double x) { return x * x; }
}
""",
    "src/shape.cpp": """\
// shape.cpp -- out-of-line definitions of the shapes.
#include "../include/geo/shape.h"
#include <cmath>

namespace geo {

Circle::Circle(double r) : r_(r) {}

double Circle::area() const { return 3.14159 * square(r_); }

double Circle::scaled(double f) const {
    double a = area();
    return a * square(f) + helper(1);
}

double totalArea(const std::vector<Shape*>& shapes) {
    double sum = 0;
    for (auto* s : shapes) sum += s->area();
    return sum + geo::square(0.0) + std::sqrt(sum);
}

}  // namespace geo
""",
    "src/a.cpp": """\
#include "missing/nothere.h"
static int helper(int x) { return x + 1; }
int runA() { return helper(1); }
""",
    "other/b.cpp": """\
static int helper(int x) { return x + 2; }
int runB() { return helper(2); }
""",
    "other/c.cpp": """\
#include "config.h"
int useHelper() { return helper(3) + runA() + runB(); }
""",
    "other/config.h": "#pragma once\n#define OTHER_CONFIG 1\n",
    "liba/config.h": "#pragma once\n#define LIBA_CONFIG 1\n",
    "README.md": "# geo\n\nShapes and areas.\n",
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("graph")
    work, structure = _graph_of(root, REPO)
    entities = st.stage_entities(work / L.FILES, work / L.CHUNKS, work / L.STRUCTURE,
                                 work / L.ENTITIES)
    return structure, entities, read_jsonl(work / L.CHUNKS, Chunk)


def _graph_of(root, files: dict[str, str]):
    """Collect, parse and graph a repository (root/repo) holding `files`: the stage folder
    and the structure."""
    repo, work = root / "repo", root / "work"
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    work.mkdir()
    s = Settings()
    st.stage_collect(repo, work / L.FILES, s)
    st.stage_parse(work / L.FILES, work / L.CHUNKS, s)
    return work, st.stage_graph(work / L.FILES, work / L.CHUNKS, work / L.STRUCTURE)


def _sym(chunks, qualified: str, path: str | None = None, declaration: bool = False) -> str:
    hits = [c for c in chunks if c.qualified_name == qualified and c.is_declaration == declaration
            and (path is None or c.path == path)]
    assert len(hits) == 1, f"{qualified} in {path}: {[c.id for c in hits]}"
    return f"sym:{hits[0].id}"


def _edges(structure, typ: str) -> set[tuple[str, str]]:
    return {(e.source, e.target) for e in structure.edges if e.type == typ}


def _called_by(structure, node: str) -> set[str]:
    """The call targets of one graph node."""
    return {t for s_, t in _edges(structure, "call") if s_ == node}


def test_include_edges_resolve_to_repository_files(built):
    structure, _, _ = built
    assert _edges(structure, "include") == {
        ("file:include/geo/shape.h", "file:include/geo/util.h"),
        ("file:include/geo/shape.h", "file:include/geo/holder.h"),
        ("file:src/util.cpp", "file:include/geo/util.h"),
        ("file:src/shape.cpp", "file:include/geo/shape.h"),   # written with ../
        ("file:other/c.cpp", "file:other/config.h"),          # nearest of two config.h
    }
    # <vector>, <cmath> and the missing header are counted, never invented.
    assert structure.unresolved_includes == 3


def test_call_edges_resolved_by_qualified_and_unqualified_name(built):
    structure, _, chunks = built
    calls = _edges(structure, "call")
    square = _sym(chunks, "geo::square", "src/util.cpp")
    area = _sym(chunks, "geo::Circle::area", "src/shape.cpp")
    scaled = _sym(chunks, "geo::Circle::scaled")
    total = _sym(chunks, "geo::totalArea", "src/shape.cpp")
    run_a, run_b = _sym(chunks, "runA"), _sym(chunks, "runB")
    helper_a = _sym(chunks, "helper", "src/a.cpp")
    helper_b = _sym(chunks, "helper", "other/b.cpp")
    use = _sym(chunks, "useHelper")
    expected = {
        (area, square),      # unqualified, unique definition (the header prototype is no target)
        (scaled, area),      # narrowed to the caller's class
        (scaled, square),
        (total, square),     # qualified geo::square
        (total, area),
        (run_a, helper_a),   # two static helpers: narrowed to the caller's file
        (run_b, helper_b),
        (use, run_a),
        (use, run_b),
    }
    assert expected <= calls
    # Ambiguous helper() from c.cpp and shape.cpp: no edge, counted as unresolved.
    assert not {(use, helper_a), (use, helper_b), (scaled, helper_a), (scaled, helper_b)} & calls
    assert structure.unresolved_calls >= 3  # two ambiguous helpers + std::sqrt
    # Declarations are never call targets.
    decl_ids = {f"sym:{c.id}" for c in chunks if c.is_declaration}
    assert not {t for _, t in calls} & decl_ids


def test_owns_file_symbols_and_class_members_across_files(built):
    structure, _, chunks = built
    owns = _edges(structure, "owns")
    symbol_chunks = [c for c in chunks if c.kind not in ("namespace_block", "doc_section",
                                                         "build", "function_part")]
    for c in symbol_chunks:
        assert (f"file:{c.path}", f"sym:{c.id}") in owns, c.id
    circle = _sym(chunks, "geo::Circle")
    for member in ("geo::Circle::area", "geo::Circle::scaled", "geo::Circle::Circle"):
        assert (circle, _sym(chunks, member, "src/shape.cpp")) in owns   # out-of-line, other file
        assert (circle, _sym(chunks, member, "include/geo/shape.h", declaration=True)) in owns
    shape = _sym(chunks, "geo::Shape")
    assert (shape, _sym(chunks, "geo::Shape::area", declaration=True)) in owns
    assert not any(src == shape and "Circle" in dst for src, dst in owns)


def test_inherits_edges(built):
    structure, _, chunks = built
    assert _edges(structure, "inherits") == {
        (_sym(chunks, "geo::Circle"), _sym(chunks, "geo::Shape")),
        (_sym(chunks, "geo::IntHolder"), _sym(chunks, "geo::Holder")),   # template base
    }


def test_nodes_modules_and_summary_counts(built):
    structure, _, chunks = built
    nodes = {n.id: n for n in structure.nodes}
    files = {f"file:{p}" for p in REPO}
    assert files <= set(nodes)
    assert {"module:", "module:include", "module:include/geo", "module:src", "module:other",
            "module:liba"} <= set(nodes)
    contains = _edges(structure, "contains")
    assert ("module:include", "module:include/geo") in contains
    assert ("module:include/geo", "file:include/geo/util.h") in contains
    assert ("module:", "file:README.md") in contains
    # Counts summarise exactly what the lists hold.
    for typ in ("include", "call", "owns", "inherits", "contains"):
        assert structure.counts.get(f"edges.{typ}", 0) == len([e for e in structure.edges
                                                                if e.type == typ])
    for typ in ("file", "module", "symbol"):
        assert structure.counts[f"nodes.{typ}"] == len([n for n in structure.nodes
                                                        if n.type == typ])
    assert structure.counts["nodes.file"] == len(REPO)
    # No duplicate edges, no self loops, every edge end is a node.
    keys = [(e.source, e.target, e.type) for e in structure.edges]
    assert len(keys) == len(set(keys))
    assert all(e.source != e.target for e in structure.edges)
    assert all(e.source in nodes and e.target in nodes for e in structure.edges)


def test_file_entities_describe_the_code(built):
    _, entities, _ = built
    by_id = {e.id: e for e in entities}
    shape = by_id["file:include/geo/shape.h"]
    assert shape.level == "file" and shape.path == "include/geo/shape.h"
    assert shape.title == "shape.h"
    assert shape.end_line == REPO["include/geo/shape.h"].count("\n")
    text = shape.text
    assert "abstract shapes and the total area" in text         # leading comment
    assert "class geo::Shape" in text and "class geo::Circle" in text  # defines
    assert "Base of every shape" in text                        # type doc comments
    assert "include/geo/util.h" in text and "vector" in text    # resolved and system includes
    assert "Included by: src/shape.cpp" in text
    cpp = by_id["file:src/shape.cpp"].text
    assert "Circle: Circle, area, scaled" in cpp                # out-of-line members by class
    assert "geo::totalArea" in cpp
    assert shape.members and all(m.startswith("include/geo/shape.h#") for m in shape.members)
    readme = by_id["file:README.md"].text
    assert "markdown doc" in readme


def test_module_entities(built):
    _, entities, _ = built
    by_id = {e.id: e for e in entities}
    geo = by_id["module:include/geo"]
    assert geo.level == "module" and geo.path == "include/geo"
    assert "shape.h" in geo.text and "util.h" in geo.text and "holder.h" in geo.text
    assert "Shape" in geo.text and "Circle" in geo.text
    assert set(geo.members) == {"file:include/geo/shape.h", "file:include/geo/util.h",
                                "file:include/geo/holder.h"}
    other = by_id["module:other"].text
    assert "useHelper" in other and "runB" in other
    include = by_id["module:include"]          # holds only a subfolder
    assert "Subfolders: include/geo" in include.text
    assert "Files: ." not in include.text and "scope ." not in include.text
    root = by_id["module:"]
    assert root.path == "." and "README.md" in root.text
    assert {"include", "src", "other", "liba"} <= set(
        root.text.split("Subfolders: ")[1].rstrip(".").split(", "))


def test_call_chain_entities(built):
    _, entities, chunks = built
    chains = {e.id: e for e in entities if e.level == "call_chain"}
    scaled = _sym(chunks, "geo::Circle::scaled")[4:]
    chain = chains[f"chain:{scaled}"]
    assert chain.path == "src/shape.cpp"
    assert "geo::Circle::scaled" in chain.text
    assert "geo::Circle::area (src/shape.cpp)" in chain.text
    assert "geo::square (src/util.cpp)" in chain.text
    assert chain.members[0] == scaled
    assert _sym(chunks, "geo::square", "src/util.cpp")[4:] in chain.members
    use = chains[f"chain:{_sym(chunks, 'useHelper')[4:]}"]
    assert "runA" in use.text and "runB" in use.text and "helper" not in use.text.split("calls")[1]
    # A callable with fewer than two resolved callees gets no chain.
    assert f"chain:{_sym(chunks, 'runA')[4:]}" not in chains
    # Every chain root is a real chunk and chains start at their root's lines.
    by_id = {c.id: c for c in chunks}
    for e in chains.values():
        root = by_id[e.members[0]]
        assert (e.start_line, e.end_line) == (root.start_line, root.end_line)


def test_entities_become_records_with_scope(built):
    from codeteacher.contracts.models import Entity

    _, entities, _ = built
    e = next(x for x in entities if x.id == "file:src/a.cpp")
    c = e.to_chunk("src")
    assert (c.id, c.kind, c.path, c.scope, c.text) == (e.id, "file", "src/a.cpp", "src", e.text)
    assert Entity.model_validate(e.model_dump(mode="json")) == e


ALTERNATIVES = {
    # A base class and two implementations: the driver calls through a base pointer.
    "src/comm.h": "#pragma once\nclass Comm {\npublic:\n  virtual void exchange() {}\n"
                  "  virtual void reduce(double* x) = 0;\n};\n",
    "src/comm_serial.cpp": '#include "comm.h"\nclass CommSerial : public Comm {\npublic:\n'
                           "  void exchange() override { }\n  void reduce(double* x) override { }\n};\n",
    "src/comm_mpi.cpp": '#include "comm.h"\nclass CommMPI : public Comm {\npublic:\n'
                        "  void exchange() override { send(); }\n  void reduce(double* x) override { }\n"
                        "  void send() { }\n};\n",
    # Unrelated classes that happen to share a method name: no common base.
    "src/timer.cpp": "class Timer {\npublic:\n  void reset() { }\n};\n",
    "src/lattice.cpp": "class Lattice {\npublic:\n  void reset() { }\n};\n",
    # One kernel defined by each port (the build links one of them) ...
    "ports/serial/kernel.cpp": "void smooth(double* u, int n) { for (int i = 0; i < n; ++i) u[i] *= 0.5; }\n",
    "ports/threads/kernel.cpp": "void smooth(double* u, int n) {\n#pragma omp parallel for\n"
                                "  for (int i = 0; i < n; ++i) u[i] *= 0.5; }\n",
    # ... and two file-local helpers that only share a name.
    "ports/serial/util.cpp": "static int clamp(int x) { return x; }\nint use_a() { return clamp(1); }\n",
    "ports/threads/util.cpp": "namespace { int pad(int x) { return x; } }\nint use_b() { return pad(2); }\n",
    "ports/threads/more.cpp": "namespace { int pad(int x) { return x + 1; } }\n",
    "ports/serial/more.cpp": "static int clamp(int x) { return x + 1; }\n",
    "app/driver.cpp": '#include "../src/comm.h"\nvoid smooth(double* u, int n);\n'
                      "void step(Comm* comm, double* u, Timer* t, Lattice* l) {\n"
                      "  comm->exchange();\n  comm->reduce(u);\n  smooth(u, 8);\n  t->reset();\n"
                      "  clamp(3);\n  pad(4);\n}\n",
}


def test_calls_to_alternatives_resolve_to_each_of_them(tmp_path):
    # A call through a base pointer may reach every override, and a function each port
    # defines is whichever port the build links: both are edges to all alternatives. Names
    # shared by unrelated classes or by file-local helpers stay unresolved.
    work, structure = _graph_of(tmp_path, ALTERNATIVES)
    chunks = read_jsonl(work / L.CHUNKS, Chunk)
    step = _sym(chunks, "step")
    called = _called_by(structure, step)
    assert {_sym(chunks, "Comm::exchange"), _sym(chunks, "CommSerial::exchange"),
            _sym(chunks, "CommMPI::exchange")} <= called
    assert {_sym(chunks, "CommSerial::reduce"), _sym(chunks, "CommMPI::reduce")} <= called
    assert {_sym(chunks, "smooth", "ports/serial/kernel.cpp"),
            _sym(chunks, "smooth", "ports/threads/kernel.cpp")} <= called
    names = {t.split("#")[1].split("@")[0].split(":", 1)[1] for t in called}
    assert not {"Timer::reset", "Lattice::reset", "clamp", "(anonymous)::pad"} & names, names


MACROS = {
    # A function-like macro is invoked like a function; the parser sees no preprocessor.
    "src/index.h": "#pragma once\n#define index2d(i, j, nx) ((i) + (j) * (nx))\n",
    "src/util.h": "#pragma once\n#define MIN(a, b) ((a) < (b) ? (a) : (b))\n",
    "src/solver.cpp": '#include "index.h"\n#include "util.h"\n'
                      "double weight(int i) { return 0.5 * i; }\n"
                      "double norm(int i) { return 2.0 * i; }\n"
                      "double sweep(int n) {\n  double s = 0;\n"
                      "  for (int i = 0; i < n; ++i) s += MIN(weight(index2d(i, 1, n)), norm(i));\n"
                      "  return s;\n}\n",
}


def test_a_function_like_macro_use_is_a_call_edge_but_no_call_chain_member(tmp_path):
    # "Who uses this macro" is "who calls this function"; a chain stays one of functions, or
    # MIN/MAX would root a chain at most functions.
    from codeteacher.ingest.entities import call_chain_entities

    work, structure = _graph_of(tmp_path, MACROS)
    chunks = read_jsonl(work / L.CHUNKS, Chunk)
    sweep = _sym(chunks, "sweep")
    macros = {_sym(chunks, "index2d"), _sym(chunks, "MIN")}
    called = _called_by(structure, sweep)
    assert macros | {_sym(chunks, "weight"), _sym(chunks, "norm")} <= called
    chain = next(e for e in call_chain_entities(chunks, structure)
                 if e.id == f"chain:{sweep[4:]}")
    assert set(chain.members) == {sweep[4:], _sym(chunks, "weight")[4:], _sym(chunks, "norm")[4:]}
    assert "index2d" not in chain.text and "MIN" not in chain.text.split("calls")[1]


def test_a_ports_members_and_bases_belong_to_its_own_copy_of_the_class():
    from codeteacher.contracts.models import FileRecord
    from codeteacher.ingest.graph import build_structure

    # Three ports repeat one class; each port's out-of-line member and subclass belong to
    # the class in its own folder, not to whichever copy sorts first.
    ports = ("alpha/serial", "beta/openmp", "beta/cuda")
    chunks, files = [], []
    for port in ports:
        for name, kind, extra in (("Graph", "class", {}),
                                  ("count", "method", {"class_name": "Graph"}),
                                  ("Sub", "class", {"bases": ["Graph"]})):
            path = f"{port}/Graph.{'cpp' if kind == 'method' else 'h'}"
            chunks.append(Chunk(id=f"{path}#{name}", path=path, kind=kind, name=name,
                                qualified_name=f"Graph::{name}" if kind == "method" else name,
                                start_line=1, end_line=2, **extra))
            files.append(path)
    records = [FileRecord(path=p, language="cpp", category="code", scope="src", size=1,
                          sha256="0") for p in dict.fromkeys(files)]
    structure = build_structure(records, chunks, {})
    owns = {(e.source, e.target) for e in structure.edges if e.type == "owns"
            and e.source.startswith("sym:")}
    bases = {(e.source, e.target) for e in structure.edges if e.type == "inherits"}
    assert owns == {(f"sym:{p}/Graph.h#Graph", f"sym:{p}/Graph.cpp#count") for p in ports}
    assert bases == {(f"sym:{p}/Graph.h#Sub", f"sym:{p}/Graph.h#Graph") for p in ports}
    # A member in a folder of its own still finds its class (all copies are equally near).
    lone = Chunk(id="tools/use.cpp#count", path="tools/use.cpp", kind="method", name="count",
                 qualified_name="Graph::count", class_name="Graph", start_line=1, end_line=2)
    structure = build_structure(records, [*chunks, lone], {})
    assert sum(e.target == f"sym:{lone.id}" and e.source.startswith("sym:")
               for e in structure.edges if e.type == "owns") == 2
