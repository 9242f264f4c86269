"""Pipeline stages, each a function from files to files.

`codeteacher index` runs them in sequence into a scratch folder and swaps it in atomically;
the Snakemake rules run the same functions through `codeteacher stage <name>`. Each stage
reuses what an earlier index (the `cache` folder) already computed for unchanged inputs:
chunks per file hash, vectors per embedded-text hash.
"""
from __future__ import annotations

import hashlib
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field

from ..contracts.errors import UserError, describe
from ..contracts.jsonio import (
    read_json,
    read_jsonl,
    read_model,
    write_json,
    write_jsonl,
    write_npy,
)
from ..contracts.models import (
    Chunk,
    CollectReport,
    Entity,
    Explanation,
    Manifest,
    ParsedFile,
    ProjectStructure,
)
from ..contracts.progress import progress_bar
from ..contracts.settings import Settings
from ..embedding import load_embedder
from ..embedding import model_id as embed_model_id
from ..embedding import resolve as resolve_embedding
from ..index.layout import (
    BM25,
    CHUNKER_VERSION,
    CHUNKS,
    FACTS,
    FAISS,
    FILES,
    MANIFEST,
    RECORDS,
    VECTOR_KEYS,
    VECTORS,
    embed_text,
    lexical_text,
    vector_key,
)
from ..index.lexical import FileLexicalIndex, LexicalIndex, tokenize
from .collect import collect, read_text
from .entities import build_entities
from .graph import build_structure


class FileFacts(BaseModel):
    includes: list[str] = Field(default_factory=list)
    leading_comment: str = ""
    parse_errors: int = 0
    failures: int = 0  # constructs the parser failed on (ParsedFile.failures)
    failure: str = ""
    sha256: str = ""
    # How collect classified the file when it was parsed: the chunks depend on it (kind, scope,
    # language), so a file classified otherwise now (other collect settings) is parsed again.
    classified_as: str = ""


# ---- collect ------------------------------------------------------------------------------

def stage_collect(repo: Path, out: Path, settings: Settings, include=None, exclude=None
                  ) -> CollectReport:
    report = collect(repo, settings.collect, include=include, exclude=exclude)
    if not report.files:
        raise UserError(f"no indexable files in {repo} (C/C++ sources, docs or build files)")
    write_json(out, report)
    return report


# ---- parse --------------------------------------------------------------------------------

def parse_file(root: str, rec, settings: Settings) -> ParsedFile:
    """One file's chunks. A parser bug must not stop a whole build, so an exception from a
    parser is caught here and the file comes back with no chunks and the failure recorded;
    the build report lists it (BuildReport.partial_files)."""
    text = read_text(root, rec.path)
    try:
        return _parse_text(rec, text, settings)
    except Exception as exc:  # noqa: BLE001 - reported per file, never silent
        return ParsedFile(path=rec.path, chunks=[], failures=1, failure=describe(exc))


def _parse_text(rec, text: str, settings: Settings) -> ParsedFile:
    from .parse.cpp import parse_cpp
    from .parse.text import chunk_build, chunk_doc

    common = dict(scope=rec.scope, file_sha=rec.sha256, settings=settings.chunking)
    if rec.category == "code" and rec.language == "fortran":
        from .parse.fortran import parse_fortran
        return parse_fortran(rec.path, text, language=rec.language, **common)
    if rec.category == "code":
        return parse_cpp(rec.path, text, language=rec.language, **common)
    if rec.category == "build":
        return chunk_build(rec.path, text, language=rec.language, **common)
    if rec.category == "script":  # line windows like build files, but their own kind
        return chunk_build(rec.path, text, language=rec.language, kind="script", **common)
    fmt = rec.language if rec.language in ("markdown", "rst", "latex") else "text"
    return chunk_doc(rec.path, text, fmt=fmt, **common)


def _parse_signature(settings: Settings) -> str:
    return hashlib.sha256((CHUNKER_VERSION + settings.chunking.model_dump_json()).encode()
                          ).hexdigest()[:16]


def _load_parse_cache(cache: Path | None, signature: str):
    """Chunks and facts of an earlier run, grouped by file, if made with the same chunker."""
    if not cache or not (cache / CHUNKS).is_file() or not (cache / FACTS).is_file():
        return {}, {}
    try:
        facts_raw = read_json(cache / FACTS)
        if facts_raw.get("signature") != signature:
            return {}, {}
        facts = {p: FileFacts.model_validate(f) for p, f in facts_raw["files"].items()}
        by_file: dict[str, list[Chunk]] = defaultdict(list)
        for c in read_jsonl(cache / CHUNKS, Chunk):
            by_file[c.path].append(c)
        return by_file, facts
    except (UserError, KeyError, ValueError):
        return {}, {}  # an unreadable cache only costs time


