"""The core API. CLI, MCP server and evaluation are thin shells over it; everything it returns
is plain data (pydantic models), rendered only at the edges.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, Field

from .answer.extractive import extractive_answer, to_evidence
from .contracts.errors import UserError
from .contracts.models import AskResult, Chunk, SearchHit
from .contracts.settings import Settings, load_settings
from .index.layout import LINKS_FILE, file_node, module_node, split_node, sym_node
from .contracts.settings.limits import shorten
from .index.files import RefusedFile, read_repo_file
from .index.store import IndexStore
from .retrieval.search import Trace, search


class CodeSlice(BaseModel):
    path: str
    start_line: int
    end_line: int
    total_lines: int
    text: str
    truncated: bool = False


class GraphNeighbour(BaseModel):
    relation: str  # call | owns | include | inherits | contains, with direction
    id: str
    name: str
    path: str = ""
    kind: str = ""
    start_line: int | None = None
    end_line: int | None = None


class IndexStatus(BaseModel):
    name: str
    path: str
    root: str
    created_at: str
    model_id: str
    counts: dict[str, int]
    stage_seconds: dict[str, float]
    stale_files: list[str] = Field(default_factory=list)  # changed since the build
    missing_files: list[str] = Field(default_factory=list)
    refused_files: dict[str, str] = Field(default_factory=dict)  # path -> why it was not read
    new_files: int = 0


def __getattr__(name: str):
    """`build_index` and `BuildReport` are part of the API, imported on first use: answering
    questions needs none of the ingest side (tree-sitter, the parsers)."""
    if name in ("BuildReport", "build_index"):
        from .ingest import build

        return getattr(build, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 2)


class Engine:
    """A loaded index with its models, kept warm between questions."""

    def __init__(self, store: IndexStore, settings: Settings):
        self.store = store
        self.settings = settings
        self._embedder = None
        self._generator = None
        self.loaded_mtime = (store.path / "manifest.json").stat().st_mtime
        self.load_ms: dict[str, float] = {}  # index / model load times, shown by the first ask
        self._loads_reported = False

    @classmethod
    def load(cls, index_dir: str | Path, settings: Settings | None = None) -> "Engine":
        t0 = time.perf_counter()
        store = IndexStore(index_dir)
        engine = cls(store, settings or load_settings())
        engine.load_ms["index"] = _ms(t0)
        return engine

    # -- properties used by the shells -------------------------------------------------------
    @property
    def records(self) -> list[Chunk]:
        return self.store.records

    @property
    def structure(self):
        return self.store.structure

    @property
    def root(self) -> Path:
        return self.store.root

    @property
    def embedder(self):
        if self._embedder is None:
            from .embedding import load_query_embedder

            # Queries are embedded as the index was (model, length, precision), whatever
            # today's settings say; the backend and device are local choices.
            t0 = time.perf_counter()
            self._embedder = load_query_embedder(self.store.manifest.embedding,
                                                 self.store.manifest.model_id,
                                                 self.settings.embedding)
            self.load_ms["model"] = _ms(t0)
        return self._embedder

    # -- retrieval and answers ---------------------------------------------------------------
    def search(self, query: str, k: int | None = None, kinds: list[str] | None = None,
               paths: list[str] | None = None, trace: Trace | None = None) -> list[SearchHit]:
        if not query or not query.strip():
            raise UserError("empty query")
        self._bounded(query, self.settings.limits.max_question_chars, "question")
        return search(self.store, self.embedder, query, self.settings, k=k, kinds=kinds,
                      paths=paths, trace=trace)

    def ask(self, question: str, k: int | None = None, trace: Trace | None = None,
            on_text: Callable[[str], None] | None = None) -> AskResult:
        """Retrieve and answer. `on_text` receives an LLM answer as it is written (streaming);
        extractive and fallback answers are not streamed (they arrive whole in the result)."""
        from .answer.confidence import assess

        timings: dict[str, float] = {}
        trace = trace if trace is not None else Trace()
        _ = self.embedder  # loaded outside the query's own timing (load_model below)
        t0 = time.perf_counter()
        hits = self.search(question, k=k, trace=trace)
        timings["retrieve"] = _ms(t0)
        t1 = time.perf_counter()
        result = AskResult(question=question, answer="", evidence=[to_evidence(h) for h in hits],
                           intent=trace.analysis.intent if trace.analysis else "")
        result.context = list(result.evidence)
        ccfg = self.settings.generation.confidence
        qvec = self.embedder.embed([question])[0] if hits and ccfg.enabled else None
        conf = assess(question, hits, self.store, ccfg, qvec)
        result.confidence = conf.score
        if self.settings.generation.answers.backend == "none":
            result.answer = extractive_answer(hits, self.store, conf.low)
            result.abstained = conf.low or not hits
        elif conf.low or not hits:  # a model would only dress up weak evidence
            self._fallback(hits, result, "the index holds little on this question "
                           f"(confidence {conf.score:.2f}"
                           + (f"; not found: {', '.join(conf.missing_names or conf.missing_terms[:4])}"
                              if conf.missing_names or conf.missing_terms else "") + ")", True)
        else:
            self._llm_answer(question, hits, result, on_text)
        timings["answer"] = _ms(t1)
        t2 = time.perf_counter()
        result.papers = self._papers(result)
        timings["papers"] = _ms(t2)
        timings["total"] = _ms(t0)
        if not self._loads_reported:  # a cold process: what the first answer waited for
            timings.update({f"load_{k}": v for k, v in self.load_ms.items()})
            self._loads_reported = True
        result.timings_ms = timings
        return result

    def _fallback(self, hits: list[SearchHit], result: AskResult, note: str,
                  low: bool = False) -> None:
        from .generation import model_id_for

        cfg = self.settings.generation.answers
        result.answer = extractive_answer(hits, self.store, low)
        result.answer_source, result.answer_note = "fallback", note
        result.backend, result.model = cfg.backend, model_id_for(cfg)
        result.abstained = low or not hits

    @property
    def generator(self):
        """The answer model, loaded on first use and kept warm."""
        if self._generator is None:
            from .generation import make_generator

            self._generator = make_generator(self.settings.generation.answers)
        return self._generator

    def warm_up(self) -> None:
        """Load every model now, so that later latencies measure answering only."""
        self.embedder.embed(["warm up"])
        import numpy as np

        # A long-lived engine reads its vectors from RAM: memory-mapped fancy indexing costs
        # ~20 µs a call, and a query makes ~30 (a cold `ask` keeps the map: it asks once).
        self.store.vectors = np.ascontiguousarray(self.store.vectors)
        if self.settings.generation.answers.backend != "none":
            _ = self.generator

    def _llm_answer(self, question: str, hits: list[SearchHit], result: AskResult,
                    on_text: Callable[[str], None] | None = None) -> None:
        """Answer with the configured model; the Evidence it cites (only context paths) leads
        the evidence list, the rest of the retrieved context follows. A model that cannot
        load or answer leaves the extractive answer, with the reason in answer_note."""
        from .answer.llm import generate_answer

        try:
            llm = generate_answer(question, hits, self.generator, self.settings, on_text)
        except UserError as exc:  # model not installed, server down: still answer, say why
            self._fallback(hits, result, f"the model could not answer: {exc}")
            return
        failed = llm.finish_reason in ("error", "context_overflow") or not llm.answer.strip()
        if failed:
            self._fallback(hits, result, f"generation failed ({llm.finish_reason})")
        elif llm.abstained:
            # Retrieval was confident (else no model was asked) but the small model found
            # nothing in its one or two items: the composed extract draws on all of them.
            self._fallback(hits, result, f"the model found no answer in its "
                           f"{llm.context_items} context item(s); composed from the index")
        else:
            from .answer.extractive import relations_sentence

            # The graph knows what calls the code and what it calls; a small model does not.
            rel = relations_sentence(hits[0].chunk, self.store) if not llm.abstained else ""
            if rel and on_text is not None:
                on_text(" " + rel)
            result.answer = f"{llm.answer} {rel}".strip()
            result.answer_source = "llm"
            result.abstained = llm.abstained
            result.unsupported_names = llm.unsupported_names
            result.ttft_ms = llm.ttft_ms
        result.backend, result.model = llm.backend, llm.model
        result.dropped_evidence = llm.dropped_evidence
        result.tokens_in, result.tokens_out = llm.tokens_in, llm.tokens_out
        result.context = result.evidence[: llm.context_items] if llm.context_items else []
        cited = {e.chunk_id for e in llm.evidence if e.chunk_id}
        if cited:
            first = [e for e in result.evidence if e.chunk_id in cited]
            result.evidence = first + [e for e in result.evidence if e.chunk_id not in cited]
        by_id = {e.chunk_id: e for e in llm.evidence if e.chunk_id and e.what}
        for e in result.evidence:
            if e.chunk_id in by_id:
                e.description = by_id[e.chunk_id].what

    def _papers(self, result: AskResult) -> list:
        """Papers linked to the evidence (needs paper_links.json, built by `papers build`)."""
        if not (self.store.path / LINKS_FILE).is_file():
            return []  # no links: the papers machinery is not even imported (cold `ask`)
        from .papers.linking import links_for

        cfg = self.settings.papers
        return links_for(self.store.path, chunk_ids=[e.chunk_id for e in result.evidence],
                         k=cfg.ask_max_papers, min_score=cfg.ask_min_score)

    # -- lookups ------------------------------------------------------------------------------
    def _bounded(self, text: str, limit: int, what: str) -> str:
        """Refuse over-long input before any work: bounded work per request."""
        if len(text) > limit:
            raise UserError(f"{what} too long: {len(text)} characters (limit {limit}, "
                            f"settings limits.max_{'question' if what == 'question' else what}"
                            "_chars)")
        return text

    def find_symbol(self, name: str) -> list[Chunk]:
        self._bounded(name, self.settings.limits.max_symbol_chars, "symbol")
        s = self.store
        idx = s.by_symbol.get(name) or s.by_symbol.get(name.split("::")[-1]) or \
            s.by_symbol_lower.get(name.lower(), [])
        if "::" in name:
            exact = [i for i in idx if s.records[i].qualified_name.endswith(name)]
            idx = exact or idx
        out = [s.records[i] for i in idx]
        return sorted(out, key=lambda c: (c.is_declaration, c.kind == "function_part", c.path))

    def _indexed_path(self, path: str) -> str:
        self._bounded(path, self.settings.limits.max_path_chars, "path")
        p = path.strip().replace("\\", "/")
        if not p:
            raise UserError("empty path")
        if p.startswith("/") or PurePosixPath(p).is_absolute():
            raise UserError(f"absolute paths are not allowed: {shorten(path)}")
        if ".." in PurePosixPath(p).parts:
            raise UserError(f"path outside the indexed repository: {shorten(path)}")
        while p.startswith("./"):  # not lstrip: it would eat the dot of ".github/..."
            p = p[2:]
        return p

    def get_code(self, path: str, start_line: int | None = None,
                 end_line: int | None = None, max_lines: int | None = None) -> CodeSlice:
        """Lines of an indexed file, numbered as the index numbers them (split at "\\n" only,
        so form feeds and other Unicode line breaks do not shift them). Without `end_line`,
        at most `max_lines` lines are returned (`truncated` says so)."""
        rel = self._indexed_path(path)
        if rel not in self.store.manifest.files:
            raise UserError(f"not an indexed file: {shorten(path)}")
        try:
            data = read_repo_file(self.root, rel, self.settings.collect.max_file_bytes)
            text = data.decode("utf-8")
        except RefusedFile as exc:
            raise UserError(f"cannot read {shorten(path)}: {exc.reason}") from None
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else "not UTF-8"
            raise UserError(f"cannot read {shorten(path)}: {why}") from None
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the newline that ends the last line does not start another
        lines = [ln[:-1] if ln.endswith("\r") else ln for ln in lines]
        total = len(lines)
        start = max(1, start_line or 1)
        end = min(total, end_line or total)
        if start > end and total:
            raise UserError(f"empty line range {start_line}-{end_line} for {shorten(path)} "
                            f"({total} lines)")
        truncated = False
        if end_line is None and max_lines is not None and end - start + 1 > max_lines:
            end, truncated = start + max_lines - 1, True
        return CodeSlice(path=rel, start_line=start, end_line=end, total_lines=total,
                         text="\n".join(lines[start - 1:end]), truncated=truncated)

    def file_summary(self, path: str) -> Chunk:
        rel = self._indexed_path(path)
        i = self.store.file_record_index(rel)
        if i is None:
            hits = self.store.by_basename.get(PurePosixPath(rel).name, [])
            if len(hits) == 1:
                i = self.store.file_record_index(hits[0])
        if i is None:
            raise UserError(f"not an indexed file: {shorten(path)}")
        return self.store.records[i]

    def module_summary(self, path: str) -> Chunk:
        rel = self._indexed_path(path).rstrip("/") or "."
        key = "" if rel == "." else rel
        i = self.store.modules.get(key) if key else self.store.modules.get(".")
        if i is None:
            i = self.store.modules.get(key)
        if i is None:
            raise UserError(f"not an indexed folder: {shorten(path)}")
        return self.store.records[i]

    def _symbol_nodes(self, symbol: str) -> list[str]:
        chunks = self.find_symbol(symbol)
        if not chunks:
            raise UserError(f"unknown symbol: {shorten(symbol)}")
        return [sym_node(c.id) for c in chunks if c.kind != "function_part"]

    def _neighbour(self, relation: str, node: str) -> GraphNeighbour:
        kind, ident = split_node(node)
        if kind == "sym":
            i = self.store.by_id.get(ident)
            if i is not None:
                c = self.store.records[i]
                return GraphNeighbour(relation=relation, id=node, name=c.qualified_name or c.name,
                                      path=c.path, kind=c.kind, start_line=c.start_line,
                                      end_line=c.end_line)
        return GraphNeighbour(relation=relation, id=node, name=ident, path=ident, kind=kind)

    def callers(self, symbol: str) -> list[GraphNeighbour]:
        out = []
        for node in self._symbol_nodes(symbol):
            out += [self._neighbour("called by", src) for typ, src in self.store.edges_in[node]
                    if typ == "call"]
        return _unique(out)

    def callees(self, symbol: str) -> list[GraphNeighbour]:
        out = []
        for node in self._symbol_nodes(symbol):
            out += [self._neighbour("calls", dst) for typ, dst in self.store.edges_out[node]
                    if typ == "call"]
        return _unique(out)

    def related(self, symbol_or_path: str) -> list[GraphNeighbour]:
        """Every graph neighbour of a symbol, file or folder, labelled by relation."""
        key = symbol_or_path.strip()
        if key.rstrip("/") in self.store.modules:
            nodes = [module_node(key.rstrip("/"))]
        elif self._indexed_path(key) in self.store.manifest.files:
            nodes = [file_node(self._indexed_path(key))]
        else:
            nodes = self._symbol_nodes(key)
        out = []
        for node in nodes:
            out += [self._neighbour(f"{typ} →", dst) for typ, dst in self.store.edges_out[node]]
            out += [self._neighbour(f"← {typ}", src) for typ, src in self.store.edges_in[node]]
        return _unique(out)

    def status(self) -> IndexStatus:
        """The manifest, and what changed in the repository since the build. Files are read
        with the same checks as collection: a FIFO, device or symlink out of the repository
        is reported under `refused_files`, never opened or hashed."""
        import hashlib

        m = self.store.manifest
        stale, missing, refused = [], [], {}
        for path, sha in m.files.items():
            try:
                data = read_repo_file(self.root, path, self.settings.collect.max_file_bytes)
            except RefusedFile as exc:
                refused[path] = exc.reason
                continue
            except (OSError, ValueError):
                missing.append(path)
                continue
            if hashlib.sha256(data).hexdigest() != sha:
                stale.append(path)
        return IndexStatus(name=m.name, path=str(self.store.path), root=m.root,
                           created_at=m.created_at, model_id=m.model_id, counts=m.counts,
                           stage_seconds=m.stage_seconds, stale_files=stale,
                           missing_files=missing, refused_files=refused)


def _unique(items: list[GraphNeighbour]) -> list[GraphNeighbour]:
    seen, out = set(), []
    for n in items:
        if (n.relation, n.id) not in seen:
            seen.add((n.relation, n.id))
            out.append(n)
    return out


def ask(question: str, index_dir: str | Path, k: int | None = None,
        settings: Settings | None = None) -> AskResult:
    return Engine.load(index_dir, settings).ask(question, k=k)
