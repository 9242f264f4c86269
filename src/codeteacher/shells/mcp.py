"""MCP server: the core API (codeteacher.api.Engine) as read-only MCP tools.

Every tool is a thin shell: validate arguments, pick the index, call the Engine, wrap the
result in a pydantic model (structured output). A UserError becomes an MCP tool error with
its message; nothing a client sends can take the server down.

Arguments are strict and bounded (shells/mcp_strict.py, limits settings): unknown keys and
coercions are refused, every text has a maximum length, errors are one bounded line, and each
call runs off the event loop under a time limit.

Indexes are loaded once and kept warm. Each index sits in an IndexSlot that notices a rebuilt
index (manifest.json replaced) and loads the new one *beside* the old one, then swaps the
reference under a lock; calls already running keep the Engine they started with.

No `from __future__ import annotations` here: the SDK builds input schemas from the tool
functions' annotations, which are defined inside build_server().
"""
import functools
import logging
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, Field

from ..api import Engine, GraphNeighbour, IndexStatus
from ..contracts.errors import UserError
from ..contracts.models import CODE_KINDS, ENTITY_KINDS, TEXT_KINDS, Chunk, PaperLink
from ..contracts.settings import Settings
from ..contracts.settings.limits import shorten
from ..contracts.settings.sources import off_machine
from ..retrieval.search import path_filter

log = logging.getLogger("codeteacher.mcp")

SNIPPET_LINES = 12  # lines of chunk text shown per search hit
SNIPPET_CHARS = 1200
CODE_MAX_LINES = 800  # get_code without a range returns at most this many lines
KNOWN_KINDS = (*CODE_KINDS, *TEXT_KINDS, *ENTITY_KINDS)
INSTRUCTIONS = (
    "Read-only access to indexed C/C++ codebases. Start with search_code or ask to find where "
    "something lives, then get_code to read exact lines (paths are repository-relative), "
    "find_symbol for definitions, callers/callees/related to walk the code graph, and "
    "file_summary/module_summary for overviews. Several indexes may be served: list_indexes "
    "names them; pass `index` to choose one (default: the first).")


# ---- warm, hot-reloadable indexes ----------------------------------------------------------

class _SerialEmbedder:
    """One embedder is shared per process, and Hugging Face fast tokenizers fail when called
    from several threads at once ("Already borrowed"); the SDK runs sync tools in worker
    threads, so query embedding is serialised (it is a few ms per query)."""

    _lock = threading.Lock()

    def __init__(self, inner):
        self._inner, self.model_id, self.dim = inner, inner.model_id, inner.dim

    def embed(self, texts, **kwargs):
        with self._lock:
            return self._inner.embed(texts, **kwargs)


class ServedEngine(Engine):
    @property
    def embedder(self):
        return _SerialEmbedder(Engine.embedder.fget(self))


def _manifest_key(index_dir: Path) -> tuple[int, int] | None:
    """Changes when an index is rebuilt: the swap installs a new manifest.json (new inode)."""
    try:
        st = (index_dir / "manifest.json").stat()
    except OSError:
        return None  # mid-swap or deleted: keep serving what is loaded
    return st.st_mtime_ns, st.st_ino


class IndexSlot:
    def __init__(self, index_dir: str | Path, settings: Settings):
        self.dir = Path(index_dir).expanduser().absolute()  # not resolved: a re-pointed link counts
        self.settings = settings
        self._reload_lock = threading.Lock()  # one reload at a time
        self._swap_lock = threading.Lock()
        self._failed_key = None
        self.reloads = 0
        self.last_reload_error = ""
        self._key = _manifest_key(self.dir)
        self._engine = self._load()
        self.loaded_at = time.time()
        self.name = self._engine.store.manifest.name  # fixed for the server's lifetime

    def _load(self) -> Engine:
        engine = ServedEngine.load(self.dir, self.settings)
        engine.embedder.embed(["warm up"])  # loads the model, checks the index's model id
        return engine

    def get(self) -> Engine:
        key = _manifest_key(self.dir)
        if key is None or key == self._key or key == self._failed_key:
            return self._engine
        if not self._reload_lock.acquire(blocking=False):
            return self._engine  # someone else is loading the new index; use the old one
        try:
            key = _manifest_key(self.dir)
            if key is None or key == self._key:
                return self._engine
            try:
                engine = self._load()  # fully built before anyone can see it
            except Exception as exc:  # noqa: BLE001 - a half-written index must not stop serving
                self._failed_key = key
                self.last_reload_error = f"{type(exc).__name__}: {exc}"
                log.warning("index %s changed but could not be reloaded: %s", self.dir, exc)
                return self._engine
            with self._swap_lock:
                self._engine, self._key = engine, key
                self.reloads += 1
                self.loaded_at = time.time()
                self.last_reload_error = ""
            log.info("index %s reloaded", self.name)
            return engine
        finally:
            self._reload_lock.release()