def _classification(rec) -> str:
    return f"{rec.category}/{rec.language}/{rec.scope}"


def stage_parse(files_json: Path, out: Path, settings: Settings, cache: Path | None = None,
                progress: bool = False) -> dict:
    """Chunks of every file (reused per file hash from `cache`). Returns counts, and under
    "partial" the files whose parse lost something (path -> what, see partial_files)."""
    report = read_model(files_json, CollectReport)
    signature = _parse_signature(settings)
    cached_chunks, cached_facts = _load_parse_cache(cache, signature)
    chunks: list[Chunk] = []
    facts: dict[str, FileFacts] = {}
    stats = {"parsed": 0, "reused": 0, "parse_errors": 0}
    with progress_bar("parse", len(report.files), progress) as advance:
        for rec in report.files:
            old = cached_facts.get(rec.path)
            classified_as = _classification(rec)
            if old is not None and old.sha256 == rec.sha256 \
                    and old.classified_as == classified_as:
                chunks.extend(cached_chunks.get(rec.path, []))
                facts[rec.path] = old
                stats["reused"] += 1
            else:
                parsed = parse_file(report.root, rec, settings)
                chunks.extend(parsed.chunks)
                facts[rec.path] = FileFacts(includes=parsed.includes,
                                            leading_comment=parsed.leading_comment,
                                            parse_errors=parsed.parse_errors,
                                            failures=parsed.failures, failure=parsed.failure,
                                            sha256=rec.sha256, classified_as=classified_as)
                stats["parsed"] += 1
                stats["parse_errors"] += parsed.parse_errors
            advance()
    write_jsonl(out, chunks)
    write_json(out.parent / FACTS, {"signature": signature,
                                    "files": {p: f.model_dump() for p, f in facts.items()}})
    stats["chunks"] = len(chunks)
    stats["partial"] = partial_files(facts)
    return stats


def partial_files(facts: dict[str, FileFacts]) -> dict[str, str]:
    """Files the parser failed on in part: path -> 'N construct(s) lost; first: <failure>'."""
    return {p: f"{f.failures} construct(s) lost; first: {f.failure}"
            for p, f in sorted(facts.items()) if f.failures}


def _facts(chunks_path: Path) -> dict[str, FileFacts]:
    return read_facts(chunks_path.parent / FACTS)


def read_facts(path: Path) -> dict[str, FileFacts]:
    raw = read_json(path)
    return {p: FileFacts.model_validate(f) for p, f in raw["files"].items()}


# ---- graph and entities ---------------------------------------------------------------------

def stage_graph(files_json: Path, chunks_path: Path, out: Path) -> ProjectStructure:
    report = read_model(files_json, CollectReport)
    chunks = read_jsonl(chunks_path, Chunk)
    facts = _facts(chunks_path)
    structure = build_structure(report.files, chunks, {p: f.includes for p, f in facts.items()})
    write_json(out, structure)
    return structure


def stage_entities(files_json: Path, chunks_path: Path, structure_path: Path, out: Path
                   ) -> list[Entity]:
    report = read_model(files_json, CollectReport)
    chunks = read_jsonl(chunks_path, Chunk)
    structure = read_model(structure_path, ProjectStructure)
    facts = _facts(chunks_path)
    entities = build_entities(report.files, chunks, structure,
                              {p: f.leading_comment for p, f in facts.items()},
                              {p: f.includes for p, f in facts.items()})
    write_jsonl(out, entities)
    return entities


# ---- embed ----------------------------------------------------------------------------------

def _records(chunks: list[Chunk], entities: list[Entity], explanations: list[Explanation],
             scopes: dict[str, str]) -> list[Chunk]:
    records = list(chunks) + [e.to_chunk(scopes.get(e.path, "other")) for e in entities]
    if explanations:
        by_target: dict[str, list[str]] = defaultdict(list)
        for x in explanations:
            by_target[x.target_id].append(x.text)
        records = [r.model_copy(update={"explanation": "\n".join(by_target[r.id])})
                   if r.id in by_target else r for r in records]
    return records


