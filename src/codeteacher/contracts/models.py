"""Data contracts shared by every stage, the core API and its shells.

Stages exchange these as JSON/JSONL files, so each model round-trips through
`model_dump(mode="json")` / `model_validate`. Paths are always repository-relative POSIX.
"""
from __future__ import annotations

from pathlib import PurePosixPath
from typing import Literal

from pydantic import BaseModel, Field

SCHEMA_VERSION = 1

Scope = Literal["src", "test", "example", "build", "docs", "generated", "other"]
Category = Literal["code", "doc", "build", "script"]

# Fortran source files, fixed and free form (compared lower-case: `.F90` is preprocessed
# free form). Collection, the settings' code extensions and the port rules share this list.
FORTRAN_EXT = (".f", ".for", ".ftn", ".f77", ".fpp", ".f90", ".f95", ".f03", ".f08")
FIXED_FORM_EXTENSIONS = {".f", ".for", ".ftn", ".f77", ".fpp"}


def is_fixed_form(path: str, text: str) -> bool:
    """Fixed form by extension, unless a statement starts in columns 1-5, which fixed form
    reserves for comment markers and labels (many `.f` files are written in free form).
    The Fortran parser rewrites such a file as free form; the port rules read its comments."""
    if PurePosixPath(path).suffix.lower() not in FIXED_FORM_EXTENSIONS:
        return False
    for line in text.split("\n"):
        if not line.strip() or line[0] in "cC*!#" or line.startswith("\t"):
            continue
        head = line[:5]
        if any(ch.isalpha() or ch in "&!" for ch in head) and not head.lstrip().startswith("!"):
            return False
    return True


# Chunk kinds. Code kinds come from the C++ parser, the rest from the text chunkers or the
# entity stage (entities are indexed as chunks of kind file/module/call_chain).
CODE_KINDS = (
    "function", "method", "constructor", "destructor", "operator", "function_part",
    "class", "struct", "union", "enum", "declaration", "namespace_block", "macro", "typedef",
)
TEXT_KINDS = ("doc_section", "build", "script")
ENTITY_KINDS = ("file", "module", "call_chain")


class FileRecord(BaseModel):
    """One collected file of the repository."""

    path: str
    language: str  # cpp | c | cuda | markdown | rst | text | cmake
    category: Category
    scope: Scope
    size: int
    sha256: str
    lines: int = 0


class CollectReport(BaseModel):
    """What the collect stage found and what it skipped (counted, with reasons)."""

    root: str
    files: list[FileRecord]
    skipped: dict[str, int] = Field(default_factory=dict)  # reason -> count
    skipped_examples: dict[str, list[str]] = Field(default_factory=dict)


class Chunk(BaseModel):
    """A retrievable unit: a code construct, a doc section, a build file part, or an entity."""

    id: str
    path: str
    kind: str
    start_line: int
    end_line: int
    name: str = ""
    qualified_name: str = ""
    namespace: str = ""
    class_name: str = ""  # owning class for members (also for out-of-line definitions)
    signature: str = ""
    comment: str = ""  # leading documentation comment, verbatim without markers
    text: str = ""
    language: str = ""
    scope: Scope = "other"
    parent_id: str | None = None  # split parts point to their whole; entity parts to file
    part: int | None = None
    parts: int | None = None
    heading_path: list[str] = Field(default_factory=list)  # doc sections
    calls: list[str] = Field(default_factory=list)  # callee names as written in the body
    bases: list[str] = Field(default_factory=list)  # base classes
    members: list[str] = Field(default_factory=list)  # member summary of a class
    template: str = ""  # template parameter list, if any
    is_declaration: bool = False  # prototype / forward declaration rather than definition
    file_sha: str = ""  # sha256 of the file the chunk came from (entities: of their sources)
    explanation: str = ""  # filled by the explanation stage (LLM), empty otherwise


class Edge(BaseModel):
    source: str  # node id: "file:<path>", "module:<dir>", "sym:<chunk id>"
    target: str
    type: Literal["include", "call", "owns", "inherits", "contains"]


class GraphNode(BaseModel):
    id: str
    type: Literal["file", "module", "symbol"]
    name: str
    path: str = ""
    kind: str = ""
    qualified_name: str = ""


class ProjectStructure(BaseModel):
    schema_version: int = SCHEMA_VERSION
    nodes: list[GraphNode]
    edges: list[Edge]
    counts: dict[str, int] = Field(default_factory=dict)
    unresolved_calls: int = 0
    unresolved_includes: int = 0


