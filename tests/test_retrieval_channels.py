"""Retrieval channels of issue 12 on a small inline repository (real parse, real MiniLM, real
FAISS/BM25): identifier-shaped literals, the exact-token channel, the whole-file BM25 list,
the same-name code-file family cap, and folder evidence shown through its files.

The repository is built so that each part can fail: a rare macro named in one file while many
files share its sub-words, three per-backend copies of one file name, and a folder whose name
occurs in a file path of the question.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from codeteacher.api import Engine
from codeteacher.contracts.settings import Settings
from codeteacher.ingest.build import build_index
from codeteacher.retrieval.literal import identifier_shape, literals
from codeteacher.retrieval.search import Trace

NOISE = """// Fast path for the enable flag: the path is enabled when fast stepping is enabled.
#include "config.h"
namespace demo {{
/// Enables the fast path of stepping {n}.
int enable_fast_{n}(int path) {{ return path + {n}; }}
int fast_path_{n}(int enable) {{ return enable * {n}; }}
}}
"""

REPO = {
    "src/core/switches.h": """#pragma once
// Compile-time switches of the stepping loop.
#define ENABLE_FAST_PATH 1
namespace demo { int stepping_mode(); }
""",
    "src/core/stepper.cpp": """#include "switches.h"
namespace demo {
/// Advances the particles by one step.
int advance(int steps) {
    int moved = 0;
    for (int i = 0; i < steps; ++i) moved += i;
    return moved;
}
}
""",
    "src/serial/kernels.cpp": """// Serial kernels.
namespace demo {
/// Serial version.
void diffuse_temperature(double* t, int n) { for (int i = 1; i < n; ++i) t[i] += t[i-1]; }
}
""",
    "src/threads/kernels.cpp": """// Threaded heat diffusion kernels: the stencil update of the temperature field.
namespace demo {
/// Applies the five point diffusion stencil to the temperature field (threaded backend).
void diffuse_temperature(double* t, int n) {
#pragma omp parallel for
    for (int i = 1; i < n; ++i) t[i] += t[i-1];
}
}
""",
    "src/device/kernels.cpp": """// Device heat diffusion kernels: where the temperature diffusion stencil is applied.
namespace demo {
/// Applies the temperature diffusion stencil to the temperature field (device backend).
void diffuse_temperature(double* t, int n) {
    int block = 128;
    int grid = (n + block - 1) / block;
    launch(grid, block, [=](int i) { if (i > 0 && i < n) t[i] += t[i-1]; });
}
}
""",
    "src/driver/diffusion_driver.cpp": """// Drives the heat diffusion solve each time step.
namespace demo {
void diffuse_temperature(double* t, int n);
/// Calls the diffusion stencil on the temperature field once per time step.
void run_diffusion(double* t, int n, int steps) { for (int s = 0; s < steps; ++s)
    diffuse_temperature(t, n); }
}
""",
    "README.md": "# demo\n\nA small demo code with a stepping loop and heat diffusion.\n",
}
REPO |= {f"src/noise/noise_{n}.cpp": NOISE.format(n=n) for n in range(6)}

DIFFUSION = "Where is the temperature diffusion stencil applied?"


def index_of(root: Path, files: dict[str, str], name: str = "demo") -> Path:
    """An index (root/index) of a repository (root/repo) holding `files` (path -> text)."""
    for rel, text in files.items():
        (root / "repo" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "repo" / rel).write_text(text)
    build_index(root / "repo", out=root / "index", name=name, settings=Settings())
    return root / "index"


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    return index_of(tmp_path_factory.mktemp("channels"), REPO)


def record_at(store, path: str, name: str) -> int:
    """The index of the record named `name` in file `path`."""
    return next(i for i, r in enumerate(store.records) if r.path == path and r.name == name)


def engine_with(index: Path, change=None) -> Engine:
    s = Settings()
    if change:
        change(s)
    return Engine.load(index, s)


@pytest.fixture(scope="module")
def engine(index) -> Engine:
    return engine_with(index)


# ---- literals ---------------------------------------------------------------------------------

def test_identifier_shapes():
    assert identifier_shape("KOKKOS_ENABLE_CUDA") == "snake"
    assert identifier_shape("MPI") == "caps"
    assert identifier_shape("computeForce") == "camel"
    assert identifier_shape("ForceLJNeigh") == "camel"
    assert identifier_shape("--dumpbinary") == "flag"
    assert identifier_shape("ns::run") == "qualified"
    assert identifier_shape("model.cmake") == "file"
    assert identifier_shape("lj1") == "digits"
    for plain in ("where", "Where", "solver", "e.g", "a"):
        assert identifier_shape(plain) is None, plain


def test_literals_of_a_question_keep_their_spelling():
    q = ("How do KOKKOS_ENABLE_CUDA, `stepping mode`, --dumpbinary, ns::run() and computeForce "
         "relate to force_lj.cpp? Plain words are not literals.")
    got = literals(q)
    assert got == ["KOKKOS_ENABLE_CUDA", "stepping mode", "--dumpbinary", "ns::run",
                   "computeForce", "force_lj.cpp"]


def test_literals_are_linear_on_long_input():
    # One very long word and many short ones: split on white space, no backtracking regex.
    assert literals("x" * 200_000 + " y_z " + "a. " * 50_000) == ["y_z"]
    assert literals("'" + "a " * 100_000 + "'") == []  # longer than a message: not a phrase


def test_quoted_phrases_are_literals_and_apostrophes_are_not():
    q = ("What does the message 'step size too large' mean? The run printed \"no such box\" "
         "and \u2018grid gp=30\u2019. Don't the atoms' positions move? The 'owner' atom.")
    assert literals(q) == ["step size too large", "no such box", "grid gp=30"]


# ---- exact-token channel ----------------------------------------------------------------------

def test_rare_literal_finds_the_file_it_occurs_in(engine, index):
    q = "What does ENABLE_FAST_PATH switch on?"
    hits = engine.search(q, k=5)
    assert hits[0].chunk.path == "src/core/switches.h"
    # The macro is top-level text of the header (in no chunk): found through the whole file.
    assert any("exact 'ENABLE_FAST_PATH' in 1 file" in w for w in hits[0].why)
    off = engine_with(index, lambda s: setattr(s.retrieval.exact_tokens, "enabled", False))
    off_hits = off.search(q, k=5)
    assert not any("exact" in w for h in off_hits for w in h.why)


def test_other_case_counts_less(engine):
    def boost(question: str) -> tuple[float, list[str]]:
        trace = Trace()
        engine.search(question, k=5, trace=trace)
        row = next(r for r in trace.rows if r["chunk_id"] == "file:src/core/switches.h")
        return row["score_before"], [w for w in row["why"] if w.startswith("exact")]

    same, why_same = boost("What does ENABLE_FAST_PATH mean?")
    other, why_other = boost("What does enable_fast_path mean?")
    assert why_same == ["exact 'ENABLE_FAST_PATH' in 1 file"]
    assert why_other == ["exact 'enable_fast_path' (other case) in 1 file"]
    assert same > other


MESSAGES = {
    "src/step/control.cpp": """// Step control of the time loop.
