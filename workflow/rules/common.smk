# Config validation and helpers shared by the rules (functions only: the linter wants rules and
# functions in separate files). Every check here runs before any job is scheduled or submitted,
# and a problem ends Snakemake with one line: "error: <what is wrong>".
import hashlib
import json
import os
import re
import shlex
import sys
from pathlib import Path

import jsonschema
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate


def fail(message):
    """Stop before anything runs, with exactly one line on stderr (no traceback)."""
    sys.exit(f"error: {message}")


# --- the stage CLI --------------------------------------------------------------------------
# Jobs call `codeteacher stage ...`. Put the one installed next to the Python that runs
# Snakemake first on PATH, so `.venv/bin/snakemake` works without activating the venv (also in
# SLURM jobs, which re-run this file with the same interpreter).
_BIN = Path(sys.executable).parent
if (_BIN / "codeteacher").exists():
    os.environ.update(PATH=f"{_BIN}{os.pathsep}{os.environ.get('PATH', '')}")


# --- config ---------------------------------------------------------------------------------
def _schema_message(error):
    where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
    return f"config: {where}: {error.message}"


try:
    validate(config, "../schemas/config.schema.yaml")
except WorkflowError as exc:
    cause = exc.__context__  # the jsonschema error validate() caught
    if isinstance(cause, jsonschema.ValidationError):
        fail(_schema_message(cause))
    fail(f"config: {str(exc).splitlines()[0]}")


def _expand_path(value, what):
    """Expand ~ and $VARS; an unset variable is an error that names it."""
    expanded = os.path.expanduser(os.path.expandvars(value))
    unset = re.search(r"\$\{?(\w+)", expanded)
    if unset:
        fail(f"{what}: '{value}' uses the unset environment variable {unset.group(1)}")
    return expanded


CORPORA = {}
for _c in config["corpora"]:
    if _c["name"] in CORPORA:
        fail(f"config: corpus name '{_c['name']}' appears twice")
    _path = _expand_path(_c["path"], f"corpus '{_c['name']}': path")
    if not Path(_path).is_dir():
        fail(f"corpus '{_c['name']}': path '{_path}' is not a directory")
    CORPORA[_c["name"]] = dict(_c, path=_path)

SETTINGS_FILE = _expand_path(config["settings"], "config: settings")
if not Path(SETTINGS_FILE).is_file():
    fail(f"config: settings file '{SETTINGS_FILE}' not found")
N_SHARDS = config["explain_shards"]


def _load_settings(path):
    """The validated settings with defaults filled in (codeteacher's own validation)."""
    try:
        from codeteacher.contracts.errors import UserError
        from codeteacher.contracts.settings import load_settings
    except ImportError:  # Snakemake outside codeteacher's venv: hash the raw sections
        try:
            return json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            fail(f"{path}: not valid JSON ({exc})")
    try:
        return load_settings(path).model_dump(mode="json")
    except UserError as exc:
        fail(str(exc))


SETTINGS = _load_settings(SETTINGS_FILE)

# Settings sections each stage reads (dotted: a sub-section). Their hash is a `params:` value of
# the rule, so Snakemake's params rerun trigger re-runs exactly the rules whose sections changed
# (and what follows them); the settings file itself is no input, or any edit would re-run
# everything. Query-time sections (retrieval, generation.answers, ...) re-run nothing. A section
# the settings do not define hashes as absent.
_EXPLAIN = ("generation.explanations", "generation.prompts", "generation.explain")
STAGE_SECTIONS = {
    "collect": ("collect",),
    "parse": ("chunking",),
    "graph": (),
    "entities": (),
    "explain": _EXPLAIN,
    "merge_explanations": _EXPLAIN,
    "embed": ("embedding",),
    "index": ("embedding",),
    "papers": ("papers",),
    "eval": ("retrieval", "generation", "evaluation"),
}


def _section(dotted):
    node = SETTINGS
    for part in dotted.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def sections_hash(stage):
    chosen = {name: _section(name) for name in STAGE_SECTIONS[stage]}
    return hashlib.sha256(json.dumps(chosen, sort_keys=True).encode()).hexdigest()[:16]


# --- paths ----------------------------------------------------------------------------------
# Params computed by functions that take `input` or `output` are not recorded by Snakemake, so
# the paths below (settings file, cache) never trigger a re-run; only the hashes above do.
def work(corpus, name=""):
    return f"embeddings/{corpus}/work/{name}"


