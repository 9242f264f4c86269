"""LLM answers grounded in retrieved chunks, written for a small local model.

The prompt (mode final_answer) shows one or a few context items, each reduced to its most
informative lines (answer/context.py), sized from the model's measured prompt speed so the first
token comes within `first_token_s`. The model writes only the explanation (what the code does
and how); the answer around it is composed from the index: a sentence saying where the code is
(files, symbols, lines) first, the Evidence list after. Output is parsed forgivingly (a model
may still write `Answer:`/`Evidence:` sections; evidence naming a path outside the context is
dropped and counted), and file or symbol names in the prose that the context does not hold are
reported as `unsupported_names`.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable

from pydantic import BaseModel, Field

from ..contracts.models import SearchHit
from ..generation import ChatRequest, Generator
from ..generation.base import messages_tokens
from ..generation.prompts import render
from .context import build_context
from .extractive import where_sentence
from .grounding import unsupported_names

NO_ANSWER = "The context does not contain the answer."
_SECTION = r"^[ \t>#*_]*{name}[ \t*_]*:[ \t*_]*"
_ANSWER_RE = re.compile(_SECTION.format(name="answer"), re.I | re.M)
_EVIDENCE_RE = re.compile(_SECTION.format(name="evidence"), re.I | re.M)
_BULLET_RE = re.compile(r"^\s*(?:[-*\u2022+]|\d+[.)])\s+(.*)$")
_PATHLIKE_RE = re.compile(r"(?<![\w:])((?:[\w.+-]+/)*[\w+-]+\.[A-Za-z][\w]{0,5})(?::\d+(?:-\d+)?)?")
_REF_RE = re.compile(r"\[(\d+)\]")
_DASH_RE = re.compile(r"\s+(?:\u2014|\u2013|--|-)\s+")
_ABSTAIN_RE = re.compile(
    r"does not contain the answer|"
    r"\b(?:context|code|information|snippets?)\s+(?:does not|doesn't|do not|don't)\s+"
    r"(?:contain|include|provide|show|mention|say|answer|explain|specify)|"
    r"\b(?:not enough|insufficient|no relevant|no) (?:information|context|details|evidence)\b|"
    r"\bcannot (?:be )?(?:determined|determine|answer|find|tell)|"
    r"\bcan't (?:determine|answer|find|tell)|\bI (?:don't|do not) know\b|"
    r"\bunable to (?:determine|answer|find)|"
    r"\bnot (?:mentioned|specified|provided|shown|found|described) in the (?:context|code)", re.I)


class AnswerEvidence(BaseModel):
    path: str
    symbol: str = ""
    what: str = ""
    chunk_id: str = ""  # the context item the path/symbol was matched to
    start_line: int = 0
    end_line: int = 0


class LLMAnswer(BaseModel):
    answer: str
    evidence: list[AnswerEvidence] = Field(default_factory=list)
    abstained: bool = False
    dropped_evidence: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    prompt_chars: int = 0
    context_items: int = 0  # retrieved chunks shown to the model
    context_truncated: bool = False
    finish_reason: str = "stop"
    backend: str = ""
    model: str = ""
    raw: str = ""  # the model's unparsed output
    prose: str = ""  # the model's own sentences (the answer minus the composed where-sentence)
    unsupported_names: list[str] = Field(default_factory=list)
    ttft_ms: float | None = None  # first generated text after the request (streaming backends)
    context_tokens: int = 0  # budget the context was fitted to


def _clean(text: str) -> str:
    return text.strip().strip("`*_\"' ").strip()


def _match_path(line: str, paths: list[str], refs: list[str]) -> tuple[str | None, str | None]:
    """(context path named in the line, or None; the path-like token seen, if any)."""
    for ref in _REF_RE.findall(line):
        if 1 <= int(ref) <= len(refs):
            return refs[int(ref) - 1], None
    for p in sorted(paths, key=len, reverse=True):
        if p in line:
            return p, p
    token = next(iter(_PATHLIKE_RE.findall(line)), None)
    if token:
        tail = [p for p in paths if p.endswith("/" + token) or p == token]
        if len(tail) == 1:
            return tail[0], token
        base = token.rsplit("/", 1)[-1]
        same = [p for p in paths if p.rsplit("/", 1)[-1] == base]
        if len(same) == 1 and "/" not in token:
            return same[0], token
    return None, token


def _drop_lead_in(answer: str) -> str:
    """Drop a short first line that only announces the answer ("A short answer:")."""
    first, _, rest = answer.strip().partition("\n")
    if rest.strip() and first.rstrip().endswith(":") and len(first) < 60:
        return rest.strip()
    return answer.strip()


def parse_answer(text: str, hits: list[SearchHit]) -> tuple[str, list[AnswerEvidence], int]:
    """(answer, evidence, dropped) from the model's output; see the module docstring."""
    ans_m, ev_m = _ANSWER_RE.search(text), _EVIDENCE_RE.search(text)
    if ev_m is None:
        body = text[ans_m.end():] if ans_m else text
        return _drop_lead_in(body), [], 0
    start = ans_m.end() if ans_m and ans_m.start() < ev_m.start() else 0
    answer = _drop_lead_in(text[start:ev_m.start()])
    refs = [h.chunk.path for h in hits]
    paths = list(dict.fromkeys(refs))
    evidence: list[AnswerEvidence] = []
    dropped, seen = 0, set()
    for raw in text[ev_m.end():].splitlines():
        m = _BULLET_RE.match(raw)
        line = (m.group(1) if m else raw).strip()
        if not line or (not m and _ANSWER_RE.match(raw)):
            continue
        path, token = _match_path(line, paths, refs)
        if path is None:
            dropped += 1 if token else 0  # a path the context does not hold
            continue
        rest = line
        if token and token in rest:
            rest = rest.split(token, 1)[1]
        rest = re.sub(r"^:\d+(?:-\d+)?", "", rest)
        rest = _REF_RE.sub("", rest)
        parts = _DASH_RE.split(rest, maxsplit=1)
        symbol = _clean(parts[0].lstrip(" :|"))
        what = _clean(parts[1]) if len(parts) > 1 else ""
        if len(symbol) > 80:  # prose, not a symbol name
            symbol, what = "", what or symbol
        hit = next((h for h in hits if h.chunk.path == path and symbol and
                    (h.chunk.name and h.chunk.name in symbol or
                     symbol in (h.chunk.qualified_name or ""))), None) or \
            next(h for h in hits if h.chunk.path == path)
        key = (path, symbol)
        if key in seen:
            continue
        seen.add(key)
        evidence.append(AnswerEvidence(path=path, symbol=symbol, what=what,
                                       chunk_id=hit.chunk.id, start_line=hit.chunk.start_line,
                                       end_line=hit.chunk.end_line))
    if not answer and not evidence:
        answer = text.strip()
    return answer, evidence, dropped