class Registry:
    """The indexes served, by manifest name; the first is the default. `settings` is one
    Settings for all, or a function giving each index folder its own (serve: the settings
    recorded in each index)."""

    def __init__(self, index_dirs: list[str | Path], settings, remote_allowed: bool = False):
        if not index_dirs:
            raise UserError("no index to serve (give --index DIR)")
        settings_for = settings if callable(settings) else (lambda _d: settings)
        self.remote_allowed = remote_allowed
        self.slots: dict[str, IndexSlot] = {}
        for d in index_dirs:
            slot = IndexSlot(d, settings_for(Path(d)))
            if slot.name in self.slots:
                raise UserError(f"two indexes are named '{slot.name}' ({self.slots[slot.name].dir}"
                                f" and {slot.dir}); rebuild one with --name")
            self.slots[slot.name] = slot
        self.default = next(iter(self.slots))
        self.settings = self.slots[self.default].settings  # server-wide: limits

    def slot(self, index: str | None) -> IndexSlot:
        if not index:
            return self.slots[self.default]
        slot = self.slots.get(index)
        if slot is None:
            raise UserError(f"unknown index '{index}'; served: {', '.join(self.slots)}")
        return slot

    def engine(self, index: str | None) -> tuple[str, Engine]:
        slot = self.slot(index)
        return slot.name, slot.get()


# ---- structured outputs --------------------------------------------------------------------

class Hit(BaseModel):
    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    score: float
    why: list[str]
    snippet: str
    chunk_id: str
    evidence_class: str


class SearchResult(BaseModel):
    index: str
    query: str
    hits: list[Hit]


class EvidenceItem(BaseModel):
    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    score: float
    description: str
    why: list[str]
    evidence_class: str
    chunk_id: str


class Answer(BaseModel):
    index: str
    question: str
    answer: str
    evidence: list[EvidenceItem]
    papers: list[PaperLink] = Field(default_factory=list)
    intent: str = ""
    backend: str = "none"
    model: str = ""
    abstained: bool = False
    timings_ms: dict[str, float] = Field(default_factory=dict)


class Symbol(BaseModel):
    path: str
    start_line: int
    end_line: int
    kind: str
    name: str
    qualified_name: str
    signature: str
    is_declaration: bool
    comment: str
    chunk_id: str


class SymbolMatches(BaseModel):
    index: str
    name: str
    matches: list[Symbol]


class Code(BaseModel):
    index: str
    path: str
    start_line: int
    end_line: int
    total_lines: int
    truncated: bool = Field(description="True when the file was cut at the line cap; ask for "
                            "a start_line/end_line range to read further.")
    text: str


class Summary(BaseModel):
    index: str
    path: str
    kind: str  # file | module
    title: str
    text: str
    explanation: str = ""
    start_line: int
    end_line: int


class Neighbours(BaseModel):
    index: str
    query: str
    neighbours: list[GraphNeighbour]


class ServedStatus(IndexStatus):
    index: str
    chunker_version: str
    settings_signature: str
    settings_source: str = Field(description="Where this index's settings were read from "
                                 "(a file, or 'defaults').")
    off_machine: list[str] = Field(default_factory=list, description="Settings in force that "
                                   "send code or secrets to another host (allowed at start-up "
                                   "with --allow-remote); empty when nothing leaves the machine.")
    files_by_scope: dict[str, int]
    chunks_by_kind: dict[str, int]
    loaded_at: float
    reloads: int
    last_reload_error: str = ""


class IndexInfo(BaseModel):
    name: str
    path: str
    root: str
    created_at: str
    files: int
    records: int
    default: bool
    reloads: int


class IndexList(BaseModel):
    default: str
    indexes: list[IndexInfo]


def _snippet(text: str) -> str:
    lines = text.splitlines()
    out = "\n".join(lines[:SNIPPET_LINES])[:SNIPPET_CHARS]
    return out + ("\n…" if len(lines) > SNIPPET_LINES or len(out) < len(text.strip()) else "")


def _symbol(c: Chunk) -> Symbol:
    return Symbol(path=c.path, start_line=c.start_line, end_line=c.end_line, kind=c.kind,
                  name=c.name, qualified_name=c.qualified_name, signature=c.signature,
                  is_declaration=c.is_declaration, comment=c.comment, chunk_id=c.id)