namespace demo {
/// Halves the step while the error estimate is above tolerance.
double next_step(double dt, double err, double tol) {
    if (err > tol) { printf("step size too large, halving\\n"); return dt / 2; }
    return dt;
}
}
""",
} | {f"src/step/part_{n}.cpp": f"""// Part {n} of the step: the size of a large step.
namespace demo {{
/// Returns whether the step size of part {n} is too large for the cell size.
bool too_large_{n}(double step, double size) {{ return step > size * {n}; }}
}}
""" for n in range(6)}


def test_quoted_message_finds_the_file_that_prints_it(tmp_path):
    # Every word of the message is in seven files; the phrase itself is printed in one.
    engine = Engine.load(index_of(tmp_path, MESSAGES), Settings())
    hits = engine.search("What does the message 'step size too large' mean?", k=5)
    assert hits[0].chunk.path == "src/step/control.cpp"
    assert any(w == "exact 'step size too large' in 1 file" for w in hits[0].why)
    plain = engine.search("What does the message step size too large mean?", k=5)
    assert not any(w.startswith("exact") for h in plain for w in h.why)


def test_common_literal_is_ignored(engine):
    # `demo` namespaces every file: it pinpoints nothing, so no record is boosted for it.
    hits = engine.search("What is in `demo`?", k=5)
    assert not any(w.startswith("exact 'demo'") for h in hits for w in h.why)


# ---- whole-file BM25 --------------------------------------------------------------------------

def test_index_holds_a_whole_file_bm25(engine):
    files = engine.store.lexical.files
    assert files is not None
    assert sorted(files.paths) == sorted(engine.store.manifest.files)
    hits = engine.search(DIFFUSION, k=8)
    assert any(w.startswith("file bm25 #") for h in hits for w in h.why)


def test_file_channel_can_be_switched_off(index):
    off = engine_with(index, lambda s: setattr(s.retrieval.file_channel, "enabled", False))
    assert not any(w.startswith("file bm25") for h in off.search(DIFFUSION, k=8) for w in h.why)


def _file_list_chunks(engine: Engine) -> dict[str, int]:
    """Own chunks (not the file entity) that the whole-file list lent its rank to, per file."""
    trace = Trace()
    engine.search(DIFFUSION, k=5, trace=trace)
    lent: dict[str, int] = {}
    for r in trace.rows:
        if r["kind"] != "file" and any(w.startswith("file bm25 #") for w in r["why"]):
            lent[r["path"]] = lent.get(r["path"], 0) + 1
    return lent


def test_file_list_lends_to_two_best_chunks_by_default(index, engine):
    # The driver has two chunks (a declaration and the function that calls the stencil): by
    # default both carry the file's rank, so the file still reaches the pick when one of them
    # is dropped as a low-signal declaration; with one chunk per file only one carries it.
    assert Settings().retrieval.file_channel.chunks_per_file == 2
    assert _file_list_chunks(engine).get("src/driver/diffusion_driver.cpp") == 2
    one = engine_with(index, lambda s: setattr(s.retrieval.file_channel, "chunks_per_file", 1))
    lent = _file_list_chunks(one)
    assert lent and max(lent.values()) == 1


def test_dense_file_list_ranks_each_file_once(index, engine):
    # Off by default (it cost most seen corpora); on, a rank belongs to one file, and the
    # first file lends it to its file entity (and to its best chunk).
    assert not Settings().retrieval.dense_files.enabled
    assert not any(w.startswith("dense file #") for h in engine.search(DIFFUSION, k=8)
                   for w in h.why)
    on = engine_with(index, lambda s: setattr(s.retrieval.dense_files, "enabled", True))
    trace = Trace()
    on.search(DIFFUSION, k=8, trace=trace)
    ranks: dict[int, set[str]] = {}
    for r in trace.rows:
        for w in r["why"]:
            if w.startswith("dense file #"):
                ranks.setdefault(int(w.split("#")[1]), set()).add(r["path"])
    assert 1 in ranks and all(len(paths) == 1 for paths in ranks.values())
    best = ranks[1].pop()
    kinds = {r["kind"] for r in trace.rows if r["path"] == best and "dense file #1" in r["why"]}
    assert "file" in kinds  # (its best chunk may be the file entity itself)


# ---- file-diverse evidence --------------------------------------------------------------------

def _kernel_files(hits) -> set[str]:
    return {h.chunk.path for h in hits if h.chunk.path.endswith("/kernels.cpp")}


def test_same_name_code_files_are_capped(index):
    capped = engine_with(index, lambda s: setattr(s.retrieval, "max_per_name", 1))
    # (With the cap off, the other ports' copies still follow the rest: that rule is off too.)
    free = engine_with(index, lambda s: (setattr(s.retrieval, "max_per_name", None),
                                         setattr(s.retrieval, "other_port_share", 2.0)))
    assert len(_kernel_files(free.search(DIFFUSION, k=5))) >= 2
    hits = capped.search(DIFFUSION, k=5)
    assert len(_kernel_files(hits)) == 1
    assert "src/driver/diffusion_driver.cpp" in {h.chunk.path for h in hits}


def test_a_parallel_port_is_shown_in_its_plainest_member(index, engine):
    # The device port matches the question best; the same function in the shortest port is
    # what is shown, and the pick says where it was found.
    plain_off = engine_with(index, lambda s: setattr(s.retrieval, "plainest_variant", False))
    assert _kernel_files(plain_off.search(DIFFUSION, k=5)) == {"src/device/kernels.cpp"}
    hits = [h for h in engine.search(DIFFUSION, k=5) if h.chunk.path.endswith("/kernels.cpp")]
    assert [h.chunk.path for h in hits] == ["src/serial/kernels.cpp"]
    assert hits[0].chunk.name == "diffuse_temperature"
    assert any("plainest" in w and "src/device/kernels.cpp" in w for w in hits[0].why)
    # A question that names the port's folder gets that port.
    named = engine.search("Where is the device temperature diffusion stencil applied?", k=5)
    assert "src/device/kernels.cpp" in _kernel_files(named)


# One routine in three ports: plain, threaded (its pragma is code of its own), and a device
# port that is shorter but made of its backend's calls.
_LOOP = "  for (int i = 0; i < n; ++i) {\n    u[i] = 0.5 * (u[i] + w[i]);\n  }\n"
_REF_UPDATE = "// Relaxes u towards w.\nvoid update(double* u, double* w, int n) {\n" + _LOOP + "}\n"
_THREADED_UPDATE = ("// Relaxes u towards w.\nvoid update(double* u, double* w, int n) {\n"
                    "#pragma omp parallel for simd schedule(static)\n" + _LOOP + "}\n")
_DEVICE_UPDATE = ("void update(double* u, double* w, int n) {\n"
                  "  gpuLaunch(gpuGrid(n), gpuBlock(), u, w); gpuSync(); }\n")


def test_a_port_named_by_an_abbreviated_folder_is_shown(tmp_path):
    # "the OpenMP version" names ports/omp/; the plainest port (ref) is shown otherwise.
    files = {
        "ports/ref/update.cpp": _REF_UPDATE,
        "ports/gpu/update.cpp": "// Relaxes u towards w on the device.\n" + _DEVICE_UPDATE,
        "ports/omp/update.cpp": _THREADED_UPDATE,
    }
    engine = Engine.load(index_of(tmp_path, files), Settings())
    shown = {h.chunk.path for h in engine.search("How does the code relax u towards w?", k=3)}
    assert "ports/ref/update.cpp" in shown and "ports/omp/update.cpp" not in shown
    shown = {h.chunk.path for h in engine.search(
        "How does the OpenMP version relax u towards w?", k=3)}
    assert "ports/omp/update.cpp" in shown and "ports/ref/update.cpp" not in shown


def test_a_technology_every_port_uses_does_not_name_a_port(tmp_path):
    # Each port's exchange calls MPI; one port's folder is called mpi-spec. "between MPI
    # ranks" asks how the code exchanges, not for that port; naming the port still works, and
    # so does a folder word the other ports use only in passing (one comment each).
    send = ("// Sends the boundary atoms to the neighbour ranks.\n"
            "void exchange(double* x, int n, int nbr) {\n"
            "  MPI_Send(x, n, MPI_DOUBLE, nbr, 0, MPI_COMM_WORLD);\n"
            "  MPI_Recv(x, n, MPI_DOUBLE, nbr, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);\n}\n")
    files = {"md/ref/comm.cpp": send,
             "md/mpi-spec/comm.cpp": send.replace("{\n", "{\n  MPI_Barrier(MPI_COMM_WORLD);\n"
                                                  "  spec_snapshot(x, n);\n", 1),
             "md/omp/comm.cpp": send.replace("{\n", "{\n#pragma omp single\n#pragma omp flush\n"
                                             "  // omp: one thread talks to MPI\n", 1)}
    for port in ("ref", "mpi-spec"):
        files[f"md/{port}/comm.cpp"] += "// (no omp here)\n"
    ix = index_of(tmp_path, files)

    def shown(q):
        return {h.chunk.path for h in engine_with(ix).search(q, k=3)
                if h.chunk.path.endswith("comm.cpp")}

    assert shown("How are the boundary atoms sent between MPI ranks?") == {"md/ref/comm.cpp"}
    assert shown("How does the mpi-spec version send the boundary atoms?") == \
        {"md/mpi-spec/comm.cpp"}
    assert shown("How does the OpenMP version send the boundary atoms?") == {"md/omp/comm.cpp"}


def test_folder_abbreviations():
    from codeteacher.retrieval.ports import abbreviates

    assert abbreviates("omp", "openmp") and abbreviates("std", "standard")
    assert not abbreviates("acc", "accumulate")  # last letters differ
    assert not abbreviates("omp", "omp") and not abbreviates("cg", "conjugate")
    assert not abbreviates("mpi", "multiply")


def test_files_sharing_only_a_name_are_not_ports(tmp_path):
    ix = index_of(tmp_path, {
        "a/util.cpp": "// Sorting helpers.\nvoid sort_keys(int* k, int n) { for (;;) {} }\n"
                      "void merge_runs(int* k, int n) { for (;;) {} }\n"
                      "void count_keys(int* k, int n) { for (;;) {} }\n",
        "b/util.cpp": "// String helpers.\nvoid trim(char* s) {}\n",
    })
    hits = Engine.load(ix, Settings()).search("Where are the keys sorted?", k=3)
    assert hits[0].chunk.path == "a/util.cpp" and hits[0].chunk.name == "sort_keys"
    assert not any("plainest" in w for h in hits for w in h.why)


def test_one_item_per_file_by_default(engine):
    hits = engine.search(DIFFUSION, k=6)
    paths = [h.chunk.path for h in hits]
    assert len(paths) == len(set(paths))


def test_a_file_path_does_not_name_its_folder(engine):
    from codeteacher.retrieval.query import analyze

    qa = analyze("What does src/core/switches.h do?", engine.store)
    assert "src/core/switches.h" in qa.named_files
    assert "src/core" not in qa.modules and "src" not in qa.modules


def test_project_name_is_not_a_symbol_or_literal(engine):
    from codeteacher.retrieval.query import analyze

    qa = analyze("How do I build Demo with ENABLE_FAST_PATH?", engine.store)
    assert "demo" not in {s.lower() for s in qa.symbols}
    assert "Demo" not in qa.literals and "ENABLE_FAST_PATH" in qa.literals


def test_a_caller_in_another_file_joins_the_evidence(tmp_path):
    # The question's words are all in the kernel; the driver that runs it shares none of them
    # and is reached through the call graph only.
    files = {
        "src/kernels/smoother.cpp": "// Gauss-Seidel relaxation sweep over the pressure grid.\n"
                                    "void relax_pressure(double* p, int n) {\n"
                                    "  for (int i = 1; i < n - 1; ++i) p[i] = 0.5 * (p[i-1] + p[i+1]);\n}\n",
        "src/app/main.cpp": "void relax_pressure(double* p, int n);\n"
                            "// Program entry: reads the deck and steps the model.\n"
                            "int main(int argc, char** argv) {\n  double q[64] = {0};\n"
                            "  for (int step = 0; step < 10; ++step) relax_pressure(q, 64);\n"
                            "  return 0;\n}\n",
    }
    # Files that share some of the question's words, so the driver is not among the seeds.
    files |= {f"src/io/grid_{n}.cpp": f"// Writes pressure grid {n} to disk after a sweep.\n"
                                      f"void write_grid_{n}(const double* p) {{}}\n"
              for n in range(6)}
    ix = index_of(tmp_path, files)
    question = "How does the Gauss-Seidel relaxation sweep over the pressure grid work?"
    hits = Engine.load(ix, Settings()).search(question, k=4)
    assert hits[0].chunk.name == "relax_pressure"
    main = [h for h in hits if h.chunk.path == "src/app/main.cpp"]
    assert main and any("caller in another file" in w for w in main[0].why)

    off = Settings()
    for prof in off.expansion.profiles.values():
        prof.callers = 0
    hits = Engine.load(ix, off).search(question, k=4)
    assert not any("caller in another file" in w for h in hits for w in h.why)


def test_the_plainest_port_has_the_least_code_of_its_own(tmp_path):
    from codeteacher.retrieval.ports import _plainest

    files = {
        "ports/ref/update.cpp": _REF_UPDATE,
        "ports/gpu/update.cpp": _DEVICE_UPDATE,  # shorter, but full of its backend's own calls
        "ports/threads/update.cpp": _THREADED_UPDATE,
    }
    store = Engine.load(index_of(tmp_path, files), Settings()).store
    assert _plainest(store, "update.cpp") == "ports/ref/update.cpp"


def test_one_answer_stays_in_the_plainest_port_folder(tmp_path):
    # Two port trees of one code. The threaded tree adds pragmas to most files, but its
    # pair loop is shorter than the reference's (it skips the reference's double-count
    # guard): per file, that one is "plainer"; per folder, the reference tree is.
    from codeteacher.retrieval.ports import PortRules, _plainest, _port_plainness

    guard = "    if (j <= i) continue;  // count each local pair once (third law)\n"
    pairs = ("// Pair energies of neighbouring atoms.\ndouble pair_energy(const double* x, int n) {\n"
             "  double e = 0;\n  for (int i = 0; i < n; ++i)\n  for (int j = 0; j < n; ++j) {\n"
             "GUARD    e += 1.0 / ((x[i] - x[j]) * (x[i] - x[j]) + 1e-9);\n  }\n  return e;\n}\n")
    files = {"md/base/pairs.cpp": pairs.replace("GUARD", guard),
             "md/threads/pairs.cpp": pairs.replace("GUARD", "").replace(
                 "  for (int i", "#pragma omp parallel for reduction(+:e)\n  for (int i")}
    for name in ("update", "halo", "neighbours"):
        plain = (f"// Step of the {name} phase.\nvoid {name}(double* x, int n) {{\n"
                 f"  for (int i = 0; i < n; ++i) x[i] += 0.5;\n}}\n")
        files[f"md/base/{name}.cpp"] = plain
        files[f"md/threads/{name}.cpp"] = plain.replace(
            "  for (int i", "#pragma omp parallel for schedule(static)\n  for (int i")
    ix = index_of(tmp_path, files)
    store = Engine.load(ix, Settings()).store
    assert _plainest(store, "pairs.cpp") == "md/threads/pairs.cpp"  # file by file
    assert _port_plainness(store, PortRules()) == {"md/base": (0.0, 1.0, 0.75, 0.0),
                                                   "md/threads": (0.0, 1.0, 0.25, 0.0)}
    assert _plainest(store, "pairs.cpp", PortRules(by_folder=True)) == "md/base/pairs.cpp"
    q = "Where are the pair energies of neighbouring atoms summed?"
    shown = {h.chunk.path for h in Engine.load(ix, Settings()).search(q, k=3)}
    assert "md/base/pairs.cpp" in shown and "md/threads/pairs.cpp" not in shown
    off = Settings()
    off.retrieval.plainest_port = False
    shown = {h.chunk.path for h in Engine.load(ix, off).search(q, k=3)}
    assert "md/threads/pairs.cpp" in shown and "md/base/pairs.cpp" not in shown


def test_a_port_folders_build_file_is_shown_in_the_plainest_or_the_named_port(tmp_path):
    # Each port folder has its own Makefile; the device one shares most words with the
    # question. The reference port is the plainest folder (its update.cpp has no code of its
    # own), so its Makefile is shown, unless the question names another port.
    files = {"ports/ref/update.cpp": _REF_UPDATE, "ports/omp/update.cpp": _THREADED_UPDATE,
             "ports/gpu/update.cpp": _DEVICE_UPDATE}
    for port, extra in (("ref", ""), ("omp", " -fopenmp"),
                        ("gpu", " -gpu-arch=native # compiler flags of the build")):
        files[f"ports/{port}/Makefile"] = (f"# Compiler flags of the build.\nCXXFLAGS = -O3{extra}\n"
                                           f"update: update.cpp\n\t$(CXX) $(CXXFLAGS) -o $@ $<\n")
    for port, text in (("ref", _REF_UPDATE), ("omp", _THREADED_UPDATE), ("gpu", _DEVICE_UPDATE)):
        files[f"ports/{port}/relax.cpp"] = text.replace("update(", "relax(")
    ix = index_of(tmp_path, files)

    def makefiles(q, change=None):
        return [h.chunk.path for h in engine_with(ix, change).search(q, k=4)
                if h.chunk.path.endswith("Makefile")]

    q = "Which compiler flags does the build use?"
    off = makefiles(q, lambda s: setattr(s.retrieval, "plainest_port", False))
    assert off == ["ports/gpu/Makefile"], off
    assert makefiles(q) == ["ports/ref/Makefile"]
    assert makefiles("Which compiler flags does the OpenMP build use?") == ["ports/omp/Makefile"]


def test_identical_port_files_do_not_decide_the_plainest_port(tmp_path):
    # Most files of the two trees are identical copies; the one that differs decides. The
    # copies must not count as wins for whichever folder sorts first (alt/ < ref/).
    from codeteacher.retrieval.ports import PortRules, _plainest, _port_plainness

    files = {f"md/{tree}/{name}.cpp": f"// Step {name}.\nvoid {name}(double* x, int n) {{\n"
                                      f"  for (int i = 0; i < n; ++i) x[i] += 1.0;\n}}\n"
             for tree in ("alt", "ref") for name in ("halo", "pack", "unpack")}
    files["md/ref/stencil.cpp"] = _REF_UPDATE
    files["md/alt/stencil.cpp"] = _THREADED_UPDATE
    store = Engine.load(index_of(tmp_path, files), Settings()).store
    assert _port_plainness(store, PortRules()) == {"md/alt": (0.0, 1.0, 0.375, 0.0),
                                                   "md/ref": (0.0, 1.0, 0.625, 0.0)}
    assert _plainest(store, "halo.cpp", PortRules(by_folder=True)) == "md/ref/halo.cpp"


def test_ports_the_code_cannot_tell_apart_are_shown_in_the_reference_named_one(tmp_path):
    # Identical copies in every port folder: no member is plainer, and path order would
    # crown whichever folder sorts first. A folder word that says "reference" decides.
    from codeteacher.retrieval.ports import PortRules, _plainest, _port_plainness

    files = {f"app/{tree}/{name}.cpp": f"// Step {name}.\nvoid {name}(double* x, int n) {{\n"
                                       f"  for (int i = 0; i < n; ++i) x[i] += 1.0;\n}}\n"
             for tree in ("alpha", "serial", "zeta") for name in ("halo", "pack", "unpack")}
    ix = index_of(tmp_path, files)
    store = Engine.load(ix, Settings()).store
    cue = Settings().retrieval.reference_port_cue
    assert _port_plainness(store, PortRules(reference=cue))["app/serial"][3] == 1.0
    assert _plainest(store, "pack.cpp", PortRules(by_folder=True)) == "app/alpha/pack.cpp"
    assert _plainest(store, "pack.cpp", PortRules(by_folder=True, reference=cue)) == \
        "app/serial/pack.cpp"

    def shown(change=None):
        return [h.chunk.path for h in engine_with(ix, change).search(
            "Where is the halo stepped?", k=3)]
    assert shown()[0] == "app/serial/halo.cpp", shown()
    off = shown(lambda s: setattr(s.retrieval, "reference_port_cue", ""))
    assert off[0] == "app/alpha/halo.cpp", off


def test_a_cpu_reference_beats_device_ports_stripped_from_it(tmp_path):
    # The device port was derived from the CPU version by dropping its checks and options:
    # it has fewer words of its own, but its files launch kernels. The reference has none.
    from codeteacher.retrieval.ports import PortRules, _plainest, _port_plainness

    check = ("  double sum = 0;\n  for (int i = 0; i < n; ++i) sum += x[i];\n"
             "  if (verify_checksum(sum, expected_total)) report_verified(sum);\n")
    files = {
        "cpu/lookup.cpp": "// Looks up the cross sections.\nvoid lookup(double* x, int n) {\n"
                          "  for (int i = 0; i < n; ++i) x[i] = 2.0 * x[i];\n" + check + "}\n",
        "gpu/lookup.cpp": "// Looks up the cross sections.\nvoid lookup(double* x, int n) {\n"
                          "  lookup_kernel<<<n / 256, 256>>>(x, n);\n"
                          "  cudaDeviceSynchronize();\n}\n",
        "cpu/options.cpp": "// Reads the options.\nvoid options(int argc, char** argv) {\n"
                           "  parse_verbose_flag(argc, argv);\n  parse_binary_dump(argc, argv);\n}\n",
        "gpu/options.cpp": "// Reads the options.\nvoid options(int argc, char** argv) {\n}\n",
    }
    store = Engine.load(index_of(tmp_path, files), Settings()).store
    device = Settings().retrieval.device_constructs
    by_words = PortRules(by_folder=True)
    assert _port_plainness(store, by_words) == {"cpu": (0.0, 1.0, 0.0, 0.0),
                                                  "gpu": (0.0, 1.0, 1.0, 0.0)}
    assert _plainest(store, "lookup.cpp", by_words) == "gpu/lookup.cpp"
    with_device = PortRules(by_folder=True, device=device)
    assert _port_plainness(store, with_device)["cpu"][1] == 1.0
    assert _port_plainness(store, with_device)["gpu"][1] == 0.0
    assert _plainest(store, "lookup.cpp", with_device) == "cpu/lookup.cpp"
    assert _plainest(store, "options.cpp", with_device) == "cpu/options.cpp"


def test_ports_in_other_dialects_are_one_family(tmp_path):
    # The CPU reference is C, the device ports CUDA and C++: one family, shown once, in the
    # reference. A header pair in one folder (X.h declares, X.hpp defines) stays two files.
    from codeteacher.retrieval.ports import families, family_key

    body = "  for (int i = 0; i < n; ++i) xs[i] = 0.5 * (xs[i] + xs[i + 1]);\n"
    files = {
        "cpu/smooth.c": "// Smooths the cross sections.\nvoid smooth(double* xs, int n) {\n"
                        + body + "}\n",
        "cuda/smooth.cu": "// Smooths the cross sections.\n__global__ void smooth(double* xs, int n) "
                          "{\n" + body + "}\nvoid launch(double* xs, int n) "
                          "{ smooth<<<1, 1>>>(xs, n); cudaDeviceSynchronize(); }\n",
        "sycl/smooth.cpp": "// Smooths the cross sections.\nvoid smooth(double* xs, int n) {\n"
                           "  sycl::queue q;\n" + body + "}\n",
        "lib/grid.h": "// Declares the grid.\nstruct Grid { int n; void smooth_grid(); };\n",
        "lib/grid.hpp": "// Defines the grid's smoothing.\n#include \"grid.h\"\n"
                        "inline void Grid::smooth_grid() { n = 0; }\n",
    }
    for port in ("cpu", "cuda", "sycl"):
        files[f"{port}/Makefile"] = f"# Builds the {port} port.\nall:\n\tcc -o smooth smooth.*\n"
    ix = index_of(tmp_path, files)
    store = Engine.load(ix, Settings()).store
    fam = families(store)
    assert fam[family_key(store, "cuda/smooth.cu")] == ["cpu/smooth.c", "cuda/smooth.cu",
                                                        "sycl/smooth.cpp"]
    assert family_key(store, "lib/grid.h") != family_key(store, "lib/grid.hpp")
    shown = [h.chunk.path for h in Engine.load(ix, Settings()).search(
        "Where are the cross sections smoothed?", k=4)]
    assert [p for p in shown if "/smooth." in p] == ["cpu/smooth.c"], shown
    named = [h.chunk.path for h in Engine.load(ix, Settings()).search(
        "Where does the CUDA version smooth the cross sections?", k=4)]
    assert [p for p in named if "/smooth." in p] == ["cuda/smooth.cu"], named


def test_the_port_named_most_closely_is_shown(tmp_path):
    # "OpenMP" abbreviates into both omp/ and omp-target/; omp/ leaves no folder word unasked.
    files = {"ports/ref/update.cpp": _REF_UPDATE, "ports/omp/update.cpp": _THREADED_UPDATE,
             "ports/omp-target/update.cpp": _THREADED_UPDATE.replace(
                 "parallel for simd", "target teams distribute parallel for"),
             "ports/gpu/update.cpp": _DEVICE_UPDATE}
    engine = Engine.load(index_of(tmp_path, files), Settings())
    shown = {h.chunk.path for h in engine.search(
        "How does the OpenMP version relax u towards w?", k=3)}
    assert "ports/omp/update.cpp" in shown and "ports/omp-target/update.cpp" not in shown


def test_identical_copies_are_shown_once(tmp_path):
    deck = "# input deck\nlattice_constant 1.6796\ntimestep 0.005\nthermo_every 100\n"
    files = {f"{v}/in.lattice": deck for v in ("ref", "threads", "device")}
    files["ref/notes.txt"] = "The lattice constant and timestep are read from the deck.\n"
    ix = index_of(tmp_path, files)
    q = "Which lattice constant and timestep does the input deck set?"
    shown = [h.chunk.path for h in Engine.load(ix, Settings()).search(q, k=4)]
    assert len([p for p in shown if p.endswith("in.lattice")]) == 1
    off = Settings()
    off.retrieval.one_of_identical = False
    off.retrieval.max_data_files_asked = None  # (the question asks about decks: not capped)
    shown = [h.chunk.path for h in Engine.load(ix, off).search(q, k=4)]
    assert len([p for p in shown if p.endswith("in.lattice")]) == 3


def test_query_time_file_reads_refuse_what_collection_refuses(tmp_path):
    import os

    ix = index_of(tmp_path, {"src/a.cpp": "// Alpha kernel.\nvoid alpha() {}\n",
                             "src/b.cpp": "// Beta kernel.\nvoid beta() {}\n"})
    store = Engine.load(ix, Settings()).store
    assert "Alpha kernel" in store.repo_text("src/a.cpp")
    (tmp_path / "repo" / "src" / "b.cpp").unlink()
    os.mkfifo(tmp_path / "repo" / "src" / "b.cpp")  # swapped after indexing: must not block
    assert store.repo_text("src/b.cpp") is None
    assert store.repo_text("src/a.cpp", max_bytes=5) is None  # grown past the limit
    assert store.repo_text("src/gone.cpp") is None


def test_build_files_of_mirrored_port_folders_are_one_family(tmp_path):
    # Each port folder holds the same file names (its kernels and its build script): the
    # build scripts are one answer, shown once. CMakeLists.txt files of folders that do not
    # mirror each other are separate answers.
    files = {}
    for port in ("serial", "threads", "device"):
        files[f"ports/{port}/model.cmake"] = (
            f"# Build settings of the {port} programming model port.\n"
            f"register_model_flag({port.upper()}_FLAGS \"compiler flags for the {port} model\")\n"
            f"register_model_sources({port} kernels.cpp solver.cpp)\n")
        files[f"ports/{port}/kernels.cpp"] = f"void smooth_{port}(double* u) {{ u[0] = 0; }}\n"
        files[f"ports/{port}/solver.cpp"] = f"void solve_{port}(double* u) {{ u[0] = 1; }}\n"
    files["ports/CMakeLists.txt"] = ("# Registers every programming model port folder.\n"
                                     "foreach(model serial threads device)\n"
                                     "  include(${model}/model.cmake)\nendforeach()\n")
    files["tools/CMakeLists.txt"] = ("# Builds the programming model registration helper tool.\n"
                                     "add_executable(register_model register.cpp)\n")
    files["tools/register.cpp"] = "int main() { return 0; }\n"
    ix = index_of(tmp_path, files)
    q = "Which build settings does a programming model port register?"

    def shown(change=None):
        return [h.chunk.path for h in engine_with(ix, change).search(q, k=5)]

    off = shown(lambda s: (setattr(s.retrieval, "mirror_share", 2.0),  # (and the other ports'
                           setattr(s.retrieval, "other_port_share", 2.0)))  # files not last)
    assert len([p for p in off if p.endswith("model.cmake")]) >= 2
    on = shown()
    assert len([p for p in on if p.endswith("model.cmake")]) == 1
    assert {"ports/CMakeLists.txt", "tools/CMakeLists.txt"} <= set(on)


def test_build_variants_of_one_folder_take_one_of_the_first_slots(tmp_path):
    # A dozen per-platform make files (setup/Make.<platform>, recognised by their make lines)
    # say the same thing for different machines: one of them stands for all in the first
    # five, and the build file and the code that the question also asks about keep their
    # places. The other variants follow the first five, for a question about several.
    files = {f"setup/Make.{plat}": (f"# Settings for building with MPI on {plat}.\n"
                                    f"CXX = mpicxx\nCXXFLAGS = -O3 -DUSE_MPI $(OPT_{plat})\n"
                                    "LINKFLAGS = $(CXXFLAGS)\n")
             for plat in ("Linux_MPI", "Mac_MPI", "Cray_MPI", "Intel_MPI", "GCC_MPI")}
    files["CMakeLists.txt"] = ("# Builds the solver; USE_MPI turns on the halo exchange.\n"
                               "option(USE_MPI \"build with MPI\" OFF)\n"
                               "add_executable(solver src/halo.cpp)\n")
    files["src/halo.cpp"] = ("// Halo exchange between MPI ranks; without USE_MPI nothing is "
                             "exchanged.\nvoid exchange_halo(double* u) {\n#ifdef USE_MPI\n"
                             "  send_faces(u);\n#endif\n}\n")
    ix = index_of(tmp_path, files)
    q = "Which settings build the solver with MPI, and what does USE_MPI change in the halo?"

    def shown(change=None):
        return [h.chunk.path for h in engine_with(ix, change).search(q, k=8)]

    off = shown(lambda s: setattr(s.retrieval, "max_build_variants", None))
    assert len([p for p in off[:5] if p.startswith("setup/Make.")]) >= 2
    on = shown()
    assert len([p for p in on[:5] if p.startswith("setup/Make.")]) == 1
    assert {"CMakeLists.txt", "src/halo.cpp"} <= set(on[:5])
    assert len([p for p in on if p.startswith("setup/Make.")]) >= 2  # after the first five
    every = shown(lambda s: setattr(s.retrieval, "build_variant_head", None))
    assert len([p for p in every if p.startswith("setup/Make.")]) == 1


def test_licence_and_changelog_yield_to_code_unless_asked_about(tmp_path):
    # The licence shares the question's words ("check", "results", "correct"); the test driver
    # is the answer. A question about the licence still finds the licence.
    files = {
        "LICENSE": "Permission is granted to check, copy and run this software. The results "
                   "are provided without warranty that they are correct or fit for a purpose. "
                   "You must check the results yourself before you rely on them.\n",
        "CHANGELOG.md": "# Changes\n\n- check that the results are correct after each run.\n",
        "tests/check_results.cpp": "// Compares a run against the reference results.\n"
                                   "bool results_match(const double* a, const double* b, int n) "
                                   "{ for (int i = 0; i < n; ++i) if (a[i] != b[i]) return false; "
                                   "return true; }\n",
        "src/solver.cpp": "// Solves the system.\nvoid solve(double* x, int n) { x[0] = n; }\n",
    }
    ix = index_of(tmp_path, files)
    q = "How do I check the results of a run are correct?"  # (not "check that": a testing cue)
    # (The metadata weight alone: documents keep their places among the first five.)
    keep = lambda s: setattr(s.retrieval, "doc_after", 0)  # noqa: E731
    off = engine_with(ix, lambda s: (keep(s), setattr(s.rerank.weights, "project_metadata", 0.0)))
    top_off = [h.chunk.path for h in off.search(q, k=3)]
    top = [h.chunk.path for h in engine_with(ix, keep).search(q, k=3)]
    assert top[0] == "tests/check_results.cpp", top
    licence_rank = lambda paths: paths.index("LICENSE") if "LICENSE" in paths else 99  # noqa: E731
    assert licence_rank(top) > licence_rank(top_off)
    asked = [h.chunk.path for h in engine_with(ix).search(
        "Does the licence give a warranty for the software?", k=3)]
    assert asked[0] == "LICENSE"


def test_a_generated_script_gives_way_to_its_source(tmp_path):
    # A configure script that Autoconf wrote repeats its source's checks at length; the
    # question is answered by configure.ac, which the author writes.
    checks = "".join(f"echo 'checking for the MPI compiler wrapper mpicxx ({n})'\n"
                     f"MPI_CXX=mpicxx; test -x \"$MPI_CXX\" || MPI_CXX=mpiCC\n"
                     for n in range(12))
    files = {
        "configure": "#! /bin/sh\n# Generated by GNU Autoconf 2.69 for solver 1.0.\n" + checks,
        "configure.ac": "AC_INIT([solver], [1.0])\n# Find the MPI compiler wrapper.\n"
                        "AC_CHECK_PROGS([MPI_CXX], [mpicxx mpiCC])\nAC_OUTPUT\n",
        "src/solve.cpp": "// Solves the heat equation.\nvoid solve(double* u, int n) { (void)u; }\n",
    }
    for rel, text in files.items():
        (tmp_path / "repo" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "repo" / rel).write_text(text)
    question = "How does the build find the MPI compiler wrapper?"

    def files_for(settings: Settings, out: str) -> tuple[list[str], str]:
        """Files in rank order, and the rerank notes of the configure script."""
        build_index(tmp_path / "repo", out=tmp_path / out, name="demo", settings=settings)
        seen: list[str] = []
        notes = ""
        for h in Engine.load(tmp_path / out, settings).search(question, k=5):
            seen += [h.chunk.path] if h.chunk.path not in seen else []
            notes += " ".join(h.why) if h.chunk.path == "configure" else ""
        return seen, notes

    ranked, notes = files_for(Settings(), "index")
    assert ranked.index("configure.ac") < ranked.index("configure"), ranked
    assert "generated" in notes, notes
    unmarked = Settings()
    unmarked.collect.generated_marker = ""
    plain, notes = files_for(unmarked, "plain")  # the same files, read without the marker
    assert "configure" in plain and "generated" not in notes, (plain, notes)


def test_one_document_unless_the_question_asks_for_documentation(tmp_path):
    # Four notes describe the restart files in the question's words; the code that writes
    # them says less in prose. One note leaves room for the code.
    files = {f"docs/notes_{n}.md": f"# Restart files ({n})\n\nThe solver writes restart files "
                                   f"of the field state every few steps, part {n}.\n"
             for n in range(4)}
    files["src/restart.cpp"] = ("// Writes the field state to a restart file.\n"
                                "void write_restart(const double* u, int n) { (void)u; (void)n; }\n")
    files["src/other.cpp"] = "// Unrelated helper.\nint twice(int a) { return 2 * a; }\n"
    ix = index_of(tmp_path, files)

    def docs(q, change=None):
        def alone(s):  # (the cap alone: documents keep their places among the first five)
            s.retrieval.doc_after = 0
            change and change(s)
        hits = engine_with(ix, alone).search(q, k=5)
        return [h.chunk.path for h in hits if h.chunk.path.startswith("docs/")], \
            [h.chunk.path for h in hits]

    shown, top = docs("How does the solver write restart files of the field state?")
    assert len(shown) == 1 and "src/restart.cpp" in top, top
    free, _ = docs("How does the solver write restart files of the field state?",
                   lambda s: setattr(s.retrieval, "max_doc_files", None))
    assert len(free) >= 3
    asked, _ = docs("Which documentation describes the restart files of the field state?")
    assert len(asked) >= 3


def test_metadata_names_with_a_suffix_are_metadata():
    from codeteacher.retrieval.rerank import _is_metadata

    names = frozenset(Settings().rerank.metadata_files)
    for path in ("LICENSE", "LICENSE.md", "LICENSE_MINIMD", "docs/COPYING-LGPL",
                 "CODE_OF_CONDUCT.md", "CHANGELOG.rst"):
        assert _is_metadata(path, names), path
    for path in ("src/licenses.cpp", "src/history_buffer.h", "newsletter.md", "src/changes.c"):
        assert not _is_metadata(path, names), path


def _cases_and_reader(suffix: str, header: str, read_from: str) -> dict[str, str]:
    """Three data files that share a question's words with the code that reads them."""
    files = {f"inputs/case{n}{suffix}": f"# {header}: {n}\ntimestep_limit 0.{n}\n"
             f"courant_number 0.{n}5\nend_time 1.{n}\n" for n in range(3)}
    files["src/timestep.cpp"] = ("// Chooses the time step from the courant number and the "
                                 f"time step limit read from {read_from}.\n"
                                 "double choose_timestep(double courant, double limit) "
                                 "{ return courant < limit ? courant : limit; }\n")
    return files


