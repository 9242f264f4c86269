"""LLM answers: evidence parsing of sloppy output, abstention, the informative-lines context and
its budget, the composed where-sentence, streaming and the real (packaged) model."""
from __future__ import annotations

from pathlib import Path

import pytest
from codeteacher.answer.context import body_lines, build_context
from codeteacher.answer.llm import generate_answer, is_abstention, parse_answer

from codeteacher.contracts.errors import UserError
from codeteacher.contracts.models import Chunk, SearchHit
from codeteacher.contracts.settings import Settings
from codeteacher.generation import make_generator

MINIPIC = Path(__file__).resolve().parent.parent / "src" / "codeteacher" / "demo" / "minipic"

INLINE = {
    "src/deposit.cpp": ("depositCharge", """// Scatters each particle's charge to the four
// surrounding grid nodes with bilinear (cloud-in-cell) weights; returns the total charge.
double depositCharge(const Particles& p, Grid& rho) {
    double total = 0;
    for (std::size_t n = 0; n < p.size(); ++n) {
        const int i = int(p.x[n] / rho.dx()), j = int(p.y[n] / rho.dy());
        const double wx = p.x[n] / rho.dx() - i, wy = p.y[n] / rho.dy() - j;
        rho(i, j) += p.q * (1 - wx) * (1 - wy);
        rho(i + 1, j) += p.q * wx * (1 - wy);
        rho(i, j + 1) += p.q * (1 - wx) * wy;
        rho(i + 1, j + 1) += p.q * wx * wy;
        total += p.q;
    }
    return total;
}"""),
    "src/gather.cpp": ("gatherField", """// Interpolates the field to particle positions
// with the deposit's weights.
void gatherField(const Grid& E, Particles& p) {
    for (std::size_t n = 0; n < p.size(); ++n) {
        const int i = int(p.x[n] / E.dx()), j = int(p.y[n] / E.dy());
        const double wx = p.x[n] / E.dx() - i, wy = p.y[n] / E.dy() - j;
        p.E[n] = E(i, j) * (1 - wx) * (1 - wy) + E(i + 1, j) * wx * (1 - wy)
               + E(i, j + 1) * (1 - wx) * wy + E(i + 1, j + 1) * wx * wy;
    }
}"""),
}


def sample_hits() -> list[SearchHit]:
    """Whole small files of the sample app when present, else the inline stand-ins."""
    hits = []
    for path, (name, inline) in INLINE.items():
        f = MINIPIC / path
        text = f.read_text() if f.is_file() and f.stat().st_size < 4000 else inline
        hits.append(SearchHit(chunk=Chunk(
            id=f"{path}#{name}", path=path, kind="function", name=name, qualified_name=name,
            start_line=1, end_line=text.count("\n") + 1, text=text, language="cpp",
            explanation=f"{name}: particle/grid interpolation step.",
            calls=["makeStencil"] if "deposit" in path else []), score=1.0))
    return hits


HITS = sample_hits()


def answers_settings(**update) -> Settings:
    s = Settings()
    s.generation.answers = s.generation.answers.model_copy(update={
        "backend": "llama-cpp", "context_size": 2048, "max_tokens": 64, "temperature": 0.0,
        **update})
    # Short context items keep the test quick on 2 cores.
    s.generation.answer_context.max_chunk_chars = 700
    s.generation.answer_context.max_items = 3
    return s


# ---- parsing (no model) ------------------------------------------------------------------

def test_parse_well_formed():
    text = ("Answer: Charge is scattered with bilinear weights.\n\nEvidence:\n"
            "- src/deposit.cpp : depositCharge — the weight products\n"
            "- src/gather.cpp:3-9 : gatherField - the adjoint interpolation\n")
    answer, ev, dropped = parse_answer(text, HITS)
    assert answer == "Charge is scattered with bilinear weights."
    assert [(e.path, e.symbol, e.what) for e in ev] == [
        ("src/deposit.cpp", "depositCharge", "the weight products"),
        ("src/gather.cpp", "gatherField", "the adjoint interpolation")]
    assert ev[0].chunk_id == HITS[0].chunk.id and dropped == 0


def test_parse_drops_paths_not_in_context_and_maps_refs_and_basenames():
    text = ("**Answer:** It deposits charge.\n**Evidence:**\n"
            "* src/solver/poisson.cpp : solve — not shown to the model\n"
            "1. deposit.cpp: depositCharge -- basename only\n"
            "- [2] the gather step\n"
            "- a bullet without any path\n")
    answer, ev, dropped = parse_answer(text, HITS)
    assert answer == "It deposits charge."
    assert [e.path for e in ev] == ["src/deposit.cpp", "src/gather.cpp"]
    assert ev[0].symbol == "depositCharge" and ev[0].what == "basename only"
    assert dropped == 1


