"""Extractive answers: composed sentences from the best evidence, with no language model.

Used for backend 'none' and whenever the model cannot answer. The answer says where the best
match is defined (and declared), what its own words say (explanation, comment or doc section,
markup stripped), what calls it and what it calls, then names the next matches. Everything it
says comes from the index, so it is always grounded; the Evidence list carries path:lines.
"""
from __future__ import annotations

from ..contracts.models import Chunk, Evidence, SearchHit
from ..index.layout import sym_node
from .context import describe_text
from .text import first_sentences, strip_markup

_KIND_WORDS = {"function_part": "part of the function", "declaration": "declaration",
               "doc_section": "section", "build": "build file"}
_CODE_KINDS = ("function", "method", "constructor", "destructor", "operator", "function_part",
               "class", "struct", "union", "enum", "declaration", "macro", "typedef")


def first_sentence(text: str, limit: int = 220) -> str:
    return first_sentences(text, limit, 1)


def describe(c: Chunk) -> str:
    """A one-line description of a chunk, from the best source it has (markup stripped)."""
    text = describe_text(c, 240, 1)
    if text:
        return text
    if c.kind == "doc_section":
        return " > ".join(c.heading_path)
    if c.signature:
        return " ".join(c.signature.split())[:200]
    if c.members:
        return f"{c.kind} with members " + ", ".join(c.members[:6])
    return first_sentence(strip_markup(c.text))


def symbol_of(c: Chunk) -> str:
    return c.qualified_name or c.name or c.path


def to_evidence(hit: SearchHit) -> Evidence:
    c = hit.chunk
    return Evidence(path=c.path, start_line=c.start_line, end_line=c.end_line,
                    symbol=symbol_of(c), kind=c.kind, score=hit.score, chunk_id=c.id,
                    description=describe(c), why=hit.why, evidence_class=hit.evidence_class)


def place(c: Chunk) -> str:
    lines = (f"lines {c.start_line}-{c.end_line}" if c.end_line > c.start_line
             else f"line {c.start_line}")
    return f"{c.path} ({lines})"


def named(c: Chunk) -> str:
    """The chunk as a noun phrase: "the function `ns::f`", "the section "A > B"", ..."""
    if c.kind == "doc_section":
        title = " > ".join(c.heading_path) or c.name
        return f'the section "{title}"' if title else "a documentation section"
    if c.kind == "file":
        return "the file"
    if c.kind == "module":
        return "the folder"
    if c.kind == "build":
        return "the build file"
    if c.kind == "call_chain":
        return f"the call chain starting at `{c.name}`"
    return f"the {_KIND_WORDS.get(c.kind, c.kind)} `{symbol_of(c)}`"


def _at(c: Chunk) -> str:
    """ "the function `f` in a.cpp (lines 3-9)", "the file a.cpp (lines 1-90)" """
    noun = named(c)
    return f"{noun} {place(c)}" if c.kind in ("file", "module", "build") else \
        f"{noun} in {place(c)}"


def where_sentence(hits: list[SearchHit], n: int = 2, lead: str = "The relevant code is") -> str:
    """One sentence naming where the top `n` items are (files, symbols, lines)."""
    if not hits:
        return ""
    parts = [_at(h.chunk) for h in hits[:n]]
    text = f"{lead} {parts[0]}"
    if len(parts) > 1:
        text += ", together with " + ", ".join(parts[1:])
    return text + "."


def _declaration(c: Chunk, store) -> Chunk | None:
    """Where a definition is declared (a header prototype), from the index's symbol table."""
    if store is None or c.kind not in _CODE_KINDS or c.is_declaration:
        return None
    for i in store.by_symbol.get(c.qualified_name or c.name, [])[:12]:
        r = store.records[i]
        if r.id != c.id and r.path != c.path and (r.is_declaration or r.kind == "declaration"):
            return r
    return None


def _names(store, node: str, incoming: bool, limit: int) -> list[str]:
    edges = (store.edges_in if incoming else store.edges_out).get(node, [])
    out: list[str] = []
    for typ, other in edges:
        if typ != "call":
            continue
        kind, _, ident = other.partition(":")
        i = store.by_id.get(ident) if kind == "sym" else None
        name = symbol_of(store.records[i]) if i is not None else ident
        name = name.replace("(anonymous)::", "")
        if name and name not in out:
            out.append(name)
        if len(out) >= limit:
            break
    return out


def _quote(names: list[str]) -> str:
    q = [f"`{n}`" for n in names]
    return q[0] if len(q) == 1 else ", ".join(q[:-1]) + " and " + q[-1]


def relations_sentence(c: Chunk, store=None, limit: int = 3) -> str:
    """What calls the chunk and what it calls (graph edges; else the calls it writes)."""
    if c.kind not in _CODE_KINDS:
        return ""
    callers = _names(store, sym_node(c.id), True, limit) if store is not None else []
    callees = _names(store, sym_node(c.id), False, limit + 1) if store is not None else []
    if not callees:
        callees = list(dict.fromkeys(n.split("::")[-1] for n in c.calls))[: limit + 1]
    if callers and callees:
        return f"It is called by {_quote(callers)}, and it calls {_quote(callees)}."
    if callers:
        return f"It is called by {_quote(callers)}."
    if callees:
        return f"It calls {_quote(callees)}."
    return ""


def _says(c: Chunk) -> str:
    text = describe_text(c, 300, 2)
    if not text:
        sig = " ".join(c.signature.split())
        return f"Its signature is `{sig[:160]}`." if sig else ""
    if c.explanation:
        return f"In short: {text}"
    if c.kind == "doc_section":
        return f"The documentation says: {text}"
    if c.kind in ("file", "module", "call_chain", "build"):
        return f"Summary: {text}"
    return f"Its comment says: {text}"


def extractive_answer(hits: list[SearchHit], store=None, low_confidence: bool = False) -> str:
    if not hits:
        return "The index holds nothing that matches this question."
    best = hits[0].chunk
    lead = ("The index holds little on this; the closest match is" if low_confidence
            else "The relevant code is")
    sentences = [f"{lead} {_at(best)}."]
    decl = _declaration(best, store)
    if decl is not None:
        sentences.append(f"It is declared in {place(decl)}.")
    for s in (_says(best), relations_sentence(best, store)):
        if s:
            sentences.append(s)
    also = []
    for h in hits[1:3]:
        c = h.chunk
        desc = describe_text(c, 160, 1)
        also.append(f"{_at(c)}" + (f", which says: {desc.rstrip('.')}" if desc else ""))
    if also:
        sentences.append("Also relevant: " + "; ".join(also) + ".")
    return " ".join(sentences)