def test_no_data_file_unless_the_question_asks_for_them(tmp_path):
    # Three input decks share the question's words with the code that reads them; a question
    # about the code is answered by the code, and decks would crowd out the reader. Asked
    # about the decks, two come back beside the code that reads them (all of them without
    # max_data_files_asked); listing a folder, all of them.
    files = _cases_and_reader(".deck", "input deck", "the input deck")
    files["src/io.cpp"] = ("// Reads the input deck keywords.\nint read_keywords(const char* f) "
                           "{ return f != 0; }\n")
    ix = index_of(tmp_path, files)
    q = "How is the time step limit and the courant number used to choose the time step?"
    capped = [h.chunk.path for h in engine_with(ix).search(q, k=4)]
    free = [h.chunk.path for h in engine_with(
        ix, lambda s: setattr(s.retrieval, "max_data_files", None)).search(q, k=4)]
    decks = lambda paths: [p for p in paths if p.endswith(".deck")]  # noqa: E731
    assert len(decks(free)) >= 2 and len(decks(capped)) == 0, capped
    assert "src/timestep.cpp" in capped and "src/io.cpp" in capped
    about = "Which input decks set the courant number and time step?"
    asked = [h.chunk.path for h in engine_with(ix).search(about, k=5)]
    assert len(decks(asked)) == 2 and "src/timestep.cpp" in asked, asked
    unlimited = [h.chunk.path for h in engine_with(
        ix, lambda s: setattr(s.retrieval, "max_data_files_asked", None)).search(about, k=5)]
    assert len(decks(unlimited)) == 3, unlimited
    listed = engine_with(ix).search("time step limit", k=4, paths=["inputs"])
    assert len(decks([h.chunk.path for h in listed])) == 3


def test_a_file_the_question_names_is_never_capped(tmp_path):
    # "instead of editing case1.inp" asks about that file: the data-file cap (0 by default)
    # and the document cap (1) leave a named file out of their count; unnamed ones stay capped.
    files = _cases_and_reader(".inp", "case", "the case file")
    files.update({f"docs/time_step_{n}.md": f"# Time step ({n})\n\nThe courant number and the "
                  f"time step limit choose the time step, note {n}.\n" for n in range(3)})
    ix = index_of(tmp_path, files)
    q = ("How do I set the courant number and the time step limit on the command line "
         "instead of editing case1.inp or reading time_step_2.md?")

    def shown(change=None):
        def alone(s):  # (the caps alone: documents keep their places among the first five)
            s.retrieval.doc_after = 0
            change and change(s)
        return [h.chunk.path for h in engine_with(ix, alone).search(q, k=6)]

    top = shown()
    assert "inputs/case1.inp" in top and "docs/time_step_2.md" in top, top
    assert not {"inputs/case0.inp", "inputs/case2.inp"} & set(top), top
    assert len([p for p in top if p.startswith("docs/")]) <= 2, top  # the named one + one
    assert "src/timestep.cpp" in top
    capped = shown(lambda s: setattr(s.retrieval, "named_files_uncapped", False))
    assert "inputs/case1.inp" not in capped, capped


def test_a_threads_question_shows_the_port_that_runs_threads(tmp_path):
    # The serial reference is the plainest port, so it is shown by default; a question about
    # threads is answered by the threaded copy, the plainest of those that run threads.
    files = {"ports/ref/update.cpp": _REF_UPDATE, "ports/omp/update.cpp": _THREADED_UPDATE,
             "ports/gpu/update.cpp": "// Relaxes u towards w.\n" + _DEVICE_UPDATE}
    for port in ("ref", "omp", "gpu"):
        files[f"ports/{port}/halo.cpp"] = ("// Copies the halo cells.\nvoid halo(double* u, int n)"
                                           " {\n  u[0] = u[n - 2];\n  u[n - 1] = u[1];\n}\n")
    ix = index_of(tmp_path, files)

    def shown(q, change=None):
        return [h.chunk.path for h in engine_with(ix, change).search(q, k=3)
                if h.chunk.path.endswith("/update.cpp")]

    assert shown("Where is u relaxed towards w?") == ["ports/ref/update.cpp"]
    threads = "How is the relaxation of u towards w split among threads?"
    assert shown(threads) == ["ports/omp/update.cpp"]
    # Switched off (a pattern no code matches), the reference is shown again.
    assert shown(threads, lambda s: setattr(s.retrieval, "thread_cue", r"\bnever-asked\b")) \
        == ["ports/ref/update.cpp"]


def test_a_threading_model_named_shows_the_copy_in_its_port_that_runs_threads(tmp_path):
    # The OpenMP port keeps a serial copy (basic/) beside its threaded one (src/). "OpenMP" is a
    # threads word: of the two copies in the port the question names, the threaded one.
    # (The other ports add a line each, so the serial copy in the OpenMP port is the plainest.)
    files = {"ports/omp/src/update.cpp": _THREADED_UPDATE, "ports/omp/basic/update.cpp": _REF_UPDATE}
    for port, line in (("ref", "assert(n > 0);"), ("mpi", "barrier();"), ("seq", "check(u);")):
        files[f"ports/{port}/src/update.cpp"] = _REF_UPDATE.replace("{\n", "{\n  " + line + "\n", 1)
    ix = index_of(tmp_path, files)

    def shown(q, change=None):
        return [h.chunk.path for h in engine_with(ix, change).search(q, k=3)
                if h.chunk.path.endswith("/update.cpp")]

    q = "In the OpenMP version, how is u relaxed towards w?"
    assert shown(q) == ["ports/omp/src/update.cpp"]
    assert shown("How are data races avoided when u is relaxed towards w?") == \
        ["ports/omp/src/update.cpp"]
    # Without threading words, the port named still wins, in its plainest copy.
    assert shown(q, lambda s: setattr(s.retrieval, "thread_cue", r"\bnever-asked\b")) == \
        ["ports/omp/basic/update.cpp"]


def test_a_run_setup_question_lifts_the_code_that_reads_the_options(tmp_path):
    # The solver file uses the question's words most; the option reader compares the command
    # line against literal option names, which is where the run is set up.
    files = {
        "src/options.cpp": "// Reads the command line.\nvoid read_args(int argc, char** argv, "
                           "Config& c) {\n  for (int i = 1; i < argc; ++i) {\n"
                           "    if (strcmp(argv[i], \"--solver\") == 0) c.kind = argv[++i];\n"
                           "    else if (strcmp(argv[i], \"--tolerance\") == 0) "
                           "c.tol = atof(argv[++i]);\n"
                           "    else if (strcmp(argv[i], \"--steps\") == 0) "
                           "c.steps = atoi(argv[++i]);\n  }\n}\n",
        "src/solver.cpp": "// The linear solver iterates until the residual is below the "
                          "tolerance.\nvoid linear_solver_iterate(double tolerance, int steps) "
                          "{\n  double residual = 1.0;\n  for (int i = 0; i < steps && residual"
                          " > tolerance; ++i) residual *= 0.5;\n}\n",
        "src/report.cpp": "// Prints the linear solver's residual and tolerance.\n"
                          "void report(double residual, double tolerance) { (void)residual; "
                          "(void)tolerance; }\n",
    }
    ix = index_of(tmp_path, files)
    q = "How do I choose the linear solver and its tolerance on the command line?"

    def ranked(change=None):
        hits = engine_with(ix, change).search(q, k=3)
        return [h.chunk.path for h in hits], {h.chunk.path for h in hits
                                               if any("option_code" in w for w in h.why)}

    top, marked = ranked()
    assert marked == {"src/options.cpp"} and top[0] == "src/options.cpp", top
    top_off, marked_off = ranked(lambda s: setattr(s.rerank.weights, "option_code", 0.0))
    assert not marked_off and top_off.index("src/options.cpp") > 0, top_off
    # Where the code merely is, or how to build it, is no question about run options.
    assert not any("option_code" in w for h in engine_with(ix).search(
        "Where is the residual of the linear solver reduced?", k=3) for w in h.why)