def _summary(index: str, c: Chunk) -> Summary:
    return Summary(index=index, path=c.path, kind=c.kind, title=c.name, text=c.text,
                   explanation=c.explanation, start_line=c.start_line, end_line=c.end_line)


# ---- the tools -----------------------------------------------------------------------------

def _guard(fn, max_chars: int = 400):
    """UserError → tool error with its message; anything else → a short internal error (the
    traceback goes to the server log). Either way the server keeps running."""
    from mcp.server.mcpserver.exceptions import ToolError

    from ..contracts.settings.limits import shorten

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ToolError:
            raise
        except UserError as exc:
            raise ToolError(shorten(str(exc), max_chars)) from None
        except Exception as exc:  # noqa: BLE001
            log.exception("tool %s failed", fn.__name__)
            raise ToolError(shorten(f"internal error: {type(exc).__name__}: {exc}", 200)) \
                from None
    return wrapper


def build_server(registry: Registry, log_level: str = "WARNING"):
    from mcp.types import ToolAnnotations

    from .. import __version__
    from .mcp_strict import BoundedServer, offloaded, strict_tool

    lim = registry.settings.limits
    tools = []

    def tool(title: str, doc: str | None = None):
        ann = ToolAnnotations(title=title, read_only_hint=True, destructive_hint=False,
                              idempotent_hint=True, open_world_hint=False)

        def deco(fn):
            body = offloaded(_guard(fn, lim.max_error_chars), lim.tool_timeout_s,
                             lim.tool_threads)
            tools.append(strict_tool(body, name=fn.__name__, title=title,
                                     description=doc or " ".join((fn.__doc__ or "").split()),
                                     annotations=ann, max_error_chars=lim.max_error_chars))
            return fn
        return deco

    IndexArg = Annotated[str | None, Field(
        max_length=lim.max_symbol_chars,
        description="Name of the index to use (see list_indexes). Default: the first index "
                    "served.")]
    KArg = Annotated[int | None, Field(ge=1, le=100, description="How many results (default "
                                       "from the server's settings).")]
    SymbolArg = Annotated[str, Field(min_length=1, max_length=lim.max_symbol_chars,
                                     description="A function, method, class or other symbol "
                                     "name; qualified (ns::Class::method) or plain.")]
    PathArg = Annotated[str, Field(min_length=1, max_length=lim.max_path_chars,
                                   description="Repository-relative path, as shown in search "
                                   "results (no absolute paths, no '..').")]
    TextArg = Annotated[str, Field(min_length=1, max_length=lim.max_question_chars)]
    ListArg = Annotated[list[Annotated[str, Field(max_length=lim.max_path_chars)]] | None,
                        Field(max_length=lim.max_list_items)]

    @tool("Ask about the code")
    def ask(question: Annotated[TextArg, Field(description="A question about the codebase in "
                                               "plain language.")],
            index: IndexArg = None, k: KArg = None) -> Answer:
        """Answer a question about an indexed codebase from retrieved evidence: an answer plus
        the evidence (file, line range, symbol, why it was chosen) it rests on."""
        name, eng = registry.engine(index)
        r = eng.ask(question, k=k)
        ev = [EvidenceItem(path=e.path, start_line=e.start_line, end_line=e.end_line,
                           symbol=e.symbol, kind=e.kind, score=e.score,
                           description=e.description, why=e.why,
                           evidence_class=e.evidence_class, chunk_id=e.chunk_id)
              for e in r.evidence]
        return Answer(index=name, question=question, answer=r.answer, evidence=ev,
                      papers=r.papers, intent=r.intent, backend=r.backend, model=r.model,
                      abstained=r.abstained, timings_ms=r.timings_ms)

    @tool("Search code")
    def search_code(query: Annotated[TextArg, Field(description="What to look for: words, "
                                                    "identifiers or a question.")],
                    index: IndexArg = None, k: KArg = None,
                    kinds: Annotated[ListArg, Field(
                        description=f"Only these chunk kinds ({', '.join(KNOWN_KINDS)}).")] = None,
                    paths: Annotated[ListArg, Field(
                        description="Only files under these repository-relative path "
                                    "prefixes.")] = None) -> SearchResult:
        """Hybrid (embedding + BM25 + code graph) search over the indexed code, docs and build
        files. Returns ranked chunks with path, line range, symbol, kind, score, the reasons it
        ranked (why) and a snippet."""
        bad = sorted(set(kinds or []) - set(KNOWN_KINDS))
        if bad:
            raise UserError(f"unknown kind(s) {shorten(', '.join(bad))}; known: "
                            f"{', '.join(KNOWN_KINDS)}")
        name, eng = registry.engine(index)
        hits = eng.search(query, k=k, kinds=kinds or None, paths=paths or None)
        # The filters are a promise to the client: enforce them on what comes back, too.
        inside = path_filter(paths) if paths else None
        hits = [h for h in hits if (not kinds or h.chunk.kind in kinds)
                and (inside is None or inside(h.chunk.path))]
        return SearchResult(index=name, query=query, hits=[
            Hit(path=h.chunk.path, start_line=h.chunk.start_line, end_line=h.chunk.end_line,
                symbol=h.chunk.qualified_name or h.chunk.name, kind=h.chunk.kind, score=h.score,
                why=h.why, snippet=_snippet(h.chunk.text), chunk_id=h.chunk.id,
                evidence_class=h.evidence_class) for h in hits])

    @tool("Find a symbol")
    def find_symbol(name: SymbolArg, index: IndexArg = None) -> SymbolMatches:
        """Definitions and declarations of a symbol (definitions first): path, line range,
        kind, signature and doc comment. Empty when nothing matches."""
        iname, eng = registry.engine(index)
        return SymbolMatches(index=iname, name=name,
                             matches=[_symbol(c) for c in eng.find_symbol(name)])

    @tool("Read code", doc="Exact source lines of an indexed file. Only files in the index can "
          "be read; paths are repository-relative. Without end_line, long files are cut at "
          f"{CODE_MAX_LINES} lines (truncated=true); ask for a range to read further.")
    def get_code(path: PathArg,
                 start_line: Annotated[int | None, Field(ge=1, description="First line "
                                                         "(1-based, default 1).")] = None,
                 end_line: Annotated[int | None, Field(ge=1, description="Last line, inclusive "
                                                       "(default: end of file).")] = None,
                 index: IndexArg = None) -> Code:
        iname, eng = registry.engine(index)
        s = eng.get_code(path, start_line, end_line, max_lines=CODE_MAX_LINES)
        return Code(index=iname, path=s.path, start_line=s.start_line, end_line=s.end_line,
                    total_lines=s.total_lines, truncated=s.truncated, text=s.text)

    @tool("Summarise a file")
    def file_summary(path: PathArg, index: IndexArg = None) -> Summary:
        """What a file contains: its header comment, types, functions, includes (and an LLM
        explanation when the index has one). A unique file name is accepted too."""
        iname, eng = registry.engine(index)
        return _summary(iname, eng.file_summary(path))

    @tool("Summarise a folder")
    def module_summary(path: Annotated[str, Field(min_length=1, max_length=lim.max_path_chars,
                                                  description="Repository-relative folder "
                                                  "('.' for the root).")],
                       index: IndexArg = None) -> Summary:
        """What a folder (module) contains: its files, main types and functions."""
        iname, eng = registry.engine(index)
        return _summary(iname, eng.module_summary(path))

    @tool("Callers of a function")
    def callers(symbol: SymbolArg, index: IndexArg = None) -> Neighbours:
        """Functions and methods that call the given symbol (from the static call graph)."""
        iname, eng = registry.engine(index)
        return Neighbours(index=iname, query=symbol, neighbours=eng.callers(symbol))

    @tool("Callees of a function")
    def callees(symbol: SymbolArg, index: IndexArg = None) -> Neighbours:
        """Functions and methods the given symbol calls (from the static call graph)."""
        iname, eng = registry.engine(index)
        return Neighbours(index=iname, query=symbol, neighbours=eng.callees(symbol))

    @tool("Related code")
    def related(symbol_or_path: Annotated[str, Field(min_length=1,
                                                     max_length=lim.max_path_chars,
                                                     description="A symbol, a repository-"
                                                     "relative file or a folder.")],
                index: IndexArg = None) -> Neighbours:
        """Every graph neighbour of a symbol, file or folder, labelled by relation (calls,
        owns, include, inherits, contains; '→' outgoing, '←' incoming)."""
        iname, eng = registry.engine(index)
        return Neighbours(index=iname, query=symbol_or_path,
                          neighbours=eng.related(symbol_or_path))

    @tool("Index status")
    def index_status(index: IndexArg = None) -> ServedStatus:
        """An index's manifest (name, repository root, build time, model), its counts, and
        staleness: files changed or missing in the repository since the index was built."""
        slot = registry.slot(index)
        eng = slot.get()
        st, m = eng.status(), eng.store.manifest
        return ServedStatus(
            **st.model_dump(), index=slot.name, chunker_version=m.chunker_version,
            settings_signature=m.settings_signature,
            settings_source=eng.settings.source or "defaults",
            off_machine=off_machine(eng.settings, stages=("answers",)),
            files_by_scope=dict(Counter(r.scope for r in eng.records if r.kind == "file")),
            chunks_by_kind=dict(Counter(r.kind for r in eng.records)),
            loaded_at=slot.loaded_at, reloads=slot.reloads,
            last_reload_error=slot.last_reload_error)

    @tool("List indexes")
    def list_indexes() -> IndexList:
        """The indexes this server serves, by name; the default one is marked."""
        out = []
        for name, slot in registry.slots.items():
            m = slot.get().store.manifest
            out.append(IndexInfo(name=name, path=str(slot.dir), root=m.root,
                                 created_at=m.created_at, files=len(m.files),
                                 records=int(m.counts.get("records", 0)),
                                 default=name == registry.default, reloads=slot.reloads))
        return IndexList(default=registry.default, indexes=out)

    _register_paper_tools(tool, registry, lim)
    mcp = BoundedServer("codeteacher", version=__version__, instructions=INSTRUCTIONS,
                        log_level=log_level.upper(), tools=tools)
    mcp.max_error_chars = lim.max_error_chars
    return mcp