def stage_embed(chunks_path: Path, entities_path: Path, out_dir: Path, settings: Settings,
                explanations_path: Path | None = None, cache: Path | None = None,
                files_json: Path | None = None, progress: bool = False) -> dict[str, int]:
    """Records (chunks + entities, with their explanations) and their vectors into out_dir.
    A named input must exist (read_jsonl/read_model raise); only the default files.json beside
    the chunks may be absent (then entities count as scope "other")."""
    chunks = read_jsonl(chunks_path, Chunk)
    entities = read_jsonl(entities_path, Entity)
    explanations = read_jsonl(explanations_path, Explanation) if explanations_path else []
    if files_json is None and (chunks_path.parent / FILES).is_file():
        files_json = chunks_path.parent / FILES
    scopes = {f.path: f.scope for f in read_model(files_json, CollectReport).files} \
        if files_json is not None else {}
    records = _records(chunks, entities, explanations, scopes)
    es = settings.embedding
    model_key = embed_model_id(es)
    skip = set(es.skip_kinds)
    texts = [embed_text(r, es.max_code_chars) for r in records]
    keys = ["" if r.kind in skip else vector_key(model_key, t) for r, t in zip(records, texts)]
    old: dict[str, np.ndarray] = {}
    if cache and (cache / VECTOR_KEYS).is_file() and (cache / VECTORS).is_file():
        try:
            old_keys = read_json(cache / VECTOR_KEYS)
            old_vecs = np.load(cache / VECTORS, mmap_mode="r")
            if len(old_keys) == len(old_vecs):
                old = {k: old_vecs[i] for i, k in enumerate(old_keys)}
        except (UserError, ValueError, OSError):
            old = {}
    # One vector per distinct text: records with the same text (generated or copied code)
    # share it, within this build as across builds.
    first: dict[str, int] = {}
    for i, k in enumerate(keys):
        if k and k not in old:
            first.setdefault(k, i)
    todo = list(first.values())
    dim = next(iter(old.values())).shape[0] if old else 0
    if not dim and not todo:  # nothing to embed and nothing cached: still need the width
        todo = [i for i, k in enumerate(keys) if k][:1]
    fresh: dict[str, np.ndarray] = {}
    if todo:
        embedder = load_embedder(es)
        dim = embedder.dim
        new_vecs = np.zeros((len(todo), dim), dtype=np.float32)
        # Longest texts first keeps padding low; slices of several batches let the embedder
        # order its batches by token count (progress advances per slice).
        step = max(1, es.batch_size) * 8
        order = sorted(range(len(todo)), key=lambda j: -len(texts[todo[j]]))
        with progress_bar("embed", len(todo), progress) as advance:
            for s in range(0, len(order), step):
                part = order[s:s + step]
                new_vecs[part] = embedder.embed([texts[todo[j]] for j in part])
                advance(len(part))
        fresh = {keys[i]: new_vecs[j] for j, i in enumerate(todo)}
    vectors = np.zeros((len(records), dim), dtype=np.float32)
    for i, k in enumerate(keys):
        if k in fresh:
            vectors[i] = fresh[k]
        elif k:
            vectors[i] = old[k]
        # skipped kinds keep a zero vector: dense search never ranks them, BM25 still does
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(out_dir / RECORDS, records)
    write_npy(out_dir / VECTORS, vectors)
    write_json(out_dir / VECTOR_KEYS, keys)
    return {"records": len(records), "embedded": len(todo),
            "reused": sum(1 for k in keys if k and k in old), "skipped": keys.count("")}


# ---- index ----------------------------------------------------------------------------------

def stage_index(work: Path, out_dir: Path, settings: Settings, name: str,
                stage_seconds: dict[str, float] | None = None) -> Manifest:
    """Write FAISS, BM25 and the manifest for the stage files in `work` into `out_dir`."""
    import faiss

    records = read_jsonl(work / RECORDS, Chunk)
    vectors = np.load(work / VECTORS)
    if len(records) != len(vectors):
        raise UserError(f"{work}: records and vectors disagree ({len(records)} vs {len(vectors)})")
    report = read_model(work / FILES, CollectReport)
    out_dir.mkdir(parents=True, exist_ok=True)
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    tmp = out_dir / (FAISS + ".tmp")
    faiss.write_index(index, str(tmp))
    tmp.replace(out_dir / FAISS)
    lexical = LexicalIndex.build([tokenize(lexical_text(r)) for r in records])
    lexical.files = FileLexicalIndex.build(Path(report.root), [f.path for f in report.files])
    lexical.save(out_dir / BM25)
    counts: dict[str, int] = defaultdict(int)
    for r in records:
        counts[f"kind.{r.kind}"] += 1
    counts["files"] = len(report.files)
    counts["records"] = len(records)
    model = settings.embedding
    manifest = Manifest(
        chunker_version=CHUNKER_VERSION, name=name, root=report.root,
        created_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        model_id=embed_model_id(model), dim=int(vectors.shape[1]),
        embedding=resolve_embedding(model).model_dump(mode="json"),
        settings_signature=settings.index_signature(),
        files={f.path: f.sha256 for f in report.files}, counts=dict(counts),
        stage_seconds=stage_seconds or {})
    write_json(out_dir / MANIFEST, manifest)
    return manifest