def test_a_base_class_question_brings_the_class_other_files_derive_from(tmp_path):
    # Two backends in their own files implement one interface; a header of helpers derives
    # its classes from a local base inside the same file, which is no shared interface.
    files = {
        "src/backend.h": "// Interface of a compute backend.\nclass Backend {\npublic:\n"
                         "  virtual void copy(double* a, const double* b, int n) = 0;\n"
                         "  virtual double dot(const double* a, const double* b, int n) = 0;\n};\n",
        "src/serial/serial_backend.h": "#include \"../backend.h\"\n// Loops on one core.\n"
                                       "class SerialBackend : public Backend {\npublic:\n"
                                       "  void copy(double* a, const double* b, int n) override;\n"
                                       "  double dot(const double* a, const double* b, int n) "
                                       "override;\n};\n",
        "src/threads/thread_backend.h": "#include \"../backend.h\"\n// Loops on many cores.\n"
                                        "class ThreadBackend : public Backend {\npublic:\n"
                                        "  void copy(double* a, const double* b, int n) "
                                        "override;\n  double dot(const double* a, const double* "
                                        "b, int n) override;\n};\n",
        "src/util/wrappers.h": "// Implementation wrappers of the timer.\nclass Wrapper { int h; };"
                               "\nclass TimerWrapper : public Wrapper { int t; };\n"
                               "class ClockWrapper : public Wrapper { int c; };\n",
    }
    ix = index_of(tmp_path, files)
    q = "What must every implementation provide?"
    hits = engine_with(ix).search(q, k=4)
    marked = {h.chunk.path for h in hits if any(w.startswith("base class") for w in h.why)}
    assert marked == {"src/backend.h"}, [(h.chunk.path, h.why) for h in hits]
    off = engine_with(ix, lambda s: setattr(s.retrieval.base_classes, "enabled", False))
    assert not any(w.startswith("base class") for h in off.search(q, k=4) for w in h.why)


def test_a_file_of_another_port_follows_unless_the_question_names_that_port(tmp_path):
    # omp/ overrides the energy update in a file of its own. A question that does not name
    # the port is answered in the plainest port (ref/), so the override follows the rest.
    from codeteacher.retrieval.ports import PortRules, other_port

    files = {"ports/ref/update.cpp": _REF_UPDATE, "ports/omp/update.cpp": _THREADED_UPDATE,
             "ports/omp/energy_override.cpp": "// Overrides the energy update of the cells.\n"
                                              "void energy_update(double* e, int n) {\n"
                                              "  for (int i = 0; i < n; ++i) e[i] *= 0.5;\n}\n",
             "ports/ref/timer.cpp": "// Reads the clock.\ndouble clock_now(int tick) "
                                    "{ return 1e-3 * tick; }\n"}
    for port in ("ref", "omp"):
        files[f"ports/{port}/halo.cpp"] = ("// Copies the halo cells.\nvoid halo(double* u, int n)"
                                           " {\n  u[0] = u[n - 2];\n  u[n - 1] = u[1];\n}\n")
    ix = index_of(tmp_path, files)
    store = Engine.load(ix, Settings()).store
    rules = PortRules(by_folder=True, device=Settings().retrieval.device_constructs)
    assert other_port(store, "ports/omp/energy_override.cpp", {"energy"}, rules, 0.5)
    assert not other_port(store, "ports/omp/energy_override.cpp", {"openmp"}, rules, 0.5)
    assert not other_port(store, "ports/ref/timer.cpp", {"clock"}, rules, 0.5)
    q = "Where is the energy update of the cells overridden?"
    top = [h.chunk.path for h in engine_with(ix).search(q, k=4)]
    off = [h.chunk.path for h in engine_with(
        ix, lambda s: setattr(s.retrieval, "other_port_share", 2.0)).search(q, k=4)]
    ov, halo = "ports/omp/energy_override.cpp", "ports/ref/halo.cpp"
    assert off.index(ov) < off.index(halo), off  # it outranks a file of the plainest port
    assert halo in top and (ov not in top or top.index(ov) > top.index(halo)), top  # not now
    named = engine_with(ix).search(
        "Where does the OpenMP version override the energy update of the cells?", k=3)
    assert ov in [h.chunk.path for h in named]
    assert not any("another port" in w for h in named for w in h.why)


def test_a_document_of_another_port_keeps_its_place(tmp_path):
    # A port's own document describes that port (what differs, how to run it): it copies no
    # code of the plainest port, so it is not moved after the rest as the port's files are.
    files = {"ports/ref/update.cpp": _REF_UPDATE, "ports/omp/update.cpp": _THREADED_UPDATE,
             "ports/omp/VARIANT.md": "# Single-precision variant\n\nThis variant stores the "
                                    "cell values in single precision. Its results differ from "
                                    "the plain version in the sixth digit.\n"}
    for port in ("ref", "omp"):
        files[f"ports/{port}/halo.cpp"] = ("// Copies the halo cells.\nvoid halo(double* u, int n)"
                                           " {\n  u[0] = u[n - 2];\n  u[n - 1] = u[1];\n}\n")
    ix = index_of(tmp_path, files)
    q = "Is there a variant that stores the cell values in single precision, and how do its " \
        "results differ?"
    doc = "ports/omp/VARIANT.md"
    no_doc_after = lambda s: setattr(s.retrieval, "doc_after", 0)  # noqa: E731  (that rule aside)
    on = engine_with(ix, no_doc_after).search(q, k=8)
    assert doc in [h.chunk.path for h in on], [(h.chunk.path, h.why) for h in on]
    assert not any("another port" in w for h in on if h.chunk.path == doc for w in h.why)
    off = engine_with(ix, lambda s: (no_doc_after(s), setattr(
        s.retrieval, "other_port_docs_stay", False))).search(q, k=8)
    moved = [h for h in off if h.chunk.path == doc]
    assert moved and any("another port" in w for w in moved[0].why), \
        [(h.chunk.path, h.why) for h in off]
    rank = lambda hits: [h.chunk.path for h in hits].index(doc)  # noqa: E731
    assert rank(on) < rank(off)


def test_a_caller_in_another_ports_copy_of_a_shown_file_gives_way(tmp_path):
    # Two ports each run the relaxation from their driver. With the reference driver shown,
    # the threaded driver (its copy, shown as the same file) would add nothing: the slot goes
    # to the caller in a file of its own, even when the copy is closer to the question.
    from codeteacher.retrieval.expand import expand
    from codeteacher.retrieval.search import Candidate

    kernel = ("// Jacobi relaxation of the pressure field.\n"
              "void relax_pressure(double* p, int n) {\n"
              "  for (int i = 1; i < n - 1; ++i) p[i] = 0.5 * (p[i-1] + p[i+1]);\n}\n")
    driver = ("void relax_pressure(double* p, int n);\n// Driver loop of the relaxation.\n"
              "int main() {\n  double pressure[64] = {0};\n"
              "  for (int step = 0; step < 10; ++step) relax_pressure(pressure, 64);\n"
              "  return 0;\n}\n")
    ix = index_of(tmp_path, {
        "ports/ref/relax.cpp": kernel,
        "ports/omp/relax.cpp": kernel.replace("  for", "#pragma omp parallel for\n  for"),
        "ports/ref/driver.cpp": driver,
        "ports/omp/driver.cpp": driver.replace("  for", "#pragma omp parallel\n  for"),
        "ports/ref/monitor.cpp": "void relax_pressure(double* p, int n);\n// Checks convergence.\n"
                                 "double residual(double* p, int n) {\n"
                                 "  relax_pressure(p, n);\n  return p[0];\n}\n",
    })
    store = Engine.load(ix, Settings()).store

    relax = record_at(store, "ports/ref/relax.cpp", "relax_pressure")
    ref_main = record_at(store, "ports/ref/driver.cpp", "main")
    copy = record_at(store, "ports/omp/driver.cpp", "main")
    callers = {s for t, s in store.edges_in[f"sym:{store.records[relax].id}"] if t == "call"}
    assert f"sym:{store.records[copy].id}" in callers  # the copy does call the seed
    cands = {relax: Candidate(idx=relax, score=1.0), ref_main: Candidate(idx=ref_main, score=0.9)}
    added = expand(store, cands, [cands[relax], cands[ref_main]], store.vectors[copy],
                   "minimal", Settings().expansion, lambda i: Candidate(idx=i))
    assert [(store.records[i].path, rel) for i, rel, _ in added
            if rel == "caller in another file"] == [("ports/ref/monitor.cpp",
                                                     "caller in another file")]


def test_an_answer_is_filled_past_a_pool_of_port_copies(tmp_path):
    # Eight port folders hold the best matches, one answer among them; the pick must go on
    # to the next candidates rather than return a short answer.
    files = {f"ports/p{n}/relax.cpp": f"// Jacobi relaxation sweep, port {n}.\n"
                                      f"void relax(double* p, int m) {{\n  for (int i = 1; i < m; ++i)"
                                      f" p[i] = 0.5 * (p[i-1] + p[{n} % m]);\n}}\n"
             for n in range(20)}
    files |= {f"io/out_{n}.cpp": f"// Writes sweep {n}.\nvoid write_{n}(const double* p) {{}}\n"
              for n in range(4)}
    ix = index_of(tmp_path, files)

    def paths(change=None):
        return [h.chunk.path for h in engine_with(ix, change).search(
            "How does the Jacobi relaxation sweep work?", k=2)]
    # (The pick looks through 4 x 2k candidates, here all port copies.)
    few = lambda s: setattr(s.retrieval, "select_pool", 1)  # noqa: E731
    got = paths(few)
    assert len(got) == 2 and sum("/relax.cpp" in p for p in got) == 1, got


def test_a_callee_in_another_file_that_the_question_found_joins_the_best_match(tmp_path):
    # The driver is the best match; of what it calls in other files, the kernel the question
    # also found (weakly) is lifted next to it. A callee the question did not find stays out
    # (the graph confirms a hit, it does not add a guess), and so does an accessor that the
    # question found: one statement does no work worth showing.
    from codeteacher.retrieval.expand import expand
    from codeteacher.retrieval.search import Candidate

    ix = index_of(tmp_path, {
        "src/driver.cpp": "void sweep(double* p, int n);\nvoid log_step(int s);\n"
                          "int grid_size();\n// Time loop.\nint main() {\n  double p[8] = {0};\n"
                          "  for (int s = 0; s < 4; ++s) { sweep(p, grid_size()); log_step(s); }\n"
                          "  return 0;\n}\n",
        "src/kernels/sweep.cpp": "// Relaxation sweep.\nvoid sweep(double* p, int n) {\n"
                                 "  for (int i = 1; i < n; ++i) p[i] = 0.5 * (p[i] + p[i-1]);\n}\n",
        "src/io/log.cpp": "#include <cstdio>\n// Step log.\nvoid log_step(int s) "
                          "{ std::printf(\"%d\\n\", s); }\n",
        "src/grid/size.cpp": "// Grid size.\nint grid_size() {\n  return 8;\n}\n",
    })
    store = Engine.load(ix, Settings()).store

    main, kernel = record_at(store, "src/driver.cpp", "main"), \
        record_at(store, "src/kernels/sweep.cpp", "sweep")
    logger, size = record_at(store, "src/io/log.cpp", "log_step"), \
        record_at(store, "src/grid/size.cpp", "grid_size")

    def run(settings, closest):
        # Only the driver is a seed (shown); the kernel and the accessor are weak candidates.
        cands = {main: Candidate(idx=main, score=1.0), kernel: Candidate(idx=kernel, score=0.01),
                 size: Candidate(idx=size, score=0.01)}
        expand(store, cands, [cands[main]], store.vectors[closest], "minimal",
               settings.expansion, lambda i: Candidate(idx=i))
        return cands

    for closest in (logger, size):  # the question is closest to a callee that may not join
        cands = run(Settings(), closest)
        assert cands[kernel].score == pytest.approx(Settings().expansion.other_file_decay)
        assert any("callee in another file" in w for w in cands[kernel].why)
        assert cands[size].score == pytest.approx(0.01)
        assert not any("callee in another file" in w
                       for w in (cands[logger].why if logger in cands else []))
    loose = Settings()
    loose.expansion.callee_min_statements = 0
    assert run(loose, size)[size].score == pytest.approx(Settings().expansion.other_file_decay)
    off = Settings()
    for prof in off.expansion.profiles.values():
        prof.callees = 0
    assert run(off, logger)[kernel].score == pytest.approx(0.01)


def test_of_several_callers_the_one_the_question_found_joins(tmp_path):
    # Two drivers call the helper; the question is closer (in embedding space) to one, but its
    # words found the other. The found one joins; by similarity alone, the other would.
    from codeteacher.retrieval.expand import expand
    from codeteacher.retrieval.search import Candidate

    helper = "// Sum over all ranks.\ndouble sum_all(double x) {\n  return x;\n}\n"
    caller = ("double sum_all(double x);\n// {what}\nvoid {name}(double* r) {{\n"
              "  r[0] = sum_all(r[0]);\n  r[1] = r[0];\n}}\n")
    ix = index_of(tmp_path, {
        "src/comms.cpp": helper,
        "src/solve_a.cpp": caller.format(what="Main step of the solver.", name="main_step"),
        "src/solve_b.cpp": caller.format(what="Set-up of the solver.", name="init_step"),
    })
    store = Engine.load(ix, Settings()).store
    seed = record_at(store, "src/comms.cpp", "sum_all")
    found = record_at(store, "src/solve_a.cpp", "main_step")
    closest = record_at(store, "src/solve_b.cpp", "init_step")

    def joined(order):
        s = Settings()
        s.expansion.neighbour_order = order
        cands = {seed: Candidate(idx=seed, score=1.0), found: Candidate(idx=found, score=0.02)}
        expand(store, cands, [cands[seed]], store.vectors[closest], "minimal", s.expansion,
               lambda i: Candidate(idx=i))
        return [store.records[i].name for i, c in cands.items()
                if any(w.startswith(("caller in another file", "also caller in another file"))
                       for w in c.why)]

    assert Settings().expansion.neighbour_order == "found_first"
    assert joined("found_first") == ["main_step"]
    assert joined("similarity") == ["init_step"]


def test_a_word_before_an_aside_in_parentheses_is_not_a_call(tmp_path):
    # "a run (units, steps)" is prose; "run(" or `run` is code.
    from codeteacher.retrieval.query import analyze

    ix = index_of(tmp_path, {"src/app.cpp": "// The main loop.\nvoid run() {\n  int x = 0;\n}\n"})
    store = Engine.load(ix, Settings()).store
    prose = analyze("What sets up a run (units, steps)?", store)
    assert prose.symbols.get("run", 0.0) < 0.5
    for code in ("What does run() do?", "What does `run` do?"):
        assert analyze(code, store).symbols.get("run") == 1.0, code


def test_a_number_and_its_letter_are_one_identifier_part(tmp_path):
    # "2D" in a question is one word; so is the "2D" of `Neighbor2D` or `grid_2d`, where it
    # used to fall apart into "2" and "d" (both too short to be tokens) and match nothing.
    from codeteacher.index.lexical import split_identifier, tokenize

    assert "2d" in tokenize("Neighbor2D") and "2d" in tokenize("grid_2d")
    assert "3d" in tokenize("mesh3DCoords") and "coords" in tokenize("mesh3DCoords")
    assert split_identifier("utf8String") == ["utf", "8", "string"]  # a number, then a word
    ix = index_of(tmp_path, {
        f"src/grid_{d}.cpp": f"// Fills the grid.\nvoid fill(double* g, int n) {{\n"
                             f"  for (int i = 0; i < n; ++i) g[i] = {d[0]}.0;\n}}\n"
        for d in ("2d", "3d")})
    store = Engine.load(ix, Settings()).store
    scores = store.lexical.scores(tokenize("How is the 2D grid filled?"))
    best = max(range(len(store.records)), key=lambda i: scores[i])
    assert store.records[best].path == "src/grid_2d.cpp"


def test_a_test_folders_main_is_no_port_of_the_programs_main(tmp_path):
    # Both define main(); the test's is smaller, so by plainness alone it would be shown in
    # place of the program's driver. A test file is no variant of the program.
    from codeteacher.retrieval.ports import PortRules, plainest_twin

    work = "".join(f"  x += step_{n}(x);\n" for n in range(12))
    files = {
        "src/main.cpp": "// The driver: sets up, runs and reports.\nint main(int argc, char** argv) "
                        "{\n  double x = 1.0;\n" + work + "  return report(x);\n}\n",
        "unittesting/Geometry/main.cpp": "// Checks the geometry.\nint main() {\n"
                                         "  return check_geometry();\n}\n",
    }
    store = Engine.load(index_of(tmp_path, files), Settings()).store
    rs = Settings().retrieval
    rules = PortRules(rs.port_share, None, True, rs.device_constructs, "", rs.reference_port_cue)
    prog = record_at(store, "src/main.cpp", "main")
    assert store.records[prog].scope == "src"
    assert store.records[record_at(store, "unittesting/Geometry/main.cpp", "main")].scope \
        == "test"
    assert plainest_twin(store, store.records[prog], set(), set(), store.vectors[prog],
                         rules) is None


