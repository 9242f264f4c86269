"""Runtime settings: every tunable lives in `runtime_settings.json`, validated here.

Each section is a pydantic model with `extra="forbid"`, so an unknown or misspelled key is an
error that names it. Settings are passed explicitly (no globals). `index_signature()` hashes the
sections that change what an index contains; it is stored in the manifest.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from ..errors import UserError
from ..models import FORTRAN_EXT
from .evaluation import EvalSettings
from .generation import GenerationSettings
from .limits import LimitSettings
from .papers import PaperSettings
from .retrieval import (
    ContextFilterSettings,
    CrossEncoderSettings,
    ExpansionSettings,
    Regex,
    RerankSettings,
    RetrievalSettings,
    RoutingSettings,
)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CollectSettings(Section):
    code_extensions: list[str] = Field(
        default=[".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx", ".inl", ".tpp",
                 ".cu", ".cuh", ".hip", ".ipp", ".tcc", ".icc", ".txx", ".ixx", ".cppm",
                 ".c++", ".h++", ".i",
                 *FORTRAN_EXT],
        description=("Extensions parsed as code (compared lower-case): C/C++/CUDA by "
                     "tree-sitter-cpp, Fortran (fixed and free form, either case) by "
                     "tree-sitter-fortran. The inline-implementation files that a header "
                     "includes (.icc, .txx, .i/.I) and C++ module units (.ixx, .cppm) are C++ "
                     "code, not data windows."))
    doc_extensions: list[str] = Field(
        default=[".md", ".markdown", ".rst", ".txt", ".tex"], description=(
            "Extensions chunked as docs (a LaTeX manual is split at its sectioning commands)."))
    doc_extensionless: list[str] = Field(
        default=["README", "INSTALL", "INSTALLATION", "TUNING", "CHANGELOG", "CHANGES", "NEWS",
                 "AUTHORS", "CONTRIBUTING", "NOTES", "TODO", "USAGE", "BUILDING", "HACKING"],
        description="Extensionless file names (case-insensitive) indexed as plain-text docs.")
    build_names: list[str] = Field(
        default=["CMakeLists.txt", "Makefile", "makefile", "meson.build", "CMakePresets.json",
                 "CMakeUserPresets.json", "configure.ac", "configure.in"],
        description="Build files indexed by exact name (Autoconf's configure.ac is a build "
                    "file, not data: its extension names no format of the repository's own).")
    build_extensions: list[str] = Field(default=[".cmake", ".mk"],
                                        description="Build file extensions.")
    build_name_prefixes: list[str] = Field(
        default=["Makefile.", "makefile.", "GNUmakefile"],
        description="Build files by name prefix: per-machine or per-compiler make files "
                    "(Makefile.intel, Makefile.openmpi) are build files like Makefile.")
    script_extensions: list[str] = Field(
        default=[".py", ".sh", ".bash", ".pl", ".jl", ".m", ".yml", ".yaml"],
        description="Scripts and configuration that ship with the code (tools, CI, analysis); "
                    "indexed as line windows so questions about them can be answered.")
    build_script_pattern: Regex = Field(
        default=r"^(build|configure|config|install|setup|bootstrap|cmake)([_.-]|$)"
                r"|^(compile|make)$|[_.-](build|configure|config|install|setup|bootstrap|"
                r"compile|cmake|make)$|conf(ig(ure)?)?$",
        description="A program script (not YAML/JSON) whose lower-case file stem matches is a "
                    "build file by purpose (build.sh, configure, cmake_cuda.sh, xyzconf.py: a "
                    "script that configures or drives the build), scope 'build'; in test, "
                    "example and doc folders the folder wins. '' = none.")
    build_script_languages: list[str] = Field(
        default=["sh", "bash", "zsh", "csh", "tcsh", "ksh", "python", "py", "perl", "pl"],
        description="Script languages (extension or shebang program) that can be build "
                    "scripts by build_script_pattern; CI YAML is workflow, not a build file.")
    ci_pattern: Regex = Field(
        default=r"(^|/)\.github/workflows/|(^|/)\.gitlab-ci\.ya?ml$|(^|/)\.gitlab/|"
                r"(^|/)\.travis\.ya?ml$|(^|/)\.circleci/|(^|/)Jenkinsfile[^/]*$|"
                r"(^|/)azure-pipelines\.ya?ml$|(^|/)appveyor\.ya?ml$|(^|/)\.buildkite/|"
                r"(^|/)\.cirrus\.ya?ml$|^\.?ci/",
        description="Paths (relative, searched) of continuous-integration configuration: "
                    "GitHub workflows, GitLab CI, Travis, CircleCI, Jenkins, Azure Pipelines, "
                    "AppVeyor, Buildkite, Cirrus, a top-level ci/ or .ci/ folder. What they "
                    "hold builds and runs the tests, so they are scope 'test' (a build file "
                    "there stays 'build', a document 'docs'). '' = none.")
    exclude: list[str] = Field(
        default=[".git/", "_build/", "node_modules/", ".venv/", "third_party/build/"],
        description="gitignore-style patterns excluded in addition to .gitignore files. "
                    "Version-control folders (.git, .svn, .hg, ...) and CMake build trees (a "
                    "folder with CMakeCache.txt) are always left out; a build/ folder without "
                    "one holds the project's own build scripts and is indexed.")
    respect_gitignore: bool = Field(default=True, description="Honour .gitignore files.")
    max_file_bytes: int = Field(default=1_500_000, description="Larger files are skipped.")
    follow_symlinks: bool = Field(default=False, description="Follow symlinked dirs (loop-safe).")
    index_other_text: bool = Field(default=True, description="Index every other text file "
                                   "under the size limit too (templates, input decks, licences, "
                                   "CI and container files): text is recognised by content (no "
                                   "NUL byte, valid UTF-8), not by a list of names.")
    make_min_share: float = Field(default=0.7, ge=0.0, description="An unrecognised text "
                                  "file whose non-comment lines are make syntax at least this "
                                  "often (assignments, rules and recipes, directives), with "
                                  "one line only make writes ($(NAME), $@, ifeq, vpath), is a "
                                  "build file: make.inc.gcc, flags.makefile, make_targets. "
                                  "Without the make-only line, key = value lines are a "
                                  "parameter file. > 1 = off.")
    make_name_pattern: Regex = Field(default=r"^(gnu)?make(file)?([._]|$)", description=(
        "Lower-case file names that say make (make.inc.x, Make.Linux, make_targets, "
        "Makefile_mpi): with make syntax (make_min_share) they are build files even when no "
        "line is make's alone. Not 'makenek': one word. '' = none."))
    prose_min_share: float = Field(default=0.5, ge=0.0, le=1.0, description="An unrecognised "
                                   "text file whose non-empty lines read as prose at least this "
                                   "often is chunked as a document (sections); otherwise as a "
                                   "configuration or data file (line windows).")
    prose_min_words: int = Field(default=5, ge=1, description="Words a line needs (and mostly "
                                 "letters) to count as prose in that test.")
    generated_marker: Regex = Field(
        default=r"\bgenerated (automatically )?by (gnu )?(autoconf|automake|aclocal|libtool|"
                r"swig|protoc|the protocol buffer compiler|bison|flex|yacc|cython|f2py|"
                r"doxygen)\b|\bcode generated\b.*\bdo not edit\b|@generated\b",
        description="A tool's note in a file's first lines (regex over their lower-case text) "
                    "that it wrote the file: a generated configure script, Makefile.in or "
                    "lock file gets scope 'generated' (ranked down by rerank.weights.generated). "
                    "'' = none.")
    generated_head_lines: int = Field(default=5, ge=1, description="First lines of a file "
                                      "searched for generated_marker (tools write it at the top).")


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
    batch_size: int = Field(default=64, description="Texts embedded per model call (memory vs. "
                            "per-call overhead; results do not depend on it).")
    device: str = Field(default="cpu", description="cpu | cuda | auto")
    max_code_chars: int = Field(default=1600, description="Code characters in the embedded text "
                                "after the structured header (the model truncates anyway).")
    quantize: str = Field(default="auto", description="'auto' = bf16 on CPUs with AMX, else "
                          "float32 (the resolved value is recorded in the index; ONNX int8 "
                          "halves the CPU seconds on CPUs with VNNI but lost recall on five of "
                          "17 question sets, so it is never chosen for you); "
                          "'int8' quantizes the model's linear "
                          "layers dynamically (CPU): ~1.5x faster but vectors drift (cosine "
                          "~0.9 to float32); "
                          "'none' keeps float32; 'bf16' (torch) runs in bfloat16: ~3.5x fewer "
                          "CPU-seconds on CPUs with AMX (Xeon 4th gen+) at cosine >= 0.999 to "
                          "float32, no faster without AMX, ~3x slower where bf16 is emulated.")
    backend: str = Field(default="auto", description="Ingest backend. 'auto' = torch where the "
                         "CPU has AMX (bf16 is cheapest there) or on a GPU, else ONNX Runtime "
                         "float32 when installed (~1.5x the texts/s of torch on AVX2/AVX-512 CPUs; "
                         "the resolved value is recorded in the index); 'torch' "
                         "(sentence-transformers) or 'onnx' (ONNX Runtime, CPU; exports the model "
                         "once into ~/.cache/codeteacher/onnx, or $CODETEACHER_CACHE_DIR/onnx); "
                         "with 'onnx', 'int8' quantizes per channel (cosine ~0.99 to float32).")
    query_backend: str = Field(default="auto", description="Backend that embeds questions for "
                               "float32/bf16 indexes, whatever built them (their vectors agree "
                               "at cosine >= 0.999). 'auto' = ONNX Runtime when installed: a "
                               "query then imports no torch (seconds saved per cold `ask`); "
                               "'torch' | 'onnx'. int8 indexes always use their own recipe.")
    skip_kinds: list[str] = Field(default=["declaration", "function_part", "module"],
                                  description="Kinds not embedded (zero vector): prototypes and "
                                  "parts of long functions whose definition / whole function is "
                                  "embedded already; folder summaries, which folder-named lookups "
                                  "and BM25 find (their vectors changed no recall, measured). "
                                  "BM25 and exact lookups still find them all.")


class Settings(Section):
    collect: CollectSettings = Field(default_factory=CollectSettings,
                                     description="Which files of a repository are indexed.")
    chunking: ChunkSettings = Field(default_factory=ChunkSettings,
                                    description="How files are cut into chunks.")
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings,
                                         description="The embedding model and how it runs.")
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings,
                                         description="Candidate retrieval, fusion and selection.")
    routing: RoutingSettings = Field(default_factory=RoutingSettings,
                                     description="Question intent and requested entity types.")
    rerank: RerankSettings = Field(default_factory=RerankSettings,
                                   description="Metadata reranking of the fused candidates.")
    expansion: ExpansionSettings = Field(default_factory=ExpansionSettings,
                                         description="Graph neighbours added to the top results.")
    context_filter: ContextFilterSettings = Field(
        default_factory=ContextFilterSettings,
        description="Dropping weak chunks that a stronger selected chunk already carries.")
    cross_encoder: CrossEncoderSettings = Field(default_factory=CrossEncoderSettings,
                                                description="The optional cross-encoder rerank.")
    papers: PaperSettings = Field(default_factory=PaperSettings,
                                  description="The paper library and code-paper links.")
    generation: GenerationSettings = Field(default_factory=GenerationSettings,
                                           description="LLM backends, prompts and budgets.")
    evaluation: EvalSettings = Field(default_factory=EvalSettings,
                                     description="Benchmark runs, scoring and judging.")
    limits: LimitSettings = Field(default_factory=LimitSettings,
                                  description="Bounds on every request: text lengths, time per "
                                  "call, worker threads, error size, shutdown grace.")
    # Where these settings were read from ("" = built-in defaults); shown by index_status.
    _source: str = PrivateAttr(default="")

    @property
    def source(self) -> str:
        return self._source

    @model_validator(mode="after")
    def _profiles_exist(self) -> "Settings":
        """Every expansion profile routing names exists: an unknown one would otherwise fall
        back silently to some other profile (or to no expansion at all)."""
        known = self.expansion.profiles
        uses = {"routing.default_profile": self.routing.default_profile}
        uses.update({f"routing.intents.{k}.profile": r.profile
                     for k, r in self.routing.intents.items()})
        for where, name in uses.items():
            if name not in known:
                raise PydanticCustomError(
                    "unknown_profile", "unknown expansion profile '{name}' (expansion.profiles "
                    "has {known})", {"where": where, "name": name, "known": ", ".join(known)})
        return self

    def index_signature(self) -> str:
        """Hash of the settings that change what an index holds."""
        # (query_backend only changes how questions are embedded, not what the index holds)
        relevant = {k: getattr(self, k).model_dump(mode="json", exclude={"query_backend"}
                                                   if k == "embedding" else None)
                    for k in ("collect", "chunking", "embedding")}
        return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]


DEFAULT_SETTINGS_FILE = "runtime_settings.json"


def find_settings_file(explicit: str | Path | None = None, cwd: bool = True) -> Path | None:
    """The explicit file, else $CODETEACHER_SETTINGS, else ./runtime_settings.json (only when
    `cwd`; `serve` passes False), else the user's config file, else none."""
    import os

    from .sources import user_config_file

    if explicit:
        return Path(explicit)
    env = os.environ.get("CODETEACHER_SETTINGS")
    if env:
        return Path(env)
    local = Path.cwd() / DEFAULT_SETTINGS_FILE
    if cwd and local.is_file():
        return local
    user = user_config_file()
    return user if user.is_file() else None


