"""Online retrieval stage (issue 5), part by part, on the sample app (real index, real MiniLM):
query analysis, intent routing, evidence classes, metadata rerank, structural expansion, the
final-context filter, the optional cross-encoder and the `ask` shell; then a known-answers check
of the full pipeline against the foundation alone (dense + BM25 + exact lookups).

A three-file inline repository covers what the sample app lacks: a header and its source in the
same folder (siblings) and an all-capitals symbol name. Settings variants are copies loaded into
a fresh Engine over the session index; the embedding model is cached per process.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from codeteacher.api import Engine
from codeteacher.contracts.errors import UserError
from codeteacher.contracts.settings import Settings
from codeteacher.contracts.settings.retrieval import ExpansionProfile
from codeteacher.index.lexical import acronyms, stem, tokenize
from codeteacher.ingest.build import build_index
from codeteacher.retrieval.context import filter_context, information
from codeteacher.retrieval.query import analyze
from codeteacher.retrieval.rerank import features, low_signal, rerank
from codeteacher.retrieval.routing import classify
from codeteacher.retrieval.search import Candidate, Trace

DATA_FLOW = ("How does charge flow from the particles to the grid and back to the particles in "
             "one time step?")
INTO_DIAGNOSTICS = "What data flows into computeDiagnostics?"
DIAG_ID = "src/simulation.cpp#method:minipic::Simulation::computeDiagnostics@281"
DEPOSIT_DEF = "src/deposit.cpp#function:minipic::depositChargeCIC@40"
DEPOSIT_DECL = "include/minipic/interpolation.hpp#declaration:minipic::depositChargeCIC@82"
CLASSES = {"primary", "expansion", "supplementary"}
# expansion relation (as recorded in the Trace) -> ExpansionProfile cap per seed
CAP_OF = {"call neighbour": "call", "owning class": "owner", "symbol in file": "file_symbols",
          "file in module": "module_files", "included by": "include",
          "caller in another file": "callers", "declaration/definition twin": "twin",
          "build file naming it": "build", "base class": "bases"}


# ---- helpers and fixtures ---------------------------------------------------------------------

def variant(index: Path, change) -> Engine:
    """A fresh Engine over `index` with a modified copy of the default settings."""
    s = Settings()
    change(s)
    return Engine.load(index, s)


def traced(engine: Engine, question: str, k: int | None = None):
    trace = Trace()
    return engine.search(question, k=k, trace=trace), trace


def analysis(engine: Engine, question: str, weak: float | None = None,
             acronym: float | None = None):
    rs = engine.settings.retrieval
    return analyze(question, engine.store, rs.weak_symbol_confidence if weak is None else weak,
                   rs.acronym_symbol_confidence if acronym is None else acronym)


def row_of(trace: Trace, chunk_id: str) -> tuple[int, dict] | tuple[None, None]:
    for n, row in enumerate(trace.rows):
        if row["chunk_id"] == chunk_id:
            return n, row
    return None, None


def rerank_why(row: dict) -> str:
    return next((w for w in row["why"] if w.startswith("rerank ")), "")


def record(engine: Engine, chunk_id: str):
    return engine.store.records[engine.store.by_id[chunk_id]]


TOY = {
    "lib/grid.h": """// grid.h -- a toy uniform grid used by the retrieval tests.
#pragma once

namespace toy {

class Solver;

/// Holds a radix-2 transform plan; the name is an all-capitals acronym.
struct FFT {
    int size = 0;
    int passes = 0;
    void execute(double* data);
};

/// A one-dimensional uniform grid with a fixed number of cells.
class Grid {
public:
    explicit Grid(int cells);
    /// Distance between two neighbouring nodes.
    double spacing() const;
    /// Splits every cell into 2^levels cells.
    void refine(int levels);

private:
    int cells_;
};

}  // namespace toy
""",
    "lib/grid.cpp": """// grid.cpp -- implementation of the toy grid.
#include "grid.h"

namespace toy {

Grid::Grid(int cells) : cells_(cells) {}

double Grid::spacing() const {
    // The unit interval is split into cells_ equal parts.
    return 1.0 / static_cast<double>(cells_);
}

void Grid::refine(int levels) {
    for (int l = 0; l < levels; ++l) {
        cells_ *= 2;
    }
}

void FFT::execute(double* data) {
    for (int p = 0; p < passes; ++p) {
        data[p % size] *= 0.5;
    }
}

}  // namespace toy
""",
    "lib/solver.h": """// solver.h -- a toy relaxation solver on a Grid.