def test_parse_missing_sections_make_whole_text_the_answer():
    assert parse_answer("It scatters charge.\nThen it sums.", HITS) == (
        "It scatters charge.\nThen it sums.", [], 0)
    answer, ev, _ = parse_answer("Answer: only an answer", HITS)
    assert answer == "only an answer" and ev == []
    answer, ev, _ = parse_answer("Evidence:\n- src/gather.cpp : gatherField — x", HITS)
    assert answer == "" and ev[0].path == "src/gather.cpp"
    assert parse_answer("A short answer based on the context:\nIt scatters.", HITS)[0] == \
        "It scatters."


def test_abstention_detection():
    assert is_abstention("The context does not contain the answer.")
    assert is_abstention("The code doesn't show how the mesh is refined.")
    assert is_abstention("There is not enough information to answer.")
    assert is_abstention("")
    assert not is_abstention("It deposits charge with bilinear weights.")


class CharCounter:
    """A stand-in token counter (the budget logic only needs count_tokens)."""

    name, model_id, context_size = "count", "count", 0

    def count_tokens(self, text: str) -> int:
        return len(text) // 4 + 1


def test_context_fits_the_budget_and_cuts():
    count = CharCounter().count_tokens
    q = "How is particle charge deposited onto the grid?"
    ctx, n, cut = build_context(HITS, q, count, budget=10_000, max_items=8, code_lines=8)
    assert n == 2 and not cut and ctx.startswith("[1] src/deposit.cpp lines 1-")
    assert "[2] src/gather.cpp" in ctx
    ctx, n, cut = build_context(HITS, q, count, budget=90, max_items=8, code_lines=8)
    assert cut and n == 1 and count(ctx) <= 90 + 4


def test_context_keeps_the_working_lines_not_the_first_ones():
    name, text = INLINE["src/deposit.cpp"]
    chunk = Chunk(id="d", path="src/deposit.cpp", kind="function", name=name, start_line=1,
                  end_line=16, text=text, signature=text.splitlines()[2].rstrip(" {"))
    lines = body_lines(chunk, {"rho", "charge", "total"}, 4)
    assert len([ln for ln in lines if ln.strip() != "…"]) == 4
    assert any("rho(i, j) +=" in ln for ln in lines)  # names the question's words and works
    assert not any(ln.strip() in ("{", "}") or ln.strip().startswith("//") for ln in lines)
    logging = chunk.model_copy(update={"text": chunk.text.replace(
        "total += p.q;", 'std::cout << "charge " << total << std::endl; total += p.q;')})
    assert not any("cout" in ln for ln in body_lines(logging, {"charge"}, 8))


def test_no_hits_abstains_without_a_model_call():
    res = generate_answer("q", [], make_generator(Settings().generation.answers), Settings())
    assert res.abstained and res.tokens_in == 0 and res.context_items == 0


def test_backend_none_refuses():
    with pytest.raises(UserError, match="backend 'none'"):
        generate_answer("q", HITS, make_generator(Settings().generation.answers), Settings())


# ---- the packaged model -------------------------------------------------------------------

@pytest.fixture(scope="module")
def generator():
    gen = make_generator(answers_settings().generation.answers)
    yield gen
    gen.close()


@pytest.mark.llm
def test_real_model_answers_with_grounded_evidence_and_streams(generator):
    pieces: list[str] = []
    res = generate_answer("How is particle charge deposited onto the grid?", HITS, generator,
                          answers_settings(), on_text=pieces.append)
    assert res.raw.strip() and res.answer
    # The answer opens with the composed where-sentence, then the model's own text follows.
    assert res.answer.startswith("The relevant code is the function `depositCharge` in "
                                 "src/deposit.cpp")
    assert res.answer.endswith(res.prose) and res.prose
    assert pieces[0].startswith("The relevant code is") and len(pieces) > 2
    assert "".join(pieces[1:]).strip() == res.raw.strip()  # streamed = what was parsed
    assert res.ttft_ms is not None and res.ttft_ms > 0
    assert {e.path for e in res.evidence} <= {h.chunk.path for h in HITS}
    assert res.tokens_in > 0 and res.tokens_out > 0 and res.context_items == 2
    assert res.backend == "llama-cpp" and res.finish_reason in ("stop", "length")
    assert res.prompt_chars > 0 and res.tokens_in + 64 <= generator.context_size
    assert isinstance(res.unsupported_names, list)


@pytest.mark.llm
def test_real_model_small_context_is_fitted():
    s = answers_settings(context_size=512, max_tokens=48)
    gen = make_generator(s.generation.answers)
    try:
        res = generate_answer("What does gatherField compute?", HITS * 3, gen, s)
    finally:
        gen.close()
    assert 1 <= res.context_items <= 3
    assert res.finish_reason in ("stop", "length") and res.tokens_in + 48 <= 512