def is_abstention(answer: str) -> bool:
    return not answer.strip() or bool(_ABSTAIN_RE.search(answer))


def context_budget(question: str, generator: Generator, gs, room: int) -> tuple[int, int]:
    """(context tokens, items) for this model: explicit settings, else from the catalogue's
    measured prompt speed (tokens read within first_token_s), else what the context leaves."""
    from ..generation.catalog import spec_for

    opts = gs.answer_context
    spec = spec_for(gs.answers.model) if gs.answers.backend == "llama-cpp" else None
    items = opts.max_items or (spec.answer_items if spec else 6)
    if opts.context_tokens:
        return min(room, opts.context_tokens), items
    if spec and spec.prompt_tokens_per_s:
        # The instructions are the same for every question, so llama.cpp keeps them in its
        # cache; the question and the context are what is read before the first token.
        fresh = int(spec.prompt_tokens_per_s * opts.first_token_s)
        budget = fresh - generator.count_tokens(question) - 16
        return max(96, min(room, budget)), items
    return room, items


def generate_answer(question: str, hits: list[SearchHit], generator: Generator,
                    settings, on_text: Callable[[str], None] | None = None) -> LLMAnswer:
    """Answer `question` from `hits` with `generator` (settings: Settings or GenerationSettings).

    `on_text` receives the answer as it is written: the composed where-sentence at once, then
    the model's text piece by piece (where the backend streams). Raises UserError where the
    backend cannot run (backend 'none', server down).
    """
    gs = getattr(settings, "generation", settings)
    cfg, opts = gs.answers, gs.answer_context
    if not hits:  # nothing retrieved: no model call can ground an answer
        return LLMAnswer(answer=NO_ANSWER, abstained=True, backend=generator.name,
                         model=generator.model_id)
    overhead = messages_tokens(generator, render(gs, "final_answer",
                                                 {"context": "", "question": question}))
    room = generator.context_size - cfg.max_tokens - overhead - 16
    budget, max_items = context_budget(question, generator, gs, room)
    stream = getattr(generator, "stream", None)
    t_first: list[float] = []

    def piece(text: str) -> None:
        if not t_first:
            t_first.append(time.perf_counter())
        if on_text is not None:
            on_text(text)

    for scale in (1.0, 0.6):  # second pass: the backend still found the prompt too long
        context, n_items, cut = build_context(hits, question, generator.count_tokens,
                                              max(0, int(budget * scale)), max_items,
                                              opts.code_lines, opts.max_chunk_chars)
        where = where_sentence(hits[:n_items])
        messages = render(gs, "final_answer", {"context": context or "(none)",
                                                "question": question})
        req = ChatRequest(messages=messages, max_tokens=cfg.max_tokens,
                          temperature=cfg.temperature, stop=list(opts.stop))
        if scale == 1.0 and on_text is not None:
            on_text(where + " ")
        t0 = time.perf_counter()
        gen = stream(req, piece) if stream is not None else generator.generate([req])[0]
        if gen.finish_reason != "context_overflow":
            break
    shown = hits[:n_items]
    prose, evidence, dropped = parse_answer(gen.text, shown)
    if gen.finish_reason in ("error", "context_overflow"):
        prose = ""
    prose = prose.strip()
    abstained = is_abstention(prose)
    answer = f"{where} {prose}".strip() if prose else ""
    known = context + "\n" + question
    return LLMAnswer(
        answer=answer, evidence=evidence, abstained=abstained,
        dropped_evidence=dropped, tokens_in=gen.tokens_in, tokens_out=gen.tokens_out,
        prompt_chars=sum(len(m["content"]) for m in messages), context_items=n_items,
        context_truncated=cut or scale < 1.0, finish_reason=gen.finish_reason,
        backend=generator.name, model=generator.model_id, raw=gen.text, prose=prose,
        unsupported_names=unsupported_names(prose, known),
        ttft_ms=round((t_first[0] - t0) * 1000, 1) if t_first else None,
        context_tokens=max(0, int(budget * scale)))
