"""Runtime settings: every tunable lives in `runtime_settings.json`, validated here.

Each section is a pydantic model with `extra="forbid"`, so an unknown or misspelled key is an
error that names it. Settings are passed explicitly (no globals). `index_signature()` hashes the
sections that change what an index contains; it is stored in the manifest.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import UserError
from .evaluation import EvalSettings
from .generation import GenerationSettings
from .papers import PaperSettings
from .retrieval import (
    ContextFilterSettings,
    CrossEncoderSettings,
    ExpansionSettings,
    RerankSettings,
    RetrievalSettings,
    RoutingSettings,
)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CollectSettings(Section):
    code_extensions: list[str] = Field(
        default=[".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".inl", ".tpp",
                 ".cu", ".cuh", ".ipp", ".tcc"],
        description="Extensions parsed as C/C++/CUDA.")
    doc_extensions: list[str] = Field(
        default=[".md", ".markdown", ".rst", ".txt"], description="Extensions chunked as docs.")
    doc_extensionless: list[str] = Field(
        default=["README", "INSTALL", "INSTALLATION", "TUNING", "CHANGELOG", "CHANGES", "NEWS",
                 "AUTHORS", "CONTRIBUTING", "NOTES", "TODO", "USAGE", "BUILDING", "HACKING"],
        description="Extensionless file names (case-insensitive) indexed as plain-text docs.")
    build_names: list[str] = Field(
        default=["CMakeLists.txt", "Makefile", "meson.build", "CMakePresets.json",
                 "CMakeUserPresets.json"],
        description="Build files indexed by exact name.")
    build_extensions: list[str] = Field(default=[".cmake"], description="Build file extensions.")
    script_extensions: list[str] = Field(
        default=[".py", ".sh", ".bash", ".pl", ".jl", ".m", ".yml", ".yaml"],
        description="Scripts and configuration that ship with the code (tools, CI, analysis); "
                    "indexed as line windows so questions about them can be answered.")
    exclude: list[str] = Field(
        default=[".git/", "build/", "_build/", "node_modules/", ".venv/", "third_party/build/"],
        description="gitignore-style patterns excluded in addition to .gitignore files.")
    respect_gitignore: bool = Field(default=True, description="Honour .gitignore files.")
    max_file_bytes: int = Field(default=1_500_000, description="Larger files are skipped.")
    follow_symlinks: bool = Field(default=False, description="Follow symlinked dirs (loop-safe).")


class ChunkSettings(Section):
    max_chunk_lines: int = Field(default=120, description="Functions longer than this are split "
                                 "at statement boundaries into parts linked to the whole.")
    max_doc_chars: int = Field(default=2400, description="Doc sections longer than this are split.")
    build_window_lines: int = Field(default=80, description="Build files are cut in windows.")
    header_declarations: bool = Field(default=True,
                                      description="Index prototypes found in headers.")
    min_chunk_chars: int = Field(default=12, description="Smaller chunks are dropped.")


class EmbeddingSettings(Section):
    model: str = Field(default="packaged:all-MiniLM-L6-v2",
                       description="'packaged:all-MiniLM-L6-v2' (the PyPI-shipped model), a "
                       "sentence-transformers name available offline, or a local path.")
    max_seq_length: int = Field(default=128, description="Tokens per embedded text: the "
                                "structured header and the first lines of code carry the signal; "
                                "128 halves the cost of 256 at equal benchmark recall.")
    batch_size: int = Field(default=64)
    device: str = Field(default="cpu", description="cpu | cuda | auto")
    max_code_chars: int = Field(default=1600, description="Code characters in the embedded text "
                                "after the structured header (the model truncates anyway).")
    quantize: str = Field(default="auto", description="'auto' = bf16 on CPUs with AMX, else "
                          "float32 (the resolved value is recorded in the index); "
                          "'int8' quantizes the model's linear "
                          "layers dynamically (CPU): ~1.5x faster but vectors drift (cosine "
                          "~0.9 to float32); "
                          "'none' keeps float32; 'bf16' (torch) runs in bfloat16: ~3.5x fewer "
                          "CPU-seconds on CPUs with AMX (Xeon 4th gen+) at cosine >= 0.999 to "
                          "float32, no faster without AMX, ~3x slower where bf16 is emulated.")
    backend: str = Field(default="torch", description="'torch' (sentence-transformers) or "
                         "'onnx' (ONNX Runtime, CPU; needs the [onnx] extra; exports the model "
                         "once into ~/.cache/codeteacher/onnx, or $CODETEACHER_CACHE_DIR/onnx); "
                         "with 'onnx', 'int8' quantizes per channel (cosine ~0.99 to float32).")
    skip_kinds: list[str] = Field(default=["declaration", "function_part"],
                                  description="Kinds not embedded (zero vector): prototypes and "
                                  "parts of long functions whose definition / whole function is "
                                  "embedded already. BM25 and exact lookups still find them.")


class Settings(Section):
    collect: CollectSettings = Field(default_factory=CollectSettings)
    chunking: ChunkSettings = Field(default_factory=ChunkSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    routing: RoutingSettings = Field(default_factory=RoutingSettings)
    rerank: RerankSettings = Field(default_factory=RerankSettings)
    expansion: ExpansionSettings = Field(default_factory=ExpansionSettings)
    context_filter: ContextFilterSettings = Field(default_factory=ContextFilterSettings)
    cross_encoder: CrossEncoderSettings = Field(default_factory=CrossEncoderSettings)
    papers: PaperSettings = Field(default_factory=PaperSettings)
    generation: GenerationSettings = Field(default_factory=GenerationSettings)
    evaluation: EvalSettings = Field(default_factory=EvalSettings)

    def index_signature(self) -> str:
        """Hash of the settings that change what an index holds."""
        relevant = {k: getattr(self, k).model_dump(mode="json")
                    for k in ("collect", "chunking", "embedding")}
        return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]


DEFAULT_SETTINGS_FILE = "runtime_settings.json"


def find_settings_file(explicit: str | Path | None = None) -> Path | None:
    """The explicit file, else $CODETEACHER_SETTINGS, else ./runtime_settings.json, else none."""
    import os

    if explicit:
        return Path(explicit)
    env = os.environ.get("CODETEACHER_SETTINGS")
    if env:
        return Path(env)
    local = Path.cwd() / DEFAULT_SETTINGS_FILE
    return local if local.is_file() else None


def _format_error(err: ValidationError, source: str) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"])
    if first["type"] == "extra_forbidden":
        return f"{source}: unknown setting '{loc}'"
    return f"{source}: invalid setting '{loc}': {first['msg']}"


def load_settings(path: str | Path | None = None) -> Settings:
    """Load and validate settings; a bad file raises UserError with a one-line message."""
    file = find_settings_file(path)
    if file is None:
        return Settings()
    try:
        data = json.loads(Path(file).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"settings file not found: {file}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{file}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise UserError(f"{file}: top level must be a JSON object")
    data.pop("$comment", None)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise UserError(_format_error(exc, str(file))) from None