#pragma once
#include "grid.h"

namespace toy {

/// Jacobi relaxation of the 1D Poisson equation on a Grid.
class Solver {
public:
    explicit Solver(const Grid& grid) : grid_(grid) {}
    /// Runs the given number of relaxation sweeps.
    void relax(int sweeps) {
        for (int s = 0; s < sweeps; ++s) {
            residual_ *= 0.5;
        }
    }
    double residual() const { return residual_; }

private:
    const Grid& grid_;
    double residual_ = 1.0;
};

}  // namespace toy
""",
}


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> Engine:
    root = tmp_path_factory.mktemp("toy")
    repo = root / "repo"
    for rel, text in TOY.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    build_index(repo, out=root / "index", name="toy", settings=Settings())
    return Engine.load(root / "index", Settings())


# ---- 1. query analysis ------------------------------------------------------------------------

def test_named_file_brings_its_siblings(toy, engine):
    qa = analysis(toy, "What does grid.h declare?")
    assert qa.named_files == ["lib/grid.h"]
    assert set(qa.files) == {"lib/grid.h", "lib/grid.cpp"}  # same folder and stem; not solver.h
    _, trace = traced(toy, "What does grid.h declare?")
    _, row = row_of(trace, "file:lib/grid.cpp")
    assert row and "sibling of a named file" in row["why"]
    # Siblings are same-folder only: the sample app keeps headers apart from sources.
    qa = analysis(engine, "What does interpolation.hpp do?")
    assert qa.files == qa.named_files == ["include/minipic/interpolation.hpp"]
    assert analysis(engine, "What does the INSTALL file say?").named_files == ["INSTALL"]
    assert analysis(engine, "How is the particle pusher tested?").files == []


def test_symbol_strength(engine, toy):
    weak, acro = 0.05, 0.1  # distinct values, so each branch is visible
    sym = lambda e, q: analysis(e, q, weak, acro).symbols  # noqa: E731
    assert sym(engine, "What does HaloExchange do?") == {"HaloExchange": 1.0}  # CamelCase
    assert sym(engine, "what does `migrate` do") == {"migrate": 1.0}  # quoted
    assert sym(engine, "Where is stencilInBounds() defined?") == {"stencilInBounds": 1.0}  # call
    assert sym(engine, "What is minipic::HaloExchange::migrate for?") == \
        {"minipic::HaloExchange::migrate": 1.0}  # fully qualified
    assert sym(engine, "Explain CGSolver::applyLaplacian")["applyLaplacian"] == 1.0
    assert sym(engine, "what is the charge of a particle?") == {"charge": weak}  # English word
    assert sym(engine, "What is a Particle?") == {"Particle": weak}  # sentence capital
    assert sym(engine, "What is a particle?") == {}  # no such symbol
    assert sym(toy, "How is the FFT executed?") == {"FFT": acro}  # all-capitals acronym
    assert sym(toy, "What is toy::FFT::execute for?") == {"toy::FFT::execute": 1.0}


def test_partially_qualified_name_is_strong(engine):
    assert analysis(engine, "What does HaloExchange::migrate do?").symbols.get("migrate") == 1.0
    assert "step" in analysis(engine, "Show the call chain of Simulation::step").symbols


def test_module_names(engine):
    assert analysis(engine, "What is in the src folder?").modules == ["src"]
    assert "include/minipic" in analysis(
        engine, "Give an overview of the include/minipic directory").modules
    assert analysis(engine, "How does the Poisson solver work?").modules == []


def test_top_level_folder_needs_a_folder_cue(engine):
    assert analysis(engine, "Which files include mesh.hpp?").modules == []
    assert analysis(engine, "How do I build minipic with MPI using cmake?").modules == []


@pytest.mark.parametrize("question,kind", [
    ("Which function computes the electric field?", "function"),
    ("Which class stores particles?", "class"),
    ("Where is the per-particle data layout defined?", "class"),
    ("Which data structure owns the field arrays?", "class"),
    ("Which header declares gatherCIC?", "file"),
    ("What is in the tests folder?", "module"),
    ("Who calls depositChargeCIC?", "call_chain"),
    ("Where is the documentation of the pusher?", "documentation"),
    ("How do I build the code?", "build"),
    ("Which tests cover the CG solver?", "test"),
])
def test_requested_entity_types(engine, question, kind):
    qa = analysis(engine, question)
    assert kind in classify(qa, engine.settings.routing)[2]


@pytest.mark.parametrize("question,calls", [
    ("What is the output binary called?", False),
    ("With MPI, what is the executable called, and where does it go?", False),
    ("There is a script called make_headers in the scripts folder; what is it for?", False),
    ("How is depositChargeCIC called?", True),
    ("Where is the function called from?", True),
    ("Which functions are called by the pusher?", True),
])
def test_called_that_names_asks_for_no_call_chain(engine, question, calls):
    wanted = classify(analysis(engine, question), engine.settings.routing)[2]
    assert ("call_chain" in wanted) is calls
    if "function" in question:
        assert "function" in wanted  # only the word 'called' is left out


def test_no_entity_type_without_a_cue(engine):
    qa = analysis(engine, "How does the Boris rotation handle the magnetic field?")
    assert classify(qa, engine.settings.routing)[2] == []


def test_acronyms_only_from_the_index_vocabulary(engine):
    vocab = engine.store.lexical.vocab
    # (the sample app's reference list, indexed as text, mentions NGP; SPH it never names)
    assert "cic" in vocab and "sph" not in vocab
    assert "cic" in analysis(engine, "Where is the cloud-in-cell deposit?").tokens
    assert "sph" not in analysis(engine, "Where is the smoothed particle hydrodynamics "
                                         "kernel?").tokens
    assert acronyms("the conjugate gradient solver", {"cg"}) == ["cg"]
    assert acronyms("the conjugate gradient solver", set()) == []
    assert acronyms("cloud in cell", {"cic", "cc"}) == ["cic"]  # connectors keep their letter


def test_stems():
    assert stem("initialized") == stem("initializes") == stem("initialize")
    assert stem("scattering") == "scatter" and stem("cells") == "cell"
    assert stem("boundaries") == stem("boundary")
    assert stem("mesh") == "mesh" and stem("fft3d") == "fft3d"  # short or non-alphabetic
    # Stems join prose with identifier parts: a noun of the question meets the agent noun or
    # verb inside a name.
    assert {"deposit", "charg"} <= set(tokenize("charges deposited")) & \
        set(tokenize("depositChargeCIC"))
    assert stem("integration") in set(tokenize("IntegratorNVE")) & set(tokenize("integrate"))


# ---- 2. intent routing ------------------------------------------------------------------------

INTENTS = {
    "Where is the Boris pusher implemented?": "location_lookup",
    "What does HaloExchange do?": "symbol_explanation",
    "What is the purpose of deposit.cpp?": "file_purpose",
    "Explain deposit.cpp": "file_purpose",  # a named file turns "explain" into file purpose
    "Give an overview of the src folder": "module_overview",
    DATA_FLOW: "data_flow",
    "What happens when the simulation advances one time step?": "workflow",
    "How do I create a ParticleBunch?": "api_usage",
    "What is the difference between the FFT solver and the CG solver?": "comparison",
    "How does the conjugate gradient solver converge?": "algorithm",
    "How do I compile minipic with FFTW?": "build_install",
    "Which unit tests check charge conservation?": "testing",
}


@pytest.mark.parametrize("question", list(INTENTS))
def test_intent_and_profile(engine, question):
    routing = engine.settings.routing
    intent, profile, _ = classify(analysis(engine, question), routing)
    assert intent == INTENTS[question]
    assert profile == routing.intents[intent].profile
    assert profile in engine.settings.expansion.profiles


def test_routing_disabled_is_general(minipic_index):
    off = variant(minipic_index, lambda s: setattr(s.routing, "enabled", False))
    for question in (DATA_FLOW, "What does HaloExchange do?"):
        _, trace = traced(off, question)
        assert trace.analysis.intent == off.settings.routing.default_intent == "general"
        assert trace.analysis.profile == off.settings.routing.default_profile
    assert off.ask(DATA_FLOW).intent == "general"


def test_named_file_intent_comes_from_settings(engine):
    routing = engine.settings.routing
    # "Explain X" is a symbol_explanation cue; with a file named and no symbol it becomes the
    # named-file intent. "Summarize X" matches no cue: a named file alone decides.
    explain, summarize = (analysis(engine, q) for q in ("Explain deposit.cpp",
                                                         "Summarize deposit.cpp"))
    assert explain.named_files and not explain.symbols
    assert classify(explain, routing)[0] == classify(summarize, routing)[0] == "file_purpose"
    other = routing.model_copy(update={"named_file_intent": "module_overview"})
    assert classify(explain, other)[0] == classify(summarize, other)[0] == "module_overview"
    kept = routing.model_copy(update={"named_file_overrides": []})
    assert classify(explain, kept)[0] == "symbol_explanation"  # the cue's own intent stays


def test_information_weights_come_from_settings(engine):
    definition = record(engine, DEPOSIT_DEF)
    w = engine.settings.context_filter.information
    base = information(definition, 2, w)
    assert information(definition, 2, w.model_copy(update={"comment": 0.0})) == \
        pytest.approx(base - w.comment)


def test_tested_is_a_testing_question(engine):
    qa = analysis(engine, "How is the CG solver tested against the FFT solver?")
    assert classify(qa, engine.settings.routing)[0] == "testing"


# ---- 3. evidence classes ----------------------------------------------------------------------

@pytest.mark.parametrize("question", [DATA_FLOW, INTO_DIAGNOSTICS, "What does deposit.cpp do?",
                                      "Give an overview of the src folder"])
def test_every_result_has_a_class_and_a_reason(engine, question):
    hits = engine.search(question, k=12)
    assert hits
    for h in hits:
        assert h.evidence_class in CLASSES and h.why
        if h.evidence_class != "primary":
            assert any(" of " in w for w in h.why)  # "<relation> of <seed>"


def test_expansion_result_names_seed_and_relation(engine):
    hits, trace = traced(engine, INTO_DIAGNOSTICS)
    assert trace.analysis.intent == "data_flow"
    seed = record(engine, DIAG_ID)
    assert hits[0].chunk.id == DIAG_ID
    expanded = [h for h in hits if h.evidence_class == "expansion"]
    assert expanded, [(h.chunk.id, h.evidence_class) for h in hits]
    neighbours = {n.id[len("sym:"):] for n in engine.callees("Simulation::computeDiagnostics")}
    neighbours |= {n.id[len("sym:"):] for n in engine.callers("Simulation::computeDiagnostics")}
    for h in expanded:
        assert f"call neighbour of {seed.qualified_name}" in h.why
        assert h.chunk.id in neighbours
        assert {"chunk_id": h.chunk.id, "relation": "call neighbour", "seed": DIAG_ID} \
            in trace.expansions
        assert h.score < hits[0].score  # neighbours follow their seed
    supplementary = [h for h in hits if h.evidence_class == "supplementary"]
    assert all(any(w.startswith("included by of ") for w in h.why) for h in supplementary)


# ---- 4. metadata rerank -----------------------------------------------------------------------

def test_declaration_ranks_below_its_definition(engine):
    _, trace = traced(engine, "Where is depositChargeCIC?")
    n_def, d = row_of(trace, DEPOSIT_DEF)
    n_decl, decl = row_of(trace, DEPOSIT_DECL)
    assert d and decl and n_def < n_decl
    assert "low_signal" in rerank_why(decl) and "low_signal" not in rerank_why(d)
    assert decl["score"] - decl["score_before"] < d["score"] - d["score_before"]
    # The same from equal starting scores, through rerank() itself.
    records = engine.store.records
    cands = [Candidate(idx=engine.store.by_id[i], score=0.5) for i in (DEPOSIT_DECL, DEPOSIT_DEF)]
    rerank(cands, records, tokenize("depositChargeCIC"), None, "general", [],
           engine.settings.rerank, engine.store.lexical.idf)
    assert cands[1].score > cands[0].score


def test_forward_declaration_is_low_signal(toy):
    records = list(toy.store.records)
    solver = next(r for r in records if r.kind == "class" and r.name == "Solver")
    forward = solver.model_copy(update={"id": "lib/grid.h#class:toy::Solver@6", "path":
                                        "lib/grid.h", "start_line": 6, "end_line": 6,
                                        "text": "class Solver;", "members": [], "comment": ""})
    assert low_signal(forward, 2) and not low_signal(solver, 2)
    records.append(forward)
    cands = [Candidate(idx=len(records) - 1, score=0.5),
             Candidate(idx=records.index(solver), score=0.5)]
    rerank(cands, records, tokenize("the Solver class"), None, "general", ["class"],
           toy.settings.rerank)
    assert cands[1].score > cands[0].score and "low_signal" in cands[0].why[-1]


TEST_Q = "Which tests check charge conservation of the deposit?"
NON_TEST_Q = "How does the deposit conserve charge?"
TEST_FN = "tests/test_cic.cpp#function:(anonymous)::testDepositConservesCharge@37"


def test_tests_penalised_unless_the_question_is_about_tests(engine, minipic_index):
    no_rerank = variant(minipic_index, lambda s: setattr(s.rerank, "enabled", False))
    rank_on, row_on = row_of(traced(engine, TEST_Q)[1], TEST_FN)
    rank_off, _ = row_of(traced(no_rerank, TEST_Q)[1], TEST_FN)
    assert row_on and "off_scope" not in rerank_why(row_on)
    assert rank_off is None or rank_on < rank_off, (rank_on, rank_off)
    _, row_other = row_of(traced(engine, NON_TEST_Q)[1], TEST_FN)
    assert row_other and "off_scope" in rerank_why(row_other)


def test_build_chunks_penalised_unless_the_question_is_about_builds(engine):
    _, trace = traced(engine, "How do I enable MPI when configuring the build?")
    builds = [r for r in trace.rows if r["kind"] == "build"]
    assert builds and not any("off_scope" in rerank_why(r) for r in builds)
    _, trace = traced(engine, "Where is the FFTW library found?")
    _, row = row_of(trace, next(r.id for r in engine.records if r.kind == "build"
                                and r.path == "cmake/FindFFTW.cmake"))
    assert row and "off_scope" in rerank_why(row)


def test_name_and_path_matches_raise_a_chunk(engine, minipic_index):
    q = "How does the conjugate gradient solver apply the Laplacian?"
    target = "src/cg_solver.cpp#method:minipic::CGSolver::applyLaplacian@44"
    qset = {stem(t) for t in analysis(engine, q).tokens}
    f = features(record(engine, target), qset, None, "general", [], 0, 2,
                 engine.store.lexical.idf)
    assert f["name_match"] > 0 and f["path_match"] > 0
    other = features(record(engine, "src/particles.cpp#method:minipic::Rng::normal@132"), qset,
                     None, "general", [], 0, 2, engine.store.lexical.idf)
    assert "name_match" not in other and "path_match" not in other

    def no_names(s):
        s.rerank.weights.name_match = 0.0
        s.rerank.weights.path_match = 0.0
    w = engine.settings.rerank.weights
    rank, row = row_of(traced(engine, q)[1], target)
    rank_without, row_without = row_of(traced(variant(minipic_index, no_names), q)[1], target)
    assert rank is not None and rank_without is not None and rank <= rank_without
    gain = row["score"] - row_without["score"]
    assert gain == pytest.approx(w.name_match * f["name_match"] + w.path_match * f["path_match"],
                                 abs=1e-6)


@pytest.mark.parametrize("weight,question", [("low_signal", "Where is depositChargeCIC?"),
                                             ("off_scope", NON_TEST_Q),
                                             ("name_match", NON_TEST_Q)])
def test_a_zero_weight_removes_its_feature(engine, minipic_index, weight, question):
    """Zeroing one weight in a settings copy changes exactly the rows that carry the feature."""
    default = getattr(engine.settings.rerank.weights, weight)
    assert default != 0
    zeroed = variant(minipic_index, lambda s: setattr(s.rerank.weights, weight, 0.0))
    _, t0 = traced(engine, question)
    _, t1 = traced(zeroed, question)
    after = {r["chunk_id"]: r for r in t1.rows if r["class"] == "primary"}
    changed = 0
    for r in t0.rows:
        other = after.get(r["chunk_id"])
        if r["class"] != "primary" or other is None:
            continue
        if any(w.startswith("also caller in another file") for w in r["why"] + other["why"]):
            continue  # its score is carried by the seed's (which the weight may change)
        diff = r["score"] - other["score"]
        if weight in rerank_why(r):
            changed += 1
            if weight == "name_match":
                assert diff > 0
            else:
                assert diff == pytest.approx(default, abs=1e-9)
        else:
            assert diff == pytest.approx(0.0, abs=1e-9), r["chunk_id"]
    assert changed


# ---- 5. structural expansion ------------------------------------------------------------------

def check_caps(trace: Trace, profile: ExpansionProfile) -> Counter:
    assert len(trace.expansions) <= profile.total
    per_seed = Counter((e["seed"], e["relation"]) for e in trace.expansions)
    for (_, relation), n in per_seed.items():
        assert n <= getattr(profile, CAP_OF[relation]), (relation, n)
    return Counter(e["relation"] for e in trace.expansions)


@pytest.mark.parametrize("question", [DATA_FLOW, INTO_DIAGNOSTICS,
                                      "What happens when the simulation advances one time step?",
                                      "Give an overview of the src folder",
                                      "What is the purpose of deposit.cpp?"])
def test_expansions_within_profile_caps(engine, question):
    _, trace = traced(engine, question)
    check_caps(trace, engine.settings.expansion.profiles[trace.analysis.profile])


def test_data_flow_expands_call_neighbours_and_caps_come_from_settings(engine, minipic_index):
    _, trace = traced(engine, DATA_FLOW)
    assert trace.analysis.profile == "broad"
    relations = check_caps(trace, engine.settings.expansion.profiles["broad"])
    # Call neighbours of the seeds enter as expansions, or, when retrieval already found them,
    # are marked on the primary rows ("also call neighbour of ...").
    noted = [r for r in trace.rows if any(w.startswith("also call neighbour") for w in r["why"])]
    assert relations["call neighbour"] > 0 or noted
    # Primary scores are untouched by expansion, so the first primary rows are the seeds.
    primary = [r["chunk_id"] for r in trace.rows if r["class"] == "primary"]
    assert {e["seed"] for e in trace.expansions} <= set(primary[:engine.settings.expansion.seeds])

    tight = ExpansionProfile(call=1, owner=0, file_symbols=1, module_files=1, include=0, total=2)
    narrow = variant(minipic_index, lambda s: s.expansion.profiles.update(broad=tight))
    for question in (DATA_FLOW, INTO_DIAGNOSTICS):
        _, trace = traced(narrow, question)
        relations = check_caps(trace, tight)
        assert not relations["included by"] and not relations["owning class"]
    hits = narrow.search(INTO_DIAGNOSTICS)
    assert sum(h.evidence_class == "expansion" for h in hits) <= tight.total
    # The one call neighbour allowed is added, or noted on a hit the question found itself.
    assert any(h.evidence_class == "expansion" for h in hits) \
        or any(w.startswith("also call neighbour") for h in hits for w in h.why)


def test_a_neighbour_is_expanded_once(engine):
    _, trace = traced(engine, DATA_FLOW)
    ids = [e["chunk_id"] for e in trace.expansions]
    assert len(ids) == len(set(ids)), ids


def test_expansion_disabled(minipic_index):
    off = variant(minipic_index, lambda s: setattr(s.expansion, "enabled", False))
    for question in (DATA_FLOW, INTO_DIAGNOSTICS, "What is the purpose of deposit.cpp?"):
        hits, trace = traced(off, question, k=12)
        assert trace.expansions == []
        assert {h.evidence_class for h in hits} == {"primary"}
        assert not any(w.startswith("also ") for h in hits for w in h.why)


# ---- 6. final-context filter ------------------------------------------------------------------

def test_information_scores(engine):
    cf = engine.settings.context_filter
    definition, declaration = record(engine, DEPOSIT_DEF), record(engine, DEPOSIT_DECL)
    bare = record(engine, "include/minipic/field.hpp#declaration:minipic::Field::Field@34")
    assert definition.comment and len(definition.text.splitlines()) > 10
    assert information(definition) > cf.min_info > information(declaration)
    assert information(definition) > information(bare)
    assert 0.0 <= information(bare) <= information(declaration) <= 1.0


def test_filter_drops_a_declaration_only_when_its_definition_is_present(engine):
    # (Without keep_declaring_files: by default the header's declaration, its file's only
    # item, stays beside the definition shown from the source; see the next assertions.)
    on = engine.settings.context_filter
    cf = on.model_copy(update={"keep_declaring_files": False})
    definition, declaration = record(engine, DEPOSIT_DEF), record(engine, DEPOSIT_DECL)
    assert definition.path != declaration.path
    assert filter_context([definition, declaration], on) == ([0, 1], [])
    assert filter_context([declaration, definition], on) == ([0, 1], [])
    late = on.model_copy(update={"declaring_within": 1})  # the definition is not first
    assert filter_context([declaration, definition], late)[0] == [1]
    kept, dropped = filter_context([definition, declaration], cf)
    assert kept == [0] and dropped[0][0] == 1 and "carried by" in dropped[0][1]
    kept, dropped = filter_context([declaration, definition], cf)
    assert kept == [1] and [i for i, _ in dropped] == [0]
    assert filter_context([declaration], cf) == ([0], [])
    other = record(engine, "src/gather.cpp#function:minipic::gatherCIC@14")
    assert filter_context([declaration, other], cf) == ([0, 1], [])


def test_filter_keeps_the_only_item_of_an_implementation_file_whose_class_is_shown():
    # The class (in the header) lists the method, so the method's short definition in the
    # source file is "carried" by it; but it is that file's only item, and dropping it took the
    # implementation file out of the evidence. A stub (one line) still goes.
    from codeteacher.ingest.parse.cpp import parse_cpp

    header = parse_cpp("src/Reader.hh", "#pragma once\n/// Reads named values of the input.\n"
                       "class Reader {\npublic:\n  double get(const char* key) const;\n"
                       "  int size() const;\nprivate:\n  int n_;\n};\n")
    source = parse_cpp("src/Reader.cc", "#include \"Reader.hh\"\n"
                       "double Reader::get(const char* key) const {\n  return lookup(key);\n}\n"
                       "int Reader::size() const { return n_; }\n")
    cls = next(c for c in header.chunks if c.kind == "class")
    get = next(c for c in source.chunks if c.name == "get")
    size = next(c for c in source.chunks if c.name == "size")
    cf = Settings().context_filter
    assert filter_context([cls, get], cf) == ([0, 1], [])
    kept, dropped = filter_context([cls, size], cf)  # a one-line accessor: a stub
    assert kept == [0] and "carried by" in dropped[0][1]
    off = Settings().context_filter
    off.keep_files = False
    kept, dropped = filter_context([cls, get], off)
    assert kept == [0] and "carried by Reader" in dropped[0][1]


def test_filter_in_the_pipeline(engine, minipic_index):
    # The header's declaration is its file's only item beside the definition shown from the
    # source: it stays (keep_declaring_files); without that rule it is dropped as carried.
    hits, trace = traced(engine, "Where is depositChargeCIC?")
    ids = [h.chunk.id for h in hits]
    assert DEPOSIT_DEF in ids and DEPOSIT_DECL in ids
    assert not any(f["chunk_id"] == DEPOSIT_DECL for f in trace.filtered)
    dropping = variant(minipic_index,
                       lambda s: setattr(s.context_filter, "keep_declaring_files", False))
    hits, trace = traced(dropping, "Where is depositChargeCIC?")
    ids = [h.chunk.id for h in hits]
    assert DEPOSIT_DEF in ids and DEPOSIT_DECL not in ids
    assert any(f["chunk_id"] == DEPOSIT_DECL and "carried by" in f["reason"]
               for f in trace.filtered)
    off = variant(minipic_index, lambda s: setattr(s.context_filter, "enabled", False))
    hits, trace = traced(off, "Where is depositChargeCIC?")
    assert DEPOSIT_DECL in [h.chunk.id for h in hits] and trace.filtered == []


# ---- 7. optional cross-encoder ----------------------------------------------------------------

def test_cross_encoder_off_by_default(engine):
    assert Settings().cross_encoder.model is None and engine.settings.cross_encoder.model is None
    hits = engine.search("Where is the Boris pusher implemented?")
    assert not any("cross-encoder" in w for h in hits for w in h.why)


def test_cross_encoder_missing_model_is_a_user_error(minipic_index, tmp_path):
    missing = tmp_path / "no-such-reranker"
    bad = variant(minipic_index, lambda s: setattr(s.cross_encoder, "model", str(missing)))
    with pytest.raises(UserError, match="cross-encoder") as err:
        bad.ask("Where is the Boris pusher implemented?")
    assert str(missing) in str(err.value) and "\n" not in str(err.value)


# ---- 8. the `ask` shell -----------------------------------------------------------------------

BIN = Path(sys.executable).parent
ASK = [str(BIN / "ask")] if (BIN / "ask").exists() else \
    [sys.executable, "-c", "import sys; from codeteacher.shells.cli import ask_main; sys.exit(ask_main())"]


@pytest.fixture(scope="module")
def ask_runs(tmp_path_factory, minipic_index):
    """`ask --json` and `ask --explain`, started together (each loads the embedding model)."""
    cwd = tmp_path_factory.mktemp("ask")  # no runtime_settings.json here: defaults apply
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", NO_COLOR="1",
               COLUMNS="200")
    for var in ("CODETEACHER_SETTINGS", "CODETEACHER_DEBUG", "CODETEACHER_INDEX"):
        env.pop(var, None)
    commands = {"json": ASK + [INTO_DIAGNOSTICS, "--index", str(minipic_index), "--json"],
                "explain": ASK + [DATA_FLOW, "--index", str(minipic_index), "--explain"]}

    def run(cmd):
        return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=600)
    with ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(run, cmd) for name, cmd in commands.items()}
        return {name: f.result() for name, f in futures.items()}


def test_ask_json_has_intent_class_and_why(ask_runs):
    proc = ask_runs["json"]
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["intent"] == "data_flow"
    assert data["evidence"]
    for item in data["evidence"]:
        assert item["class"] in CLASSES and item["why"] and "evidence_class" not in item
    expanded = [e for e in data["evidence"] if e["class"] == "expansion"]
    assert expanded and all(any(w.startswith("call neighbour of ") for w in e["why"])
                            for e in expanded)


def test_ask_explain_prints_the_trace(ask_runs):
    proc = ask_runs["explain"]
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Evidence:" in out and "query: intent data_flow, expansion profile broad" in out
    for heading in ("candidates, best first", "structural expansions",
                    "filtered from the final context"):
        assert heading in out, heading
    assert "Traceback" not in proc.stderr


# ---- known answers: full pipeline vs. foundation only -----------------------------------------

KNOWN = {
    "Which function computes the weights of the cloud-in-cell stencil?":
        {"include/minipic/interpolation.hpp"},
    "Where are particles that leave the local slab handed to the neighbouring rank?":
        {"src/halo_exchange.cpp"},
    "How are the particles for the Landau damping run initialised?": {"src/particles.cpp"},
    "Where are the field and kinetic energy diagnostics computed?": {"src/simulation.cpp"},
    "How does the built-in radix-2 FFT reorder its input with bit reversal?":
        {"src/fft_poisson.cpp"},
    "How do I enable MPI when configuring the build?": {"INSTALL"},
    "Which tests check that the CG solver agrees with the FFT solver?":
        {"tests/test_poisson.cpp"},
    "How are the command-line options of the example application parsed?":
        {"apps/landau_damping.cpp"},
}


def recall_at_5(engine: Engine) -> tuple[float, dict[str, list[str]]]:
    total, shown = 0.0, {}
    for question, expected in KNOWN.items():
        paths = [e.path for e in engine.ask(question).evidence[:5]]
        shown[question] = paths
        total += len(expected & set(paths)) / len(expected)
    return total / len(KNOWN), shown


def test_full_pipeline_recall_not_below_foundation(engine, minipic_index):
    def foundation(s):
        s.routing.enabled = s.rerank.enabled = False
        s.expansion.enabled = s.context_filter.enabled = False
    full, full_paths = recall_at_5(engine)
    base, base_paths = recall_at_5(variant(minipic_index, foundation))
    print(f"\nevidence-file recall@5 over {len(KNOWN)} questions: full pipeline {full:.3f}, "
          f"foundation only {base:.3f}")
    for question, expected in KNOWN.items():
        if not expected & set(full_paths[question]):
            print(f"  full misses {sorted(expected)}: {question} -> {full_paths[question]}")
        if not expected & set(base_paths[question]):
            print(f"  foundation misses {sorted(expected)}: {question} -> {base_paths[question]}")
    assert full >= base


def test_location_lookups_list_distinct_files(minipic_index):
    """A location answer is a list of places: one item per file (routing's max_per_file), and
    a file is shown by its best own chunk rather than its whole-file summary."""
    question = "Where is the Boris particle pusher?"
    eng = variant(minipic_index, lambda s: None)
    assert eng.settings.routing.intents["location_lookup"].max_per_file == 1
    top = eng.ask(question).evidence
    paths = [e.path for e in top]
    assert len(paths) == len(set(paths)), paths
    pusher = next(e for e in top if e.path == "include/minipic/pusher.hpp")
    assert pusher.kind != "file" and "borisPush" in pusher.symbol, pusher
    # with the intent's cap lifted, the general per-file limit applies again (here 3)
    def lift(s):
        s.routing.intents["location_lookup"].max_per_file = None
        s.retrieval.max_per_file = 3
    loose = variant(minipic_index, lift)
    loose_paths = [e.path for e in loose.ask(question).evidence]
    assert max(Counter(loose_paths).values()) > 1, loose_paths


def test_operator_keyword_is_not_a_name_word():
    from codeteacher.retrieval.rerank import _name_parts

    # "the heat-conduction operator" must not match every operator overload by name ...
    assert _name_parts("operator+") == frozenset() and _name_parts("operator()") == frozenset()
    assert _name_parts("Vec operator+=") == {"vec"}
    # ... while classes and functions that are named for an operator still are.
    assert stem("operator") in _name_parts("LaplaceOperator")
    assert stem("operator") in _name_parts("apply_operator")