def test_identical_copies_are_shown_in_the_reference_one_when_the_family_has_other_files(
        tmp_path):
    # Two ports hold byte-identical copies of a header of declarations; a test folder holds
    # a different header of the same stem (no port of it). The copy that scored best is
    # replaced by the reference folder's copy, not kept for want of a plainest port.
    from codeteacher.retrieval.ports import PortRules, plainest_twin

    decls = "// Box splitting.\nvoid split_box(int* box, int parts);\nint box_size(int* b);\n"
    kernel = "// Step {n}.\nvoid step_{n}(double* x) {{\n  x[0] += {n}.0;\n  x[1] = x[0];\n}}\n"
    files = {}
    for port in ("ref", "vendor"):
        files[f"app/{port}/utils/Box.hpp"] = decls
        for n in range(3):
            files[f"app/{port}/src/step_{n}.cpp"] = kernel.format(n=n) + (
                "" if port == "ref" else "// vendor library call\n")
    files["app/ref/tests/old/Box.h"] = "// An older test header.\nstruct Old {\n  int a;\n};\n"
    ix = index_of(tmp_path, files)
    store = Engine.load(ix, Settings()).store
    rs = Settings().retrieval
    rules = PortRules(rs.port_share, None, True, rs.device_constructs, "", rs.reference_port_cue)
    vendor = store.file_record_index("app/vendor/utils/Box.hpp")
    twin = plainest_twin(store, store.records[vendor], set(), set(), store.vectors[vendor],
                         rules)
    assert twin is not None and store.records[twin].path == "app/ref/utils/Box.hpp"
    ref = store.file_record_index("app/ref/utils/Box.hpp")
    assert plainest_twin(store, store.records[ref], set(), set(), store.vectors[ref],
                         rules) is None


# ---- trivial chunks and files, another project's copy -------------------------------------------

WRITER = {
    "src/writer.hh": "#pragma once\n// Writes the mesh fields to disk.\nclass Writer {\npublic:\n"
                     "  Writer();\n  ~Writer();\n  void write(const double* f, int n);\n};\n",
    "src/writer.cc": "#include \"writer.hh\"\nWriter::Writer() {}\nWriter::~Writer() {}\n"
                     "void Writer::write(const double* f, int n) {\n  double s = 0;\n"
                     "  for (int i = 0; i < n; ++i) s += f[i];\n  if (s > 0) s = -s;\n"
                     "  for (int i = 0; i < n; ++i) s -= f[i] * 0.5;\n}\n",
    "src/stub.cpp": "#include \"writer.hh\"\nvoid stub_begin() {}\nvoid stub_end() {}\n",
    "vendor/jsonlib/LICENSE": "Permission is hereby granted, free of charge, to any person.\n",
    "vendor/jsonlib/README.md": "# jsonlib\n\nA small json library.\n",
    "vendor/jsonlib/writer.cpp": "// Writes a json document to disk.\n"
                                 "void json_write_document(const char* path) {\n"
                                 "  int fields = 0;\n  for (int i = 0; i < 3; ++i) fields += i;\n}\n",
}


def _file_entity(store, path: str) -> int:
    return next(i for i, r in enumerate(store.records) if r.path == path and r.kind == "file")


def test_a_file_is_not_shown_through_a_trivial_chunk(tmp_path):
    from codeteacher.retrieval.search import Candidate, select

    store = Engine.load(index_of(tmp_path, WRITER), Settings()).store
    # The file leads; of its own chunks only the empty destructor is in the pool.
    ranked = [Candidate(idx=_file_entity(store, "src/writer.cc"), score=1.0),
              Candidate(idx=record_at(store, "src/writer.cc", "~Writer"), score=0.9)]
    shown = select(store, ranked, 1, max_per_file=1, trivial_lines=3)
    assert store.records[shown[0].idx].kind == "file"  # the file itself, not `~Writer() {}`
    old = select(store, [Candidate(idx=c.idx, score=c.score) for c in ranked], 1,
                 max_per_file=1, trivial_lines=0)
    assert store.records[old[0].idx].name == "~Writer"


def test_a_file_of_empty_definitions_is_left_out_unless_named(tmp_path):
    from codeteacher.retrieval.search import Candidate, select

    store = Engine.load(index_of(tmp_path, WRITER), Settings()).store

    def shown(why=(), trivial_lines=3):
        ranked = [Candidate(idx=_file_entity(store, "src/stub.cpp"), score=1.0, why=list(why)),
                  Candidate(idx=_file_entity(store, "src/writer.hh"), score=0.5)]
        return [store.records[c.idx].path for c in select(store, ranked, 2, max_per_file=1,
                                                          trivial_lines=trivial_lines)]

    assert "src/stub.cpp" not in shown()
    assert "src/stub.cpp" in shown(why=["file named in question"])
    assert "src/stub.cpp" in shown(trivial_lines=0)
    # A header of declarations lists an interface: it is no stub file.
    ranked = [Candidate(idx=_file_entity(store, "src/writer.hh"), score=1.0)]
    assert select(store, ranked, 1, max_per_file=1, trivial_lines=3)


def test_another_projects_copy_is_found_by_its_licence_and_ranked_down(tmp_path):
    from codeteacher.retrieval.rerank import third_party_roots

    # The root's own licence marks nothing, a code file is no licence, and a licence page
    # beside no README of its own is part of this project's docs.
    assert third_party_roots(["LICENSE", "README.md", "src/a.cpp", "ext/zlib/COPYING",
                              "ext/zlib/README", "ext/zlib/z.c", "docs/licence.md",
                              "src/license_check.cpp", "src/readme_parser.cpp"],
                             frozenset({"license", "licence", "copying"})) == ("ext/zlib/",)
    ix = index_of(tmp_path, WRITER)
    question = "How are documents written to disk?"

    def vendored(change=None):
        hits = engine_with(ix, change).search(question, k=8)
        return next(h for h in hits if h.chunk.path == "vendor/jsonlib/writer.cpp")

    on = vendored()
    assert any("third_party" in w for w in on.why)
    off = vendored(lambda s: setattr(s.rerank.weights, "third_party", 0.0))
    assert not any("third_party" in w for w in off.why)
    assert on.score == pytest.approx(off.score - 0.02, abs=1e-4)
    # Named by its folder, the copy is what the question is about.
    named = engine_with(ix).search("How does jsonlib write documents to disk?", k=8)
    assert not any("third_party" in w for h in named for w in h.why)


def test_a_licensed_folder_of_this_projects_own_parts_is_no_copy():
    from codeteacher.retrieval.rerank import third_party_roots

    markers = frozenset({"license", "copying"})
    ports = ["README.md", "ref/LICENSE", "ref/README", "ref/atom.cpp", "ref/force.cpp",
             "ref/comm.cpp", "omp/atom.cpp", "omp/force.cpp", "omp/comm.cpp",
             "tools/fmt/LICENSE", "tools/fmt/README", "tools/fmt/format.cpp", "drv/main.cpp",
             "drv/io.cpp", "drv/run.cpp"]
    # A released port whose code file names recur in another port is the same program;
    # the formatting tool beside it is another project's copy.
    assert third_party_roots(ports, markers) == ("tools/fmt/",)
    # Before the rule: both would be copies (the port's names counted nowhere else).
    assert third_party_roots([p for p in ports if not p.startswith("omp/")], markers) \
        == ("ref/", "tools/fmt/")
    # A folder with most of the code is the project's own.
    alone = ["README.md", "app/LICENSE", "app/README", "app/a.cpp", "app/b.cpp", "x/c.cpp"]
    assert third_party_roots(alone, markers) == ()
    # The root's licence, word for word, is this project's licence.
    texts = {"LICENSE": "BSD 3-Clause\nCopyright 2020 Us", "a/LICENSE": "BSD  3-Clause "
             "Copyright 2020 Us\n", "b/COPYING": "GPL v2", "a/README": "", "b/README": ""}
    tree = list(texts) + ["a/x.cpp", "b/y.cpp", "b/z.cpp", "main.cpp", "io.cpp", "w.cpp"]
    assert third_party_roots(tree, markers, texts.get) == ("b/",)
    assert third_party_roots(tree, markers) == ("a/", "b/")


_NOTICE = ("/* Copyright (c) 2008-2020 The Example Group Inc.\n * Licensed under the Apache "
           "License, Version 2.0 (the \"License\"). */\n")


def test_files_that_carry_a_foreign_licence_notice_are_another_projects_copy(tmp_path):
    from codeteacher.retrieval.rerank import foreign_notice_roots

    heads = {"src/api/cl.h": _NOTICE, "src/api/cl_ext.h": _NOTICE, "src/api/readme.txt": "",
             "src/own/a.cpp": "// Copyright 2021 Us. Licensed under the MIT licence.\n",
             "src/own/b.cpp": "// Copyright 2021 Us. Licensed under the MIT licence.\n",
             "src/tools/t.cpp": "// Copyright 2021 Us. Licensed under the MIT licence.\n",
             "src/one/x.h": _NOTICE.replace("Example", "Other"), "src/one/y.h": "",
             "src/one/z.h": "", "lib/mentions.h": "// Copyright 2019 Someone, all rights.\n",
             "src/ocl/CL/only.hpp": _NOTICE.replace("Example", "Khronos")}
    # Our own holder is named in several folders; a single noticed file is no copy; a
    # copyright line without licence wording is no notice.
    markers = frozenset({"license"})
    # A folder of one noticed file is a single-header library.
    assert foreign_notice_roots(list(heads), heads.get, markers) == ("src/api/", "src/ocl/CL/")
    # The holder of the root's licence is the project itself.
    mine = {**heads, "LICENSE": "Copyright (c) 2008 The Example Group Inc.\n"}
    assert foreign_notice_roots(list(mine), mine.get, markers) == ("src/ocl/CL/",)
    # A folder with most of the code is the project's own, whatever its notices say.
    alone = {p: t for p, t in heads.items() if p.startswith("src/api/")}
    assert foreign_notice_roots(list(alone), alone.get, markers) == ()
    files = {"src/api/cl.h": _NOTICE + "// Queues kernels on the device.\nint enqueue_kernel"
                                       "(int queue, int kernel);\n",
             "src/api/cl_ext.h": _NOTICE + "// Device kernel queue extensions.\nint "
                                           "enqueue_kernel_ext(int queue);\n",
             "src/run.cpp": "// Queues the docking kernel on the device.\nvoid run_kernel() "
                            "{ enqueue_kernel(0, 1); }\n",
             "src/main.cpp": "// Reads the deck, then runs.\nint main() { run_kernel(); }\n",
             "src/deck.cpp": "// Reads the input deck.\nint read_deck(const char* f) "
                             "{ return f != 0; }\n"}
    ix = index_of(tmp_path, files)

    def why(change=None):
        hits = engine_with(ix, change).search("How is the kernel queued on the device?", k=6)
        return {h.chunk.path: h.why for h in hits}

    on = why()
    assert any("third_party" in w for w in on["src/api/cl.h"])
    assert not any("third_party" in w for w in on["src/run.cpp"])
    off = why(lambda s: setattr(s.rerank, "third_party_notice", False))
    assert not any("third_party" in w for ws in off.values() for w in ws)


def test_the_main_code_above_its_variants_is_the_reference(tmp_path):
    # The main code at the top, two variants of it in sub-folders; the amr/ variant is the
    # shortest, so plainness alone would show it for a question about the main solver.
    main = ("// Lagrangian hydrodynamics solver: mass matrix, force operator and time step.\n"
            "double solve_hydro_step(double* v, int n) {\n  double e = 0;\n"
            "  for (int i = 0; i < n; ++i) { v[i] *= 0.5; e += v[i]; }\n"
            "  for (int i = 0; i < n; ++i) e -= v[i] * 0.25;\n  return e;\n}\n"
            "double hydro_energy(const double* v, int n) {\n  double e = 0;\n"
            "  for (int i = 0; i < n; ++i) e += v[i] * v[i];\n  return e;\n}\n")
    files = {"hydro.cpp": main,
             "amr/hydro.cpp": "// Lagrangian hydrodynamics solver: time step.\n"
                              "double solve_hydro_step(double* v, int n) { return v[0] * n; }\n"
                              "double hydro_energy(const double* v, int n) { return v[0]; }\n",
             "serial/hydro.cpp": main.replace("0.25", "0.5")}
    ix = index_of(tmp_path, files)
    question = "How does the Lagrangian hydrodynamics solver advance one time step?"

    def shown(change=None):
        return [h.chunk.path for h in engine_with(ix, change).search(question, k=3)]

    assert shown()[0] == "hydro.cpp"
    assert shown(lambda s: setattr(s.retrieval, "enclosing_reference", False))[0] != "hydro.cpp"


def test_a_variant_below_the_main_code_shows_the_main_codes_symbol(tmp_path):
    # amr/ copies the main program and adds refinement functions of its own, so the two files
    # share too few functions to count as ports; its main is still the main code's variant,
    # and the main code above it is what a question about the run should show.
    main = ("// Main program: reads the mesh, distributes it over the MPI ranks and runs the\n"
            "// time loop with a global reduction of the energy every step.\n"
            "int main(int argc, char** argv) {\n  partition_mesh(argc);\n"
            "  for (int step = 0; step < 10; ++step) reduce_energy(step);\n  return 0;\n}\n")
    helpers = "".join(f"void helper_{n}(int x) {{ (void)x; }}\n" for n in range(6))
    refine = "".join(f"void refine_{n}(int level) {{ (void)level; }}\n" for n in range(6))
    files = {"app.cpp": main + helpers,
             "amr/app.cpp": main.replace("time loop", "time loop, refining the mesh,") + refine,
             "mesh.cpp": "// Splits the mesh.\nvoid partition_mesh(int n) { (void)n; }\n",
             "energy.cpp": "// Sums the energy.\nvoid reduce_energy(int s) { (void)s; }\n"}
    ix = index_of(tmp_path, files)
    question = ("How is the mesh distributed over the MPI ranks, and where is the energy "
                "reduced in the time loop, refining the mesh?")

    def mains(change=None) -> list[str]:
        return [h.chunk.path for h in engine_with(ix, change).search(question, k=6)
                if h.chunk.name == "main"]

    assert mains()[0] == "app.cpp", mains()
    assert mains(lambda s: setattr(s.retrieval, "enclosed_variants", False))[0] == \
        "amr/app.cpp"


def test_of_ports_named_alike_the_plainest_is_shown(tmp_path):
    # "OpenMP" names openmp-threading/ and openmp-offload/ alike (one unasked folder word each:
    # "threading" counts once, not once more for its stem); the one without device code wins.
    from codeteacher.retrieval.ports import PortRules, _named_port

    files = {"openmp-threading/update.cpp": _THREADED_UPDATE,
             "openmp-offload/update.cpp": _THREADED_UPDATE.replace(
                 "parallel for simd", "target teams distribute parallel for"),
             "cuda/update.cpp": _DEVICE_UPDATE}
    store = Engine.load(index_of(tmp_path, files), Settings()).store
    members = ["openmp-offload/update.cpp", "openmp-threading/update.cpp", "cuda/update.cpp"]
    asked = {"openmp", "cpu", "code", "relax"}
    device = Settings().retrieval.device_constructs
    rules = PortRules(by_folder=True, device=device, tie_plainest=True)
    assert _named_port(store, members, asked, None, rules) == "openmp-threading/update.cpp"
    off = PortRules(by_folder=True, device=device, tie_plainest=False)
    assert _named_port(store, members, asked, None, off) == "openmp-offload/update.cpp"


def test_the_best_matchs_twin_joins_below_it_and_no_other_seeds(tmp_path):
    # The best match is defined in solver.c; its declaration lives in solver.h, which the
    # question need not find at all (a header of prototypes). The twin joins at twin_decay of
    # the seed's score; the twin of the second seed does not (twins of every seed pushed out
    # other files of the answer).
    from codeteacher.retrieval.expand import expand
    from codeteacher.retrieval.search import Candidate

    ix = index_of(tmp_path, {
        "src/solver.h": "#pragma once\nvoid relax_grid(double* g, int n);\n",
        "src/solver.c": "#include \"solver.h\"\n// One relaxation sweep over the grid.\n"
                        "void relax_grid(double* g, int n) {\n"
                        "  for (int i = 1; i < n; ++i) g[i] = 0.5 * (g[i] + g[i-1]);\n}\n",
        "src/io.h": "#pragma once\nvoid write_grid(const double* g, int n);\n",
        "src/io.c": "#include <stdio.h>\n#include \"io.h\"\n// Prints the grid.\n"
                    "void write_grid(const double* g, int n) {\n"
                    "  for (int i = 0; i < n; ++i) printf(\"%g\\n\", g[i]);\n}\n",
    })
    store = Engine.load(ix, Settings()).store
    relax, write = record_at(store, "src/solver.c", "relax_grid"), \
        record_at(store, "src/io.c", "write_grid")
    header, io_header = store.file_record_index("src/solver.h"), store.file_record_index("src/io.h")

    def run(settings):
        cands = {relax: Candidate(idx=relax, score=1.0), write: Candidate(idx=write, score=0.5)}
        expand(store, cands, [cands[relax], cands[write]], store.vectors[relax], "balanced",
               settings.expansion, lambda i: Candidate(idx=i))
        return cands

    cands = run(Settings())
    assert cands[header].score == pytest.approx(Settings().expansion.twin_decay)
    assert any("declaration/definition twin" in w for w in cands[header].why)
    assert not any("declaration/definition twin" in w
                   for w in (cands[io_header].why if io_header in cands else []))
    every = Settings()
    every.expansion.twin_seeds = 2
    assert any("declaration/definition twin" in w for w in run(every)[io_header].why)
    off = Settings()
    for prof in off.expansion.profiles.values():
        prof.twin = 0
    assert not any("declaration/definition twin" in w
                   for w in (run(off)[header].why if header in run(off) else []))