def index_dir(corpus):
    return f"embeddings/{corpus}/index"


def index_stamp(corpus):
    """Written after the index is in place (a copy of its manifest). The index directory itself
    is no declared output: Snakemake deletes outputs before a job runs, which would destroy the
    previous index that the stages read as a cache and that must survive a failed rebuild."""
    return work(corpus, "index_manifest.json")


def log_file(corpus, stage):
    return f"embeddings/{corpus}/logs/{stage}.log"


def bench_file(corpus, stage):
    """Wall time, memory and I/O of each job (Snakemake's benchmark directive): what the
    SLURM runtime and mem_mb requests should be sized on (eval/bench_workflow.py reads them)."""
    return f"embeddings/{corpus}/benchmarks/{stage}.tsv"


def settings_arg(wildcards, input):
    return shlex.quote(SETTINGS_FILE)


def cache_arg(wildcards, input):
    """The previous index, whose per-file chunks, explanations and vectors the stages reuse for
    unchanged inputs (a missing one means a first build)."""
    return shlex.quote(index_dir(wildcards.corpus))


def corpus_path(wildcards, input):
    return shlex.quote(CORPORA[wildcards.corpus]["path"])


def glob_args(corpus):
    c = CORPORA[corpus]
    args = [f"--include {shlex.quote(g)}" for g in c["include"]]
    args += [f"--exclude {shlex.quote(g)}" for g in c["exclude"]]
    return " ".join(args)


def corpus_files(wildcards):
    """The corpus files, as input of collect: a new, removed or edited file re-runs it (an edit
    that leaves the content unchanged does not: Snakemake compares checksums of small files).
    A superset of what collect keeps (it also applies .gitignore and file types)."""
    import pathspec

    c = CORPORA[wildcards.corpus]
    excluded = pathspec.PathSpec.from_lines(
        "gitwildmatch", [".git/", *SETTINGS.get("collect", {}).get("exclude", []), *c["exclude"]])
    included = pathspec.PathSpec.from_lines("gitwildmatch", c["include"]) if c["include"] else None
    root = Path(c["path"])
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        dirnames[:] = sorted(d for d in dirnames
                             if not excluded.match_file(f"{(rel_dir / d).as_posix()}/"))
        for name in sorted(filenames):
            rel = (rel_dir / name).as_posix()
            if excluded.match_file(rel) or (included and not included.match_file(rel)):
                continue
            files.append(str(root / rel))
    return files


def shard_files(wildcards):
    return [work(wildcards.corpus, f"explain/shard_{i}.jsonl") for i in range(N_SHARDS)]


def embed_inputs(wildcards):
    files = {n: work(wildcards.corpus, f) for n, f in
             (("files", "files.json"), ("chunks", "chunks.jsonl"),
              ("entities", "entities.jsonl"))}
    if N_SHARDS:
        files["explanations"] = work(wildcards.corpus, "explanations.jsonl")
    return files


def explanations_arg(wildcards, input):
    return f"--explanations {shlex.quote(input.explanations)}" if N_SHARDS else ""


def gpu_resources():
    """GPU request of the explain, merge and embed jobs: `gpu=1` (SLURM: --gpus=1; locally it counts
    against --resources gpu=N), or a --gres string for clusters that want one."""
    if not config["gpu"]:
        return {}
    if config["gpu_gres"]:
        return {"gres": config["gpu_gres"]}
    return {"gpu": 1}


def bench_files(corpus):
    bench = config["benchmarks"].get(corpus)
    if bench is None:
        fail(f"config: no benchmarks entry for corpus '{corpus}' (needed by the eval rule)")
    return {k: _expand_path(v, f"benchmarks.{corpus}.{k}") for k, v in bench.items()}


def papers_sources():
    sources = config["papers"].get("sources") or []
    if not sources:
        fail("config: papers.sources is empty (the papers rule imports them)")
    return [_expand_path(f, "papers.sources") for f in sources]


# An index deleted by hand leaves its stamp behind; drop the stamp so the index is rebuilt
# (main process only: job processes re-read this file while indexes are being replaced).
if workflow.is_main_process:
    for _name in CORPORA:
        _stamp = Path(index_stamp(_name))
        if _stamp.exists() and not Path(index_dir(_name), "manifest.json").exists():
            _stamp.unlink()