# ---- paper tools (paper links feature) -----------------------------------------------------
# LEAD: paper tools live here. They are registered only when codeteacher.papers provides the
# plain functions used below; adjust the calls if that module's API changes.

class PaperHit(BaseModel):
    key: str
    title: str
    year: int | None = None
    doi: str | None = None
    arxiv: str | None = None
    first_author: str = ""
    venue: str = ""
    score: float = 0.0


class PaperLinks(BaseModel):
    index: str
    target: str
    papers: list[PaperLink]


class PaperHits(BaseModel):
    query: str
    papers: list[PaperHit]


def _register_paper_tools(tool, registry: Registry, lim) -> list[str]:
    from ..papers.library import Library
    from ..papers.linking import link_target
    from ..papers.model import PaperRecord

    def library_of(index: str | None) -> Path:
        """The index's paper library: from its settings (an explicit file's path resolves
        against that file, the recorded one is absolute, a default lies beside the index)."""
        return Path(registry.slot(index).settings.papers.library).expanduser()

    IndexArg = Annotated[str | None, Field(max_length=lim.max_symbol_chars, description="Index "
                                           "whose paper library is used (default: the first).")]
    KArg = Annotated[int | None, Field(ge=1, le=100, description="How many results.")]

    @tool("Papers for code")
    def link_papers_to_code(path_or_symbol: Annotated[str, Field(
                                min_length=1, max_length=lim.max_path_chars,
                                description="A repository-relative file or a symbol name.")],
                            index: IndexArg = None, k: KArg = None) -> PaperLinks:
        """Scientific papers linked to a file or symbol (cited in it, or matching its topic),
        with scores and reasons."""
        slot = registry.slot(index)
        eng = slot.get()
        links = link_target(eng.store.path, path_or_symbol, k=k or 5, settings=eng.settings)
        return PaperLinks(index=slot.name, target=path_or_symbol, papers=links)

    @tool("Search papers")
    def search_papers(query: Annotated[str, Field(min_length=1,
                                                  max_length=lim.max_question_chars,
                                                  description="Words, a title, a DOI or an "
                                                  "arXiv id.")],
                      k: KArg = None, index: IndexArg = None) -> PaperHits:
        """Full-text search over the paper library (titles, abstracts, keywords, authors)."""
        with Library.open(library_of(index)) as lib:
            hits = lib.search(query, k=k or 10)
        return PaperHits(query=query, papers=[
            PaperHit(**r.summary(), score=min(s, 1e9)) for r, s in hits])

    @tool("Paper details")
    def paper_details(ref: Annotated[str, Field(min_length=1, max_length=lim.max_symbol_chars,
                                                description="A paper key, DOI or arXiv id.")],
                      index: IndexArg = None) -> PaperRecord:
        """The full record of one paper: title, authors, year, venue, identifiers, abstract."""
        library = library_of(index)
        with Library.open(library) as lib:
            rec = lib.get(ref)
        if rec is None:
            raise UserError(f"no paper '{shorten(ref)}' in the library {library}")
        return rec

    return ["link_papers_to_code", "search_papers", "paper_details"]