def _expand_from(store, seed: int, profile: str = "minimal", settings=None, named=()):
    """Expansion of one seed candidate (score 1.0): idx -> candidate."""
    from codeteacher.retrieval.expand import expand
    from codeteacher.retrieval.search import Candidate

    settings = settings or Settings()
    cands = {seed: Candidate(idx=seed, score=1.0)}
    expand(store, cands, [cands[seed]], store.vectors[seed], profile, settings.expansion,
           lambda i: Candidate(idx=i), frozenset(named))
    return cands


def _joined(store, cands, relation: str) -> set[str]:
    return {store.records[i].path for i, c in cands.items()
            if any(w.startswith(relation) for w in c.why)}


def test_a_stub_with_a_stray_semicolon_is_one_statement():
    from codeteacher.retrieval.expand import _statements

    assert _statements("List Neighbor::get_list() { return List(); };") == 1
    assert _statements("void step() { a(); b(); }") == 2
    assert _statements("struct Box { int n; };") == 1


def test_the_files_that_include_a_named_header_join_when_few_do(tmp_path):
    # A question names tables.h, included by two files, one of them inside a function body
    # (a list expanded there); common.h is included by five, which makes it plumbing.
    body = "#include \"common.h\"\nint f{n}() {{ return {n}; }}\n"
    files = {f"src/user_{n}.c": body.format(n=n) for n in range(5)}
    files |= {
        "src/common.h": "#pragma once\ntypedef double real;\n",
        "src/tables.h": "#pragma once\nstatic const int order[4] = {0, 1, 3, 2};\n",
        "src/curve.c": "#include \"tables.h\"\n// Orders blocks along a curve.\n"
                       "int curve(int i) { return order[i % 4]; }\n",
        "src/setup.c": "// Sets up the blocks.\nint setup(int i) {\n"
                       "#include \"tables.h\"\n  return order[i % 4] + i;\n}\n",
    }
    store = Engine.load(index_of(tmp_path, files), Settings()).store
    tables, common = store.file_record_index("src/tables.h"), store.file_record_index("src/common.h")
    includers = "file that includes it"
    named = ["src/tables.h", "src/common.h"]
    assert _joined(store, _expand_from(store, tables, named=named), includers) == {
        "src/curve.c", "src/setup.c"}
    assert _joined(store, _expand_from(store, common, named=named), includers) == set()
    # Found by its topic, not named: the includers are not what the question is about.
    assert _joined(store, _expand_from(store, tables), includers) == set()
    off = Settings()
    for prof in off.expansion.profiles.values():
        prof.includers = 0
    assert _joined(store, _expand_from(store, tables, settings=off, named=named), includers) \
        == set()


def test_build_files_that_hand_work_to_each_other_join_both_ways(tmp_path):
    from codeteacher.retrieval.expand import _build_links

    files = {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(heat CXX)\n"
                          "include(cmake/options.cmake)\nadd_subdirectory(src)\n"
                          "add_subdirectory(${EXTRA_DIR})\n",
        "cmake/options.cmake": "option(HEAT_ENABLE_MPI \"Build with MPI\" ON)\n",
        "src/CMakeLists.txt": "add_executable(heat main.cpp)\n",
        "Makefile": "default:\n\n%:\n\t${MAKE} -C src $@\n",
        "src/Makefile": "include Makefile.inc\nheat: main.cpp\n\t$(CXX) -o heat main.cpp\n",
        "src/Makefile.inc": "CXX ?= g++\n",
        "src/main.cpp": "// Heat solver driver.\nint main() { return 0; }\n",
    }
    store = Engine.load(index_of(tmp_path, files), Settings()).store
    links = _build_links(store)
    assert sorted(links["CMakeLists.txt"]) == ["cmake/options.cmake", "src/CMakeLists.txt"]
    assert links["src/CMakeLists.txt"] == ["CMakeLists.txt"]
    assert links["Makefile"] == ["src/Makefile"]
    assert sorted(links["src/Makefile"]) == ["Makefile", "src/Makefile.inc"]
    top_make = next(i for i, r in enumerate(store.records)
                    if r.path == "src/Makefile" and r.kind == "build")
    assert _joined(store, _expand_from(store, top_make), "build file linked to it") == {
        "Makefile", "src/Makefile.inc"}


def test_a_question_naming_its_build_tool_ranks_the_other_tools_files_down(tmp_path):
    # Both build files switch MPI on; the question asks about the CMake build, so the
    # Makefile is ranked down (and marked), and a question about the Makefile is not.
    files = {
        "CMakeLists.txt": "cmake_minimum_required(VERSION 3.16)\nproject(heat CXX)\n"
                          "option(HEAT_ENABLE_MPI \"Build with MPI support\" ON)\n"
                          "if(HEAT_ENABLE_MPI)\n  find_package(MPI REQUIRED)\n"
                          "  target_link_libraries(heat MPI::MPI_CXX)\nendif()\n"
                          "add_executable(heat src/main.cpp)\n",
        "Makefile": "# Build with MPI support: make MPI=1\nCXX ?= g++\nifeq ($(MPI),1)\n"
                    "  CXX = mpicxx\n  CXXFLAGS += -DHEAT_ENABLE_MPI\nendif\n"
                    "heat: src/main.cpp\n\t$(CXX) $(CXXFLAGS) -o heat src/main.cpp\n",
        "src/main.cpp": "// Heat solver driver.\nint main() { return 0; }\n",
    }
    ix = index_of(tmp_path, files)

    def hit(engine, q, path):
        return next(h for h in engine.search(q, k=5) if h.chunk.path == path)

    q = "How do I turn on MPI support in the CMake build?"
    on, off = engine_with(ix), engine_with(
        ix, lambda s: setattr(s.rerank.weights, "other_build_tool", 0.0))
    ranked, plain = hit(on, q, "Makefile"), hit(off, q, "Makefile")
    assert any("other_build_tool" in w for w in ranked.why)
    assert ranked.score == pytest.approx(plain.score + on.settings.rerank.weights.other_build_tool,
                                         abs=1e-6)
    assert not any("other_build_tool" in w for w in hit(on, q, "CMakeLists.txt").why)
    q_make = "How do I turn on MPI support in the Makefile build?"
    assert not any("other_build_tool" in w for w in hit(on, q_make, "Makefile").why)
    assert any("other_build_tool" in w for w in hit(on, q_make, "CMakeLists.txt").why)


def test_an_example_folders_driver_is_not_ranked_down_as_off_scope(tmp_path):
    # The program's own driver lives in example/ (its main runs the simulation); a question
    # about the time loop is answered there. Test and build chunks still take off_scope, and
    # so does an example that holds no entry point (a deck, a sample setup).
    files = {
        "example/run.cpp": ("// Main program: advances the field and pushes the particles "
                            "every time step.\nint main() {\n  for (int step = 0; step < 10; "
                            "++step) {\n    advance_field(step);\n    push_particles(step);\n"
                            "  }\n  return 0;\n}\n"),
        "tests/test_push.cpp": ("// Checks that one time step pushes the particles.\n"
                                "int test_push_one_step() { push_particles(1); return 0; }\n"),
        "src/field.cpp": "// Field solver.\nvoid advance_field(int step) { (void)step; }\n",
        "src/push.cpp": "// Particle pusher.\nvoid push_particles(int step) { (void)step; }\n",
        "example/deck.cpp": ("// Example deck: sets up the field and the particles before the "
                             "time steps.\nvoid setup_deck() {\n  advance_field(0);\n"
                             "  push_particles(0);\n}\n"),
    }
    ix = index_of(tmp_path, files)
    q = "How does the main program advance the field and push the particles every time step?"

    def notes(change=None) -> dict[str, str]:
        return {h.chunk.path: " ".join(h.why) for h in engine_with(ix, change).search(q, k=6)}

    default = notes()
    assert "example" in Settings().rerank.off_scopes
    assert "example/run.cpp" in default and "off_scope" not in default["example/run.cpp"], default
    assert "off_scope" in default["tests/test_push.cpp"], default
    assert "off_scope" in default["example/deck.cpp"], default  # an example, not the driver
    old = notes(lambda s: setattr(s.rerank, "driver_scopes", []))
    assert "off_scope" in old["example/run.cpp"], old


def test_code_that_writes_results_gives_way_unless_the_question_asks_about_output(tmp_path):
    # A visualisation writer names every field of the run, so a question about the physics
    # of those fields matches it by vocabulary; it answers questions about output.
    files = {
        "src/visualization.cpp": (
            "// Writes density, energy and pressure of every cell for plotting.\n"
            "void write_cell_fields(const double* density, const double* energy,\n"
            "                       const double* pressure, int n) {\n"
            "  for (int i = 0; i < n; ++i) emit(density[i], energy[i], pressure[i]);\n}\n"),
        "src/eos.cpp": (
            "// Ideal gas equation of state.\n"
            "void ideal_gas(const double* density, const double* energy, double* pressure,\n"
            "               int n, double gamma) {\n"
            "  for (int i = 0; i < n; ++i) pressure[i] = (gamma - 1.0) * density[i] * "
            "energy[i];\n}\n"),
        "src/hydro.cpp": "// Hydro step.\nvoid hydro_step(int n) { (void)n; }\n",
    }
    ix = index_of(tmp_path, files)
    physics = "How is the pressure of each cell computed from its density and energy?"
    output = "Where are the density, energy and pressure of each cell written out for plotting?"

    def notes(q, change=None) -> dict[str, str]:
        return {h.chunk.path: " ".join(h.why) for h in engine_with(ix, change).search(q, k=4)}

    default = notes(physics)
    assert "output_code" in default["src/visualization.cpp"], default
    assert "output_code" not in default["src/eos.cpp"], default
    assert list(default)[0] == "src/eos.cpp", default
    asked = notes(output)
    assert "output_code" not in asked["src/visualization.cpp"], asked
    off = notes(physics, lambda s: setattr(s.rerank.weights, "output_code", 0.0))
    assert "output_code" not in off["src/visualization.cpp"], off


README_TOPIC = {
    "README.md": "# Heat\n\n## The diffusion step\n\nHow the diffusion step of the temperature "
                 "is computed: the diffusion step of the temperature is computed from the "
                 "neighbours of each cell.\n\n## Building\n\nRun make to build the solver.\n",
    **{f"src/part{i}.cpp": f"// Update {i} of the cell values.\n"
                           f"double update_{i}(const double* t, int c) {{\n"
                           f"  return t[c] + 0.{i} * (t[c - 1] - 2 * t[c] + t[c + 1]);\n}}\n"
       for i in range(1, 8)},
}


def test_documents_follow_the_first_code_results_unless_asked_for(tmp_path):
    ix = index_of(tmp_path, README_TOPIC)
    question = "How is the diffusion step of the temperature computed?"

    def places(q, change=None):
        hits = engine_with(ix, change).search(q, k=10)
        return [h.chunk.path for h in hits], hits

    off, _ = places(question, lambda s: setattr(s.retrieval, "doc_after", 0))
    assert off.index("README.md") < 5  # the README's words match best
    on, hits = places(question)
    assert on.index("README.md") == 5 and all(p.startswith("src/") for p in on[:5])
    assert any("document (shown after" in w for h in hits if h.chunk.path == "README.md"
               for w in h.why)
    # A document further down is not pulled up: only those among the first five move.
    from codeteacher.retrieval.search import Candidate, docs_after
    store = engine_with(ix).store
    files = {r.path: i for i, r in enumerate(store.records) if r.kind == "file"}
    order = ["README.md", *[f"src/part{i}.cpp" for i in range(1, 8)]]
    late = order[2:7] + ["README.md", order[1]] + order[7:]
    moved = docs_after(store, [Candidate(idx=files[p]) for p in late], 5)
    assert [store.records[c.idx].path for c in moved] == late
    early = docs_after(store, [Candidate(idx=files[p]) for p in order], 5)
    assert [store.records[c.idx].path for c in early] == order[1:6] + ["README.md"] + order[6:]
    # Building, or a document the question names, keeps its place.
    built, _ = places("How do I build the diffusion step of the temperature solver?")
    assert built.index("README.md") < 5
    named, _ = places("What does README.md say about the diffusion step?")
    assert named.index("README.md") < 5
    run, _ = places("How do I run the diffusion step of the temperature?")
    assert run.index("README.md") < 5
    # "When running on ..." asks about the code, not about how to run it.
    running, _ = places("When running in parallel, how is the diffusion step of the temperature "
                        "computed?")
    assert running.index("README.md") >= 5


# ---- the in-scope list of a build question, and plain words that are file names -------------

# Prose and code that talk about compiling, compilers and flags; the build files themselves
# say CC, CFLAGS and mpicc. A build question must still reach them.
COMPILE_TALK = {
    f"src/part{i}.c": f"/* Part {i} of the solver. The compiler flags chosen when you compile "
                      f"this part matter:\n   the compiler must not reorder the sum. */\n"
                      f"double part{i}(double x) {{ return x * {i}; }}\n"
    for i in range(8)
} | {
    "README": "Solver\n======\n\nCompile the code with a recent compiler. The flags used to "
              "compile it are\nchosen for speed; see the notes on compiler flags below.\n\n"
              "Compiler notes\n--------------\n\nEvery compiler flag that changes rounding "
              "is avoided.\n",
    "ref/Makefile": "CC = mpicc\nCFLAGS = -O3\nLDLIBS = -lm\nsolver.x: main.o\n"
                    "\t$(CC) $(CFLAGS) -o $@ main.o $(LDLIBS)\n",
    "threaded/Makefile": "CC = mpicc\nCFLAGS = -O3 -fopenmp\nLDLIBS = -lm -lgomp\n"
                         "solver.x: main.o\n\t$(CC) $(CFLAGS) -o $@ main.o $(LDLIBS)\n",
    "ref/main.c": "int main(void) { return 0; }\n",
    "threaded/main.c": "#include <omp.h>\nint main(void) { return omp_get_max_threads(); }\n",
}


def test_a_build_question_reaches_the_build_files_whatever_words_they_use(tmp_path):
    ix = index_of(tmp_path, COMPILE_TALK)
    question = "How do I compile the code, and which compiler and flags are used?"

    def top(change=None):
        hits = engine_with(ix, change).search(question, k=5)
        return {h.chunk.path: h for h in hits}

    def switched_on(s):
        s.retrieval.scope_channel.enabled = True

    off = top()  # off by default (eval/README.md)
    assert not any(p.endswith("Makefile") for p in off)  # every other file says the words
    on = top(switched_on)
    makefiles = [h for p, h in on.items() if p.endswith("Makefile")]
    assert makefiles and all(any(w.startswith("in-scope #") for w in h.why) for h in makefiles)
    # Only the intents that ask for it: a question about the code is left as it was.
    code_q = "Why must the sum not be reordered in the solver parts?"
    assert [h.chunk.path for h in engine_with(ix, switched_on).search(code_q, k=5)] == [
        h.chunk.path for h in engine_with(ix).search(code_q, k=5)]


def test_a_plain_word_that_is_a_files_name_names_it_only_weakly(tmp_path):
    from codeteacher.retrieval.query import analyze

    files = {"tools/build": "#!/bin/sh\ng++ -O2 -o solver ../src/main.cpp\n",
             "INSTALL": "Install with make.\n",
             "Makefile": "solver: src/main.cpp\n\t$(CXX) -O2 -o solver src/main.cpp\n",
             "src/main.cpp": "// Solver driver.\nint main() { return 0; }\n"}
    ix = index_of(tmp_path, files)
    store = engine_with(ix).store
    qa = analyze("How do I build the solver and install it?", store)
    assert qa.named_files == [] and sorted(qa.word_files) == ["INSTALL", "tools/build"]
    assert analyze("What does the build script in tools do?", store).word_files == [
        "tools/build"]
    # Written as a name (capitals, capitalised, a path) it is one.
    assert analyze("What does INSTALL say?", store).named_files == ["INSTALL"]
    assert analyze("What does the Makefile build?", store).named_files == ["Makefile"]
    assert analyze("What does tools/build do?", store).named_files == [
        "tools/build"]
    def script(change=None):
        hits = engine_with(ix, change).search("How do I build the solver?", k=5)
        return next(h for h in hits if h.chunk.path == "tools/build")

    assert script().score < 0.2  # a share of the bonus, not all of it (1.0) as before:
    assert script(lambda s: setattr(s.retrieval, "word_file_factor", 1.0)).score > 0.8


MACRO_SWITCH = {
    "src/types.h": "#pragma once\n#ifdef USE_SMALL_INDEX\n"
                   "/// The vertex index type: 32-bit vertex indices.\ntypedef int index_t;\n"
                   "#else\n/// The vertex index type: 64-bit vertex indices.\n"
                   "typedef long index_t;\n#endif\n/// The edge weight type.\n"
                   "typedef double weight_t;\n",
    "Makefile": "CXX = mpicxx\nCXXFLAGS = -O3 -fopenmp -DPRINT_STATS #-DUSE_SMALL_INDEX\n"
                "graph: main.o\n\t$(CXX) $(CXXFLAGS) -o $@ main.o\n",
    "src/main.cpp": "#include \"types.h\"\n// Reads a graph and prints its vertex count.\n"
                    "int main() { index_t vertices = 0; return (int)vertices; }\n",
} | {
    f"src/graph_{n}.cpp": f"#include \"types.h\"\n// Vertex index arithmetic of part {n} of the "
                          f"graph.\nindex_t vertex_index_{n}(index_t vertex) {{ return vertex + "
                          f"{n}; }}\nweight_t edge_weight_{n}(index_t edge) {{ return edge * "
                          f"0.5; }}\n"
    for n in range(3)
}