class Entity(BaseModel):
    """A higher-level unit (file, module, call chain) described from the code itself."""

    id: str  # "file:<path>", "module:<dir>", "chain:<root symbol id>"
    level: Literal["file", "module", "call_chain"]
    path: str  # file path or module directory
    title: str
    text: str
    members: list[str] = Field(default_factory=list)  # chunk/entity ids it covers
    source_hash: str = ""  # hash of everything the text was derived from
    start_line: int = 1
    end_line: int = 1

    def to_chunk(self, scope: Scope = "other") -> Chunk:
        return Chunk(
            id=self.id, path=self.path, kind=self.level, start_line=self.start_line,
            end_line=self.end_line, name=self.title, qualified_name=self.title,
            text=self.text, scope=scope, file_sha=self.source_hash,
        )


class Explanation(BaseModel):
    """An LLM explanation of one chunk or entity, cached by what produced it."""

    target_id: str
    mode: str  # prompt mode name
    text: str
    cache_key: str  # hash(content hash, prompt signature, model id)
    model: str = ""
    truncated: bool = False


class Manifest(BaseModel):
    schema_version: int = SCHEMA_VERSION
    chunker_version: str
    name: str
    root: str
    created_at: str
    model_id: str
    dim: int
    settings_signature: str
    files: dict[str, str]  # path -> sha256
    counts: dict[str, int] = Field(default_factory=dict)
    stage_seconds: dict[str, float] = Field(default_factory=dict)
    explanations: dict[str, str] = Field(default_factory=dict)  # mode -> prompt signature
    embedding: dict = Field(default_factory=dict)  # the EmbeddingSettings the vectors came from


# ---- answers --------------------------------------------------------------------------------

class Evidence(BaseModel):
    path: str
    start_line: int
    end_line: int
    symbol: str = ""
    kind: str = ""
    score: float = 0.0
    chunk_id: str = ""
    description: str = ""
    why: list[str] = Field(default_factory=list)
    # "class" in JSON: primary | expansion | supplementary
    evidence_class: str = Field(default="primary", serialization_alias="class")


class PaperLink(BaseModel):
    key: str
    title: str
    year: int | None = None
    doi: str | None = None
    url: str | None = None
    score: float = 0.0
    reasons: list[str] = Field(default_factory=list)
    attached_to: list[str] = Field(default_factory=list)  # evidence paths / chunk ids
    # what linked it: "citation" (the code or doc cites it) or the strongest content signal
    # ("concepts", "semantic", "full-text")
    signal: str = ""


class AskResult(BaseModel):
    question: str
    answer: str
    evidence: list[Evidence]
    papers: list[PaperLink] = Field(default_factory=list)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    intent: str = ""
    backend: str = "none"
    model: str = ""
    abstained: bool = False
    dropped_evidence: int = 0
    context: list[Evidence] = Field(default_factory=list)  # everything shown to the model
    tokens_in: int = 0
    tokens_out: int = 0
    # Who wrote the answer: "llm", "extractive" (backend none) or "fallback" (a model is
    # configured but did not answer; answer_note says why: low confidence, model missing, ...).
    answer_source: str = "extractive"
    answer_note: str = ""
    unsupported_names: list[str] = Field(default_factory=list)  # in the prose, not the context
    confidence: float | None = None  # from the retrieval evidence (answer/confidence.py)
    ttft_ms: float | None = None  # model's first token (streaming backends)

    def to_json_dict(self) -> dict:
        return self.model_dump(mode="json", by_alias=True, exclude={"context"})


class SearchHit(BaseModel):
    chunk: Chunk
    score: float
    why: list[str] = Field(default_factory=list)
    evidence_class: str = "primary"


class ParsedFile(BaseModel):
    """Output of a parser for one file: its chunks plus file-level facts for the graph."""

    path: str
    chunks: list[Chunk]
    includes: list[str] = Field(default_factory=list)  # include targets as written
    leading_comment: str = ""  # the file's top comment (licence banners excluded if possible)
    parse_errors: int = 0  # tree-sitter ERROR nodes seen (tolerated)
    # Constructs our parser failed on (their chunks are missing), and the first such failure;
    # the build report lists every file with failures, so a partial parse is never silent.
    failures: int = 0
    failure: str = ""