def _format_error(err: ValidationError, source: str) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or (first.get("ctx") or {}).get("where", "")
    if first["type"] == "extra_forbidden":
        return f"{source}: unknown setting '{loc}'"
    return f"{source}: invalid setting '{loc}': {first['msg']}"


def load_settings(path: str | Path | None = None, cwd: bool = True) -> Settings:
    """Load and validate settings; a bad file raises UserError with a one-line message.
    Relative paths written in the file resolve against the file's folder."""
    file = find_settings_file(path, cwd=cwd)
    if file is None:
        return Settings()
    return read_settings_file(Path(file))


def read_settings_file(file: Path, resolve: bool = True) -> Settings:
    """One settings file; with `resolve`, its relative paths are made absolute against its
    folder (the index's recorded settings are read as written)."""
    from .sources import resolve_paths

    try:
        if file.exists() and not file.is_file():  # a FIFO or device would block the read
            raise UserError(f"settings file is not a regular file: {file}")
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"settings file not found: {file}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"{file}: not valid JSON ({str(exc)[:120]})") from None
    except OSError as exc:
        raise UserError(f"cannot read settings file {file}: {exc.strerror}") from None
    if not isinstance(data, dict):
        raise UserError(f"{file}: top level must be a JSON object")
    data.pop("$comment", None)
    try:
        if resolve:
            data = resolve_paths(data, file.absolute().parent)
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise UserError(_format_error(exc, str(file))) from None
    settings._source = str(file.absolute())
    return settings