def test_a_build_switch_question_brings_the_build_file_that_sets_the_tested_macro(tmp_path):
    from codeteacher.retrieval.expand import _macro_builds, _tested_macros

    ix = index_of(tmp_path, MACRO_SWITCH)
    store = engine_with(ix).store
    assert _tested_macros(store, "src/types.h") == {"USE_SMALL_INDEX"}
    assert [store.records[i].path for i in _macro_builds(store)["USE_SMALL_INDEX"]] == [
        "Makefile"]  # -DUSE_SMALL_INDEX is the macro USE_SMALL_INDEX
    question = "Where is the vertex index type defined, and how do I switch it to 32-bit?"

    def top(q, change=None):
        return {h.chunk.path: h for h in engine_with(ix, change).search(q, k=5)}

    def no_link(s):
        for p in s.expansion.profiles.values():
            p.macro_builds = 0

    assert "Makefile" not in top(question, no_link)
    on = top(question)
    assert "Makefile" in on and any("build file setting a macro it tests" in w
                                    for w in on["Makefile"].why)
    # Only a question about switching at build time: a location question is left alone.
    assert "Makefile" not in top("Where is the vertex index type defined?")


def test_quoted_numbers_are_matched_as_values_in_code_when_switched_on(tmp_path):
    from codeteacher.retrieval.literal import numbers

    assert numbers("What do the values 26 and -1 mean, and why 26 minus one?") == ["26"]
    assert numbers("Why 0.95, and a 1e-6 tolerance?") == ["0.95", "1e-6"]
    assert numbers("How do I switch between 64-bit and 32-bit in 3-D, with v2 or 2 steps?") == []
    files = {
        "src/problem.cpp": "// Fills the matrix of the problem.\nvoid fill(double* v, int n) {\n"
                           "  for (int i = 0; i < n; ++i) v[i] = 26.0;\n}\n",
        "src/other.cpp": "// Fills the vector of the problem.\nvoid fill_vector(double* v, int n) {\n"
                         "  for (int i = 0; i < n; ++i) v[i] = 2.0;\n}\n",
        "NEWS": "Released on 26 May.\n",
    }
    ix = index_of(tmp_path, files)
    q = "Why are the matrix values set to 26?"

    def why(change=None):
        hits = engine_with(ix, change).search(q, k=5)
        return {h.chunk.path: " ".join(h.why) for h in hits}

    on = why(lambda s: setattr(s.retrieval.exact_tokens, "numbers", True))
    assert "exact '26' in 1 file" in on["src/problem.cpp"]  # 26.0 is 26; NEWS's date is no code
    assert not any("exact '26'" in w for p, w in on.items() if p != "src/problem.cpp")
    assert not any("exact '26'" in w for w in why().values())  # off by default


def test_a_word_beside_a_kind_noun_names_that_symbol(tmp_path):
    """"the Cell class" names class Cell (a short plain word, which alone would be English);
    "the base class" names nothing, and with the cue off the word is only a word again."""
    from codeteacher.retrieval.query import analyze

    files = {
        "src/geom/layout.h": "#pragma once\nnamespace demo {\n/// Holds one element.\n"
                             "class Cell {\npublic:\n  double volume() const;\n"
                             "  double v = 0;\n};\n}\n",
        "src/base.h": "#pragma once\nnamespace demo {\nint base(int x);\n"
                      "class Shape { public: virtual ~Shape(); };\n}\n",
    }
    files |= {f"src/cells/cell_ops_{n}.cpp":
              f"// Cell operations {n}: every cell of the cell list is visited per cell.\n"
              f"namespace demo {{\n/// Visits each cell and updates the cell data.\n"
              f"void visit_cells_{n}(double* cell, int n) {{ for (int i = 0; i < n; ++i) "
              f"cell[i] += {n}; }}\n}}\n" for n in range(6)}
    engine = Engine.load(index_of(tmp_path, files), Settings())
    question = "What is the Cell class responsible for and what does it hold?"
    qa = analyze(question, engine.store, kind_cue=Settings().retrieval.kind_noun_cue,
                 kind_qualifiers=Settings().retrieval.kind_noun_qualifiers)
    assert qa.symbols.get("Cell") == 1.0
    assert engine.store.by_symbol.get("base")  # a function called base exists...
    assert "base" not in analyze("Which methods does the base class declare?", engine.store,
                                 kind_cue=Settings().retrieval.kind_noun_cue,
                                 kind_qualifiers=Settings().retrieval.kind_noun_qualifiers
                                 ).symbols
    hits = engine.search(question, k=5)
    assert hits[0].chunk.path == "src/geom/layout.h"
    assert "symbol 'Cell' named" in hits[0].why
    off = engine_with(engine.store.path, lambda s: setattr(s.retrieval, "kind_noun_cue", ""))
    assert all("symbol 'Cell' named" not in h.why for h in off.search(question, k=5))


def test_a_build_script_answers_a_build_question_as_a_build_file(tmp_path):
    # build.sh drives CMake: by purpose a build file, though written in shell. A build
    # question ranks it as one (level_match), as it does the CMakeLists.txt; the run
    # script beside it, the same language and words, is not.
    cmake = ("#!/bin/sh\n# Configure and compile the solver into out/.\nmkdir -p out && cd out\n"
             "cmake -DENABLE_GPU=${ENABLE_GPU:-OFF} -DCMAKE_BUILD_TYPE=Release ..\n"
             "make -j 4\n")
    run = ("#!/bin/sh\n# Run the solver on the sample deck, with the GPU when asked.\n"
           "cd out\n./solver --gpu=${ENABLE_GPU:-OFF} ../decks/sample.in\n")
    ix = index_of(tmp_path, {"build.sh": cmake, "run.sh": run,
                             "src/solver.cpp": "// The solver.\nint solve(int n) { return n; }\n"})
    store = Engine.load(ix, Settings()).store
    assert {p: store.records[store.by_path[p][0]].scope for p in ("build.sh", "run.sh")} \
        == {"build.sh": "build", "run.sh": "src"}
    hits = engine_with(ix).search("How do I compile the code with the GPU enabled?", k=4)
    why = {h.chunk.path: " ".join(h.why) for h in hits}
    assert "level_match" in why["build.sh"], why
    assert "level_match" not in why.get("run.sh", ""), why
    paths = [h.chunk.path for h in hits]
    assert "run.sh" not in paths or paths.index("build.sh") < paths.index("run.sh"), paths


def test_a_lone_fortran_tree_leads_the_ports_made_from_it(tmp_path):
    # The main code in src/ (beside docs/), two ports of it side by side under ports/. The
    # first port dropped the main code's convergence report, so it has fewer words of its own
    # in every file; yet src/ is the reference, and answers stay there.
    from codeteacher.retrieval.ports import PortRules, _plainest, _port_plainness

    def inner(extra: str) -> str:
        return ("! Inner iterations: sweep until the flux converges.\n"
                "subroutine inner(flux, df, n)\n  integer :: n, it\n  real(8) :: flux(n), df\n"
                "  do it = 1, 100\n    call sweep(flux, n)\n    df = maxval(abs(flux))\n"
                "    if (df < 1.0d-4) exit\n" + extra + "  end do\nend subroutine inner\n")

    report = "    call report_convergence_history(it, df, outer_tolerance_ratio)\n"
    files = {"docs/notes.md": "# Notes\n\nHow to run the solver.\n"}
    for name in ("inner", "outer", "setup"):
        main = inner(report).replace("inner", name)
        files[f"src/{name}.f90"] = main
        files[f"ports/lean/{name}.f90"] = inner("").replace("inner", name)
        files[f"ports/offload/{name}.f90"] = main.replace(
            "  do it", "  !$acc parallel loop\n  do it").replace(
            "    call sweep", "    call offload_sweep_device_kernel_launch")
    ix = index_of(tmp_path, files)
    store = Engine.load(ix, Settings()).store
    rs = Settings().retrieval
    assert rs.enclosing_reference and rs.lone_reference
    lone = PortRules(by_folder=True, enclosing=True, lone=True)
    rank = _port_plainness(store, lone)
    assert set(rank) == {"src", "ports/lean", "ports/offload"}  # Fortran files are port code
    assert rank["src"][0] == 1.0 and rank["ports/lean"][0] == rank["ports/offload"][0] == 0.0
    assert _plainest(store, "src/inner.f90", lone) == "src/inner.f90"
    # Without the rule, the port with the fewest words of its own would lead.
    assert _plainest(store, "src/inner.f90", PortRules(by_folder=True, enclosing=True)) \
        == "ports/lean/inner.f90"
    q = "How do the inner iterations decide that the flux has converged?"
    shown = [h.chunk.path for h in Engine.load(ix, Settings()).search(q, k=3)]
    assert shown[0] == "src/inner.f90" and not any(p.startswith("ports/") for p in shown[:2])


def test_fortran_directives_are_device_code_and_fortran_comments_are_not(tmp_path):
    # Two Fortran ports side by side: the OpenACC one offloads its loops with `!$acc`
    # directives (free form) and `c$acc` (fixed form) and dropped the reference's checks, so
    # it has fewer words of its own; the CPU reference only mentions directives in comments.
    from codeteacher.retrieval.ports import PortRules, _code_text, _plainest, _port_plainness

    check = "  if (abs(total - expected_total) > tol) call report_checksum_failure(total)\n"
    files = {
        "cpu/lookup.f90": "! The OpenACC port adds !$acc parallel loop here.\n"
                          "subroutine lookup(x, n)\n  integer :: n, i\n  real(8) :: x(n), total\n"
                          "  do i = 1, n\n    x(i) = 2.0d0 * x(i)  ! not !$acc kernels\n"
                          "  end do\n  total = sum(x)\n" + check + "end subroutine lookup\n",
        "acc/lookup.f90": "subroutine lookup(x, n)\n  integer :: n, i\n  real(8) :: x(n)\n"
                          "  !$acc parallel loop\n  do i = 1, n\n    x(i) = 2.0d0 * x(i)\n"
                          "  end do\nend subroutine lookup\n",
        "cpu/smooth.f": "c     The OpenACC port puts c$acc kernels before this loop.\n"
                        "      subroutine smooth(x, n)\n      integer n, i\n"
                        "      real*8 x(n)\n      do 10 i = 2, n\n"
                        "         x(i) = 0.5d0 * (x(i) + x(i - 1))\n   10 continue\n"
                        "      call report_smoothing_done(n)\n      end\n",
        "acc/smooth.f": "      subroutine smooth(x, n)\n      integer n, i\n      real*8 x(n)\n"
                        "c$acc kernels\n      do 10 i = 2, n\n"
                        "         x(i) = 0.5d0 * (x(i) + x(i - 1))\n   10 continue\n      end\n",
    }
    store = Engine.load(index_of(tmp_path, files), Settings()).store
    assert "acc" not in _code_text(store, "cpu/lookup.f90", None).lower()
    assert "c$acc kernels" not in _code_text(store, "cpu/smooth.f", None)
    assert "c$acc kernels" in _code_text(store, "acc/smooth.f", None)
    assert "!$acc parallel loop" in _code_text(store, "acc/lookup.f90", None)
    device = PortRules(by_folder=True, device=Settings().retrieval.device_constructs)
    rank = _port_plainness(store, device)
    assert rank["cpu"][1] == 1.0 and rank["acc"][1] == 0.0  # device lines per file: 0 vs 1
    assert _plainest(store, "acc/lookup.f90", device) == "cpu/lookup.f90"
    assert _plainest(store, "acc/smooth.f", device) == "cpu/smooth.f"
    # By words of their own alone, the OpenACC port would lead.
    assert _plainest(store, "acc/lookup.f90", PortRules(by_folder=True)) == "acc/lookup.f90"


def _versions_repo() -> dict[str, str]:
    """One program in three languages, side by side (c/, cpp/, fortran/), each with a serial
    and an MPI version; the MPI exchange is written in all three."""
    step_c = ("// Advances the state one time step with a three-stage Runge-Kutta scheme.\n"
              "void {f}(double* state, double* tend, int n, double dt) {{\n"
              "  for (int stage = 0; stage < 3; ++stage)\n"
              "    for (int i = 0; i < n; ++i) state[i] += dt / (3 - stage) * tend[i];\n}}\n")
    halo_c = ("// Exchanges the halo cells with the left and right MPI ranks.\n"
              "void exchange_halo(double* state, int n, int left, int right) {\n"
              "  MPI_Sendrecv(state, 2, MPI_DOUBLE, left, 0, state + n, 2, MPI_DOUBLE, right, 0,\n"
              "               MPI_COMM_WORLD, MPI_STATUS_IGNORE);\n}\n")
    step_f = ("! Advances the state one time step with a three-stage Runge-Kutta scheme.\n"
              "subroutine {f}(state, tend, n, dt)\n  integer :: n, stage\n"
              "  real(8) :: state(n), tend(n), dt\n  do stage = 1, 3\n"
              "    state = state + dt / (4 - stage) * tend\n  end do\nend subroutine {f}\n")
    halo_f = ("! Exchanges the halo cells with the left and right MPI ranks.\n"
              "subroutine exchange_halo(state, n, left, right)\n  integer :: n, left, right, ierr\n"
              "  real(8) :: state(n)\n  call MPI_Sendrecv(state, 2, MPI_DOUBLE_PRECISION, left, 0, "
              "state, 2, &\n    MPI_DOUBLE_PRECISION, right, 0, MPI_COMM_WORLD, "
              "MPI_STATUS_IGNORE, ierr)\nend subroutine exchange_halo\n")
    files = {"README.md": "# Flow mini-app\n\nThe same model in C, C++ and Fortran.\n"}
    for lang, ext in (("c", "cpp"), ("cpp", "cpp"), ("fortran", "F90")):
        for app in ("flow_serial", "flow_mpi"):
            if ext == "F90":
                body = step_f.format(f="time_step") + (halo_f if "mpi" in app else "")
            else:
                body = step_c.format(f="time_step") + (halo_c if "mpi" in app else "")
            files[f"{lang}/{app}.{ext}"] = body
    return files


def test_a_question_that_names_a_language_version_is_answered_from_it(tmp_path):
    # "The Fortran version", "the C++ version" and "the C code" name fortran/, cpp/ and c/
    # (a lone C and "C++" through retrieval.language_words); the other versions follow.
    from codeteacher.retrieval.ports import language_words, variant_folders

    ix = index_of(tmp_path, _versions_repo())
    on = Settings()
    assert on.retrieval.named_versions
    store = Engine.load(ix, on).store
    assert variant_folders(store, 2)["fortran"] == ("c", "cpp", "fortran")
    assert language_words("In the C++ version, how", on.retrieval.language_words) == \
        ["cpp", "cxx", "c++"]
    assert language_words("How does the C code", on.retrieval.language_words) == ["c"]
    off = on.model_copy(deep=True)
    off.retrieval.named_versions = False
    for q, folder in (("How does the Fortran version advance one time step?", "fortran/"),
                      ("In the C++ version, how is one time step advanced?", "cpp/"),
                      ("How does the C code advance the state by one time step?", "c/")):
        shown = [h.chunk.path for h in Engine.load(ix, on).search(q, k=4)]
        assert all(p.startswith(folder) for p in shown[:2]), (q, shown)
        more = Engine.load(ix, on).search(q, k=12)
        later = [i for i, h in enumerate(more)
                 if any("a version the question does not name" in w for w in h.why)]
        assert later and all(not more[i].chunk.path.startswith(folder) for i in later)
        others = tuple(f for f in ("c/", "cpp/", "fortran/") if f != folder)
        assert not any((more[i].chunk.path + "/").startswith(others) for i in range(later[0]))
        before = [h.chunk.path for h in Engine.load(ix, off).search(q, k=4)]
        assert any((p + "/").startswith(others) for p in before[:4]), (q, before)


def test_a_word_every_version_uses_names_no_version(tmp_path):
    # An mpi/ version beside serial/ and omp/ ones that call MPI too: "across MPI ranks"
    # asks how the program communicates, not for the mpi/ folder.
    from codeteacher.retrieval.ports import _common_word, variant_folders

    files = {}
    for folder in ("mpi", "serial", "omp"):
        for name in ("comm", "force", "setup"):
            files[f"{folder}/{name}.cpp"] = (f"// The {name} step of the {folder} build.\n"
                                             f"void {name}() {{ MPI_Barrier(MPI_COMM_WORLD); }}\n")
    engine = Engine.load(index_of(tmp_path, files), Settings())
    group = variant_folders(engine.store, 2)["mpi"]
    assert group == ("mpi", "omp", "serial")
    assert _common_word(engine.store, "mpi", "mpi", group, 0.25, None)
    assert not _common_word(engine.store, "omp", "omp", group, 0.25, None)
    hits = engine.search("How do the ranks exchange data across MPI ranks in the comm step?", k=6)
    assert not any("does not name" in w for h in hits for w in h.why), [h.why for h in hits]
    named = engine.search("How does the omp version run the comm step?", k=6)
    assert named[0].chunk.path.startswith("omp/"), [h.chunk.path for h in named]
    assert any("does not name" in w for h in named for w in h.why)


def _variant_files_repo() -> dict[str, str]:
    """One solver three times in one folder, told apart by a word of the file name (the plain
    one, an MPI one, a CUDA one), beside two files that share a name word but not their code."""
    body = ("// Relaxes the field towards the source with damped Jacobi sweeps.\n"
            "void relax_field(double* field, const double* source, int n, int sweeps) {{\n"
            "  for (int s = 0; s < sweeps; ++s)\n"
            "    for (int i = 1; i < n - 1; ++i)\n"
            "      field[i] = 0.5 * (field[i - 1] + field[i + 1]) - 0.25 * source[i];\n"
            "{extra}}}\n"
            "// Largest change of one sweep, to stop once the field has converged.\n"
            "double residual_norm(const double* field, const double* previous, int count) {{\n"
            "  double worst = 0.0;\n"
            "  for (int j = 0; j < count; ++j) {{\n"
            "    const double delta = field[j] - previous[j];\n"
            "    worst = delta > worst ? delta : (-delta > worst ? -delta : worst);\n"
            "  }}\n  return worst;\n}}\n"
            "// Copies the boundary values that stay fixed during every sweep.\n"
            "void fix_boundary(double* field, double left_value, double right_value, int n) {{\n"
            "  field[0] = left_value; field[n - 1] = right_value;\n}}\n")
    return {
        "README.md": "# Relaxation solver\n\nOne solver, built plain, with MPI or with CUDA.\n",
        "src/relax.cc": body.format(extra=""),
        "src/relax-mpi.cc": body.format(
            extra="  MPI_Allreduce(MPI_IN_PLACE, field, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);\n"),
        "src/relax-cuda.cu": body.format(
            extra="  cudaMemcpy(field, field, n * sizeof(double), cudaMemcpyDeviceToHost);\n"),
        "src/get_energy.cc": "// Kinetic energy of the particles.\n"
                             "double get_energy(const double* v, int n) { double e = 0;\n"
                             "  for (int i = 0; i < n; ++i) e += 0.5 * v[i] * v[i]; return e; }\n",
        "src/get_force.cc": "// Spring force on each particle.\n"
                            "void get_force(const double* x, double* f, int n, double k) {\n"
                            "  for (int i = 0; i < n; ++i) f[i] = -k * x[i]; }\n",
    }


def test_a_question_that_names_a_file_variant_is_answered_from_it(tmp_path):
    # relax.cc, relax-mpi.cc and relax-cuda.cu are one solver in three builds: "the MPI
    # version" is relax-mpi.cc, and the other two follow the rest. get_energy.cc and
    # get_force.cc share the word "get" but not their code: no variants.
    from codeteacher.retrieval.name_variants import name_variants, unnamed_variants

    ix = index_of(tmp_path, _variant_files_repo())
    on = Settings()
    assert on.retrieval.named_variants
    store = Engine.load(ix, on).store
    of = name_variants(store, on.retrieval.variant_text_share)
    assert of == {"src/relax.cc": frozenset(), "src/relax-mpi.cc": frozenset({"mpi"}),
                  "src/relax-cuda.cu": frozenset({"cuda"})}
    assert unnamed_variants(store, {"how", "mpi", "version"}, 0.75) == \
        {"src/relax.cc", "src/relax-cuda.cu"}
    assert unnamed_variants(store, {"how", "relax", "field"}, 0.75) == frozenset()
    q = "How does the MPI version relax the field towards the source?"
    hits = Engine.load(ix, on).search(q, k=6)
    paths = [h.chunk.path for h in hits]
    assert paths[0] == "src/relax-mpi.cc", paths
    later = [i for i, h in enumerate(hits) if any("variant file the question does not name" in w
                                                  for w in h.why)]
    assert later and {paths[i] for i in later} <= {"src/relax.cc", "src/relax-cuda.cu"}
    assert all(p == "src/relax-mpi.cc" or p not in ("src/relax.cc", "src/relax-cuda.cu")
               for p in paths[: later[0]])
    off = on.model_copy(deep=True)
    off.retrieval.named_variants = False
    before = [h.chunk.path for h in Engine.load(ix, off).search(q, k=6)]
    first_other = min(before.index(p) for p in ("src/relax.cc", "src/relax-cuda.cu")
                      if p in before)
    assert first_other < max(later), (before, paths)


def test_modules_that_share_a_pattern_are_no_ports_of_each_other(tmp_path):
    # Each package's config.cpp defines its own check_options() in its own namespace: one
    # package's file is no port of another's. Two builds of one solver in one namespace
    # (serial/, omp/) stay ports, shown in the plainest.
    def config(pkg: str, body: str) -> str:
        return (f"// Checks the {pkg} package's input options.\nnamespace app {{ namespace {pkg} {{\n"
                f"void check_options(Config& config) {{\n{body}}}\n}} }}\n")
    solve = ("// Sweeps the grid once with the five-point stencil.\nnamespace app {{\n"
             "void solve(double* u, const double* f, int n) {{\n{pragma}"
             "  for (int i = 1; i < n - 1; ++i) u[i] = 0.5 * (u[i - 1] + u[i + 1]) - f[i];\n}}\n}}\n")
    files = {
        "README.md": "# Packages\n\nA hydro package, a remap package and one solver.\n",
        "src/hydro/config.cpp": config("hydro", "  if (config.cfl <= 0.) config.cfl = 0.5;\n"),
        "src/remap/config.cpp": config("remap", (
            "  // The remap runs every few steps; the sweep order alternates per step.\n"
            "  if (config.step_interval < 1) config.step_interval = 1;\n"
            "  if (config.sweep_order != 0 && config.sweep_order != 1) config.sweep_order = 0;\n"
            "  config.limiter_coefficient = config.limiter_coefficient < 0. ? 0. : "
            "config.limiter_coefficient;\n")),
        "src/hydro/step.cpp": "namespace app { namespace hydro { void step() {} } }\n",
        "src/remap/step.cpp": "namespace app { namespace remap { void step() {} } }\n",
        "serial/solve.cpp": solve.format(pragma=""),
        "omp/solve.cpp": solve.format(pragma="  #pragma omp parallel for\n"),
    }
    for name in ("mesh", "output", "timer", "halo", "restart", "units"):  # other answers
        files[f"src/{name}.cpp"] = (f"// The {name} helpers of the driver.\nnamespace app {{\n"
                                    f"int {name}_count(int n) {{ return n + 1; }}\n}}\n")
    ix = index_of(tmp_path, files)
    on = Settings()
    assert on.retrieval.port_qualified_names
    off = on.model_copy(deep=True)
    off.retrieval.port_qualified_names = False
    q = "How are the step interval, the sweep order and the limiter coefficient checked?"
    swapped = "plainest of its same-named files"
    hits = Engine.load(ix, on).search(q, k=2)
    assert hits[0].chunk.path == "src/remap/config.cpp", [h.chunk.path for h in hits]
    assert not any(swapped in w for h in hits for w in h.why)
    before = Engine.load(ix, off).search(q, k=2)
    assert before[0].chunk.path == "src/hydro/config.cpp", [h.chunk.path for h in before]
    assert any(swapped in w for w in before[0].why)
    ported = Engine.load(ix, on).search("How does the OpenMP build sweep the grid in solve?", k=4)
    assert [h.chunk.path for h in ported][0] == "omp/solve.cpp"
    plain = Engine.load(ix, on).search("How does solve sweep the grid with the stencil?", k=4)
    assert plain[0].chunk.path == "serial/solve.cpp", [(h.chunk.path, h.why) for h in plain]


def test_a_fortran_main_program_after_its_comment_is_an_entry_point(tmp_path):
    # The program unit's chunk opens with the comment before it; the unit's statement (its
    # signature) says it is the main program.
    from codeteacher.retrieval.search import entry_files

    files = {"example/driver.f90": "! Runs the example case to the end time.\nprogram driver\n"
                                   "  call advance()\nend program driver\n",
             "example/advance.f90": "! One step.\nsubroutine advance()\nend subroutine advance\n",
             "src/run.c": "/* The C driver. */\nint main(void) { return 0; }\n"}
    store = Engine.load(index_of(tmp_path, files), Settings()).store
    assert entry_files(store) == {"example/driver.f90", "src/run.c"}


def test_a_driver_and_the_kernel_of_its_name_are_two_answers_with_name_family_ports(tmp_path):
    # driver/accelerate.cpp calls kernel/accelerate.cpp: one name, different functions (each
    # in its own namespace). By name alone they are one family and one of them is shown;
    # with name_family_ports both are, while two builds of one solver stay one answer.
    files = {
        "README.md": "# Hydro\n\nA Lagrangian hydro step and one solver.\n",
        "src/driver/accelerate.cpp": (
            "// Drives the nodal acceleration: gathers corner forces, then calls the kernel.\n"
            "namespace app { namespace driver {\n"
            "void accelerate(Mesh& mesh, double dt) {\n"
            "  gather_corner_forces(mesh);\n"
            "  kernel::accelerate_nodes(mesh.node_force, mesh.node_mass, mesh.node_velocity, dt);\n"
            "}\n} }\n"),
        "src/kernel/accelerate.cpp": (
            "// Nodal acceleration kernel: velocity from corner forces over nodal mass.\n"
            "namespace app { namespace kernel {\n"
            "void accelerate_nodes(const double* node_force, const double* node_mass,\n"
            "                      double* node_velocity, double dt) {\n"
            "  for (int i = 0; i < 64; ++i) node_velocity[i] += dt * node_force[i] / node_mass[i];\n"
            "}\n} }\n"),
        "serial/solve.cpp": "namespace app {\nvoid solve(double* u, int n) {\n"
                            "  for (int i = 1; i < n; ++i) u[i] = 0.5 * (u[i - 1] + u[i]);\n}\n}\n",
        "omp/solve.cpp": "namespace app {\nvoid solve(double* u, int n) {\n  #pragma omp parallel for\n"
                         "  for (int i = 1; i < n; ++i) u[i] = 0.5 * (u[i - 1] + u[i]);\n}\n}\n",
    }
    for name in ("mesh", "output", "timer", "halo", "restart", "units"):  # other answers
        files[f"src/{name}.cpp"] = (f"// The {name} helpers of the driver.\nnamespace app {{\n"
                                    f"int {name}_count(int n) {{ return n + 1; }}\n}}\n")
    ix = index_of(tmp_path, files)
    off = Settings()
    on = off.model_copy(deep=True)
    on.retrieval.name_family_ports = True
    q = "Where are the forces gathered and the velocity updated in the accelerate step?"
    pair = {"src/driver/accelerate.cpp", "src/kernel/accelerate.cpp"}
    shown = [h.chunk.path for h in Engine.load(ix, on).search(q, k=4)]
    assert pair <= set(shown), shown
    by_name = [h.chunk.path for h in Engine.load(ix, off).search(q, k=4)]
    assert len(pair & set(by_name)) == 1, by_name
    solved = [h.chunk.path for h in Engine.load(ix, on).search("How does solve average u?", k=4)]
    assert len({"serial/solve.cpp", "omp/solve.cpp"} & set(solved)) == 1, solved


def test_short_forms_are_searched_when_the_code_writes_them():
    # "time step" -> dt only when the corpus has the token, and, with a ratio, only when the
    # code writes the short form at least as often as the words written out.
    from codeteacher.index.lexical import abbreviations

    table = {"time ?steps?|timesteps?": ["dt"], "neighbou?rs?": ["neigh", "nbr"]}
    vocab = {"dt", "neigh", "time", "step", "neighbor"}
    q = "How is the time step chosen from the neighbours?"
    assert abbreviations(q, vocab, table) == ["dt", "neigh"]
    assert abbreviations("How is the output written?", vocab, table) == []
    df = {"dt": 40, "time": 10, "step": 30, "neigh": 2, "neighbour": 50}
    assert abbreviations(q, vocab, table, df, 1.0) == ["dt"]
    assert abbreviations(q, vocab, table, df, 2.0) == []


def test_a_sibling_that_clearly_holds_the_question_words_passes_the_siblings_above_it(tmp_path):
    # solver/ holds three solvers that share the folder's words (solver, iteration, residual);
    # only sor.cpp holds "damped", "relaxation" and "omega". Ranked wrong (minres, qmr, sor),
    # the contest moves sor.cpp into the first of the three places; a file of another
    # folder keeps its place between them; near ties (a large margin) and a folder that holds
    # more than max_folder_share of the files do not move.
    from codeteacher.index.lexical import tokenize
    from codeteacher.retrieval.search import Candidate
    from codeteacher.retrieval.siblings import sibling_contest

    shared = "// Solver iteration on the residual of the matrix system.\n"
    files = {
        "solver/minres.cpp": shared + "void minres_solve(double* r, int n) {\n"
                             "  for (int it = 0; it < n; ++it) r[it] *= 0.5;  // residual\n}\n",
        "solver/qmr.cpp": shared + "void qmr_solve(double* r, int n) {\n"
                          "  for (int it = 0; it < n; ++it) r[it] -= 0.25;  // residual\n}\n",
        "solver/sor.cpp": shared + "// Damped relaxation: the update is weighted by omega.\n"
                          "void sor_solve(double* r, double omega, int n) {\n"
                          "  for (int it = 0; it < n; ++it) r[it] *= omega;  // damped\n}\n",
    }
    for name in ("mesh", "output", "timer", "halo", "restart", "units", "input", "deck", "io",
                 "log"):
        files[f"{name}/{name}.cpp"] = (f"// The {name} helpers.\n"
                                       f"int {name}_count(int n) {{ return n + 1; }}\n")
    ix = index_of(tmp_path, files)
    s = Settings()
    sw = s.retrieval.sibling_words  # on by default, margin 3
    store = Engine.load(ix, s).store
    q = "Where is the damped relaxation with weight omega applied in the solver iteration?"
    tokens = tokenize(q)

    def ranked() -> list:
        order = [("solver/minres.cpp", 0.05), ("mesh/mesh.cpp", 0.045), ("solver/qmr.cpp", 0.04),
                 ("solver/sor.cpp", 0.03)]
        return [Candidate(idx=store.file_record_index(p), score=v) for p, v in order]

    def paths(cands) -> list[str]:
        return [store.records[c.idx].path for c in sorted(cands, key=lambda c: -c.score)]

    moved = ranked()
    assert sibling_contest(store, moved, tokens, sw) == 3
    assert paths(moved) == ["solver/sor.cpp", "mesh/mesh.cpp", "solver/minres.cpp",
                            "solver/qmr.cpp"]
    assert any(w.startswith("before a sibling file") for w in moved[3].why)
    for change in ({"margin": 1000.0}, {"max_folder_share": 0.1}, {"enabled": False}):
        kept = ranked()
        assert sibling_contest(store, kept, tokens, sw.model_copy(update=change)) == 0, change
        assert paths(kept) == ["solver/minres.cpp", "mesh/mesh.cpp", "solver/qmr.cpp",
                               "solver/sor.cpp"]


def test_inline_implementation_files_a_header_includes_are_parsed_as_code(tmp_path):
    # Planar.h declares; Planar.I (the inline-implementation convention of SAMRAI-style codes),
    # and length.icc / grow.txx, define what the header includes. They are C++ code, parsed
    # into functions, not line windows of a data format (which the data-file cap would hold).
    files = {
        "src/Planar.h": "#ifndef PLANAR_H\n#define PLANAR_H\nclass Planar {\n public:\n"
                       "  double norm() const;\n  void scale(double f);\n  double x, y;\n};\n"
                       "#include \"Planar.I\"\n#endif\n",
        "src/Planar.I": "// Inline definitions of Planar.\n"
                       "inline double Planar::norm() const { return x * x + y * y; }\n"
                       "inline void Planar::scale(double f) { x *= f; y *= f; }\n",
        "src/length.icc": "inline double squared_length(const Planar& p) { return p.norm(); }\n",
        "src/grow.txx": "template <class T> T scaled(T v, double f) { v.scale(f); return v; }\n",
        "README.md": "# Planar\n\nA small geometry library.\n",
    }
    store = Engine.load(index_of(tmp_path, files)).store
    kinds = {p: {(r.kind, r.language) for r in store.records if r.path == p and r.kind != "file"}
             for p in ("src/Planar.I", "src/length.icc", "src/grow.txx")}
    assert kinds["src/Planar.I"] == {("method", "cpp")}, kinds
    assert kinds["src/length.icc"] == {("function", "cpp")}, kinds
    assert kinds["src/grow.txx"] and all(lang == "cpp" and kind != "script"
                                          for kind, lang in kinds["src/grow.txx"]), kinds
    names = {r.qualified_name for r in store.records if r.path == "src/Planar.I"}
    assert {"Planar::norm", "Planar::scale"} <= names, names


def test_the_header_that_declares_a_shown_definition_stays_in_the_evidence(tmp_path):
    # grid.cpp defines relax_grid, its header only declares it. The declaration is carried by
    # the definition and, alone, tells nothing, so the context filter dropped it, and with it
    # the header; with keep_declaring_files it stays: the header is where callers see it.
    files = {
        "src/grid.h": "#pragma once\nvoid relax_grid(double* u, int n);\n",
        "src/grid.cpp": "#include \"grid.h\"\n"
                        "// One damped sweep over the grid: each value moves towards the mean\n"
                        "// of its neighbours.\n"
                        "void relax_grid(double* u, int n) {\n"
                        "  for (int i = 1; i + 1 < n; ++i)\n"
                        "    u[i] = 0.5 * u[i] + 0.25 * (u[i - 1] + u[i + 1]);\n}\n",
    }
    for name in ("mesh", "output", "timer", "halo", "restart", "units"):
        files[f"src/{name}.cpp"] = (f"// The {name} helpers.\n"
                                    f"int {name}_count(int n) {{ return n + 1; }}\n")
    ix = index_of(tmp_path, files)
    q = "Where is relax_grid declared and defined?"
    on = [h.chunk.path for h in engine_with(ix).search(q, k=6)]
    off = [h.chunk.path for h in engine_with(
        ix, lambda s: setattr(s.context_filter, "keep_declaring_files", False)).search(q, k=6)]
    assert "src/grid.cpp" in on and "src/grid.h" in on, on
    assert "src/grid.cpp" in off and "src/grid.h" not in off, off
