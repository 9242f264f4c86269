"""Explanation stage: LLM explanations of chunks, files, modules and call chains, cached.

Inputs (stage files of an index directory): chunks.jsonl, entities.jsonl, project_structure.json.
Output: explanations.jsonl, one models.Explanation per explained target, written atomically.

Levels, each built from the one below:
  chunk_explanation  chunks of the configured kinds and size (code + signature + comment)
  file_level         a file entity from its code and its chunks' explanations; files too large
                     for the context use file_level_fallback (the chunk explanations only)
  module_level       a module entity from the summaries of all files below its directory
  call_chain         a chain entity from its root function and its direct callers/callees

Cache: every explanation carries cache_key = sha256(content hash of its inputs, prompt signature
of its mode, model id + sampling settings). A higher level hashes the *keys* of the child
explanations it was built from (not their texts). Any explanation file given as cache (by
default the previous output) is reused for every matching key, so editing one chunk
regenerates that chunk, its file, the modules above the file and the call chains it is part of;
bumping one mode's version regenerates that mode and the modes built on it.

Sharding: `explain_stage(..., shard=i, of=n)` with n > 1 explains only the chunks whose
sha256(target id) falls in shard i; `merge_explanations(shard files)` joins them and then
explains the entity levels in one process (entities are few compared with chunks, and each
level needs the complete level below). With of=1 one call does everything.
"""
from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from ..contracts.errors import UserError
from ..contracts.jsonio import read_jsonl, read_model, write_jsonl
from ..contracts.models import Chunk, Entity, Explanation, ProjectStructure
from ..contracts.progress import progress_bar
from ..generation import ChatRequest, Generator, make_generator, model_id_for
from ..generation.base import messages_tokens
from ..generation.prompts import prompt_signature, render
from ..index.layout import CHUNKS, ENTITIES, STRUCTURE, chain_root, node_chunk, node_path

CUT_MARK = "\n[... cut]"
Progress = bool | Callable[[str, int, int], None] | None
MIN_FIELD_CHARS = 40


class ExplainReport(BaseModel):
    backend: str = "none"
    model: str = ""
    shard: int = 0
    of: int = 1
    targets: int = 0
    generated: int = 0
    cached: int = 0
    truncated: int = 0
    failed: int = 0
    missing_children: int = 0  # merge: selected chunks without an explanation in any shard
    seconds: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    by_mode: dict[str, dict[str, int]] = Field(default_factory=dict)
    generated_ids: list[str] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)  # first few failure messages

    def count(self, mode: str, what: str, n: int = 1) -> None:
        setattr(self, what, getattr(self, what) + n)
        self.by_mode.setdefault(mode, {}).setdefault(what, 0)
        self.by_mode[mode][what] += n


class _Job(BaseModel):
    target_id: str
    mode: str
    key: str
    values: dict[str, str]
    shrink: list[str]  # fields cut, in this order, when the prompt exceeds the context
    cut: bool = False  # an input was already shortened (max_code_chars)


def _sha(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def _cut(text: str, keep: int) -> str:
    if keep <= 0:
        return ""
    cut = text[:keep]
    nl = cut.rfind("\n")
    return (cut[:nl] if nl > keep // 2 else cut) + CUT_MARK


def _flat(text: str, limit: int) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def clean(text: str) -> str:
    """Explanations are prose: cut a code block that follows them (small models ramble on)."""
    fence = text.find("```")
    return (text[:fence] if fence > 40 else text).strip()


def shard_of(target_id: str, of: int) -> int:
    """Stable shard of a target: sha256 of its id modulo the shard count."""
    return int(hashlib.sha256(target_id.encode()).hexdigest()[:12], 16) % of


# ---- files ----------------------------------------------------------------------------------

def load_explanations(path: str | Path) -> list[Explanation]:
    return read_jsonl(Path(path), Explanation)


def _input(path: Path | None, what: str, option: str, needed_for: str) -> Path | None:
    """An input file that must exist when named; None when not named and not needed."""
    if path is None:
        if needed_for:
            raise UserError(f"explaining {needed_for} needs the {what} file ({option})")
        return None
    if not path.is_file():
        raise UserError(f"{what} file not found: {path}")
    return path


class _Inputs:
    """The stage files an explanation run reads. A file that is named (or implied by an index
    folder) must exist, and one the configured levels need must be named: a missing input
    is an error, never a run that quietly explains less."""

    def __init__(self, chunks: str | Path | None, entities: str | Path | None,
                 structure: str | Path | None, levels: set[str] = frozenset()):
        base = Path(chunks) if chunks and Path(chunks).is_dir() else None  # an index dir
        chunks = base / CHUNKS if base else Path(chunks) if chunks else None
        if chunks is None or not chunks.is_file():
            raise UserError(f"chunks file not found: {chunks}")
        self.chunks: list[Chunk] = read_jsonl(chunks, Chunk)
        entities = Path(entities) if entities else base / ENTITIES if base else None
        entities = _input(entities, "entities", "--entities",
                          "the entity levels" if levels else "")
        self.entities: list[Entity] = read_jsonl(entities, Entity) if entities else []
        structure = Path(structure) if structure else base / STRUCTURE if base else None
        structure = _input(structure, "structure", "--structure",
                           "call chains" if "call_chain" in levels else "")
        self.callers: dict[str, list[str]] = {}
        self.callees: dict[str, list[str]] = {}
        if structure is not None:
            graph = read_model(structure, ProjectStructure)
            for e in graph.edges:
                src, dst = node_chunk(e.source), node_chunk(e.target)
                if e.type == "call" and src and dst:
                    self.callees.setdefault(src, []).append(dst)
                    self.callers.setdefault(dst, []).append(src)
        self.by_id = {c.id: c for c in self.chunks}


# ---- the run --------------------------------------------------------------------------------

class _Run:
    def __init__(self, settings, generator: Generator | None, cache_files: list[Path],
                 report: ExplainReport, progress: Progress):
        self.gs = settings.generation
        self.cfg = self.gs.explanations
        self.opts = self.gs.explain
        self._gen = generator
        self._owned: Generator | None = None
        model = generator.model_id if generator else model_id_for(self.cfg)
        self.model_part = f"{model}|{self.cfg.max_tokens}|{self.cfg.temperature}|" \
                          f"{self.cfg.repeat_penalty}"
        self.report, self.progress = report, progress
        report.backend = generator.name if generator else self.cfg.backend
        report.model = model
        self.cache: dict[str, Explanation] = {}
        for f in cache_files:
            for e in load_explanations(f):
                self.cache[e.cache_key] = e

    @property
    def gen(self) -> Generator:
        if self._gen is None:  # loaded only when something is not cached
            self._gen = self._owned = make_generator(self.cfg)
        return self._gen

    def close(self) -> None:
        if self._owned is not None:  # a generator passed in belongs to the caller
            self._owned.close()
            self._owned = None

    def key(self, mode: str, content: str) -> str:
        return _sha(content, prompt_signature(self.gs, mode), self.model_part)

    # -- prompt fitting --
    def fit(self, job: _Job, scale: float = 1.0) -> tuple[list[dict], bool] | None:
        """Messages that fit the context, cutting job.shrink fields in order; None if impossible."""
        gen = self.gen
        budget = int((gen.context_size - self.cfg.max_tokens - 16) * scale)
        values, cut = dict(job.values), job.cut
        for _ in range(16):
            msgs = render(self.gs, job.mode, values)
            n = messages_tokens(gen, msgs)
            if n <= budget:
                return msgs, cut
            field = next((f for f in job.shrink if len(values[f]) > MIN_FIELD_CHARS), None)
            if field is None:
                return None
            text = values[field]
            have = max(1, gen.count_tokens(text))
            keep = int(len(text) * max(0.0, (have - (n - budget)) / have) * 0.95)
            values[field] = _cut(text, keep) if keep >= MIN_FIELD_CHARS else "(omitted)"
            cut = True
        return None

    def run(self, jobs: list[_Job]) -> dict[str, Explanation]:
        """Explanations for jobs: cached where the key matches, generated otherwise."""
        done: dict[str, Explanation] = {}
        pending: list[_Job] = []
        for job in jobs:
            self.report.targets += 1
            hit = self.cache.get(job.key)
            if hit is not None:
                done[job.target_id] = hit.model_copy(update={"target_id": job.target_id})
                self.report.count(job.mode, "cached")
            else:
                pending.append(job)
        size = self.opts.batch_size
        label = pending[0].mode.split("_")[0] if pending else ""
        with progress_bar(f"ex:{label}", len(pending), self.progress is True) as advance:
            for start in range(0, len(pending), size):
                batch = pending[start:start + size]
                for job, expl in zip(batch, self._generate(batch)):
                    if expl is not None:
                        done[job.target_id] = expl
                advance(len(batch))
                if callable(self.progress):
                    self.progress(label, min(start + size, len(pending)), len(pending))
        return done

    def _fail(self, job: _Job, why: str) -> None:
        self.report.count(job.mode, "failed")
        if len(self.report.errors) < 10:
            self.report.errors.append(f"{job.target_id}: {why}")

    def _generate(self, batch: list[_Job]) -> list[Explanation | None]:
        out: list[Explanation | None] = [None] * len(batch)
        todo = list(range(len(batch)))
        for scale in (1.0, 0.6):  # second pass: the backend found a prompt too long anyway
            reqs, idx, cuts = [], [], {}
            for i in todo:
                fitted = self.fit(batch[i], scale)
                if fitted is None:
                    self._fail(batch[i], "prompt does not fit the context")
                    continue
                reqs.append(ChatRequest(messages=fitted[0], max_tokens=self.cfg.max_tokens,
                                        temperature=self.cfg.temperature))
                idx.append(i)
                cuts[i] = fitted[1]
            todo = []
            for i, g in zip(idx, self.gen.generate(reqs) if reqs else []):
                job = batch[i]
                self.report.tokens_in += g.tokens_in
                self.report.tokens_out += g.tokens_out
                if g.finish_reason == "context_overflow" and scale == 1.0:
                    todo.append(i)
                elif g.finish_reason in ("error", "context_overflow") or not clean(g.text):
                    self._fail(job, g.error or "empty output")
                else:
                    out[i] = Explanation(target_id=job.target_id, mode=job.mode,
                                         text=clean(g.text),
                                         cache_key=job.key, model=self.gen.model_id,
                                         truncated=cuts[i])
                    self.report.count(job.mode, "generated")
                    self.report.generated_ids.append(job.target_id)
                    if cuts[i]:
                        self.report.count(job.mode, "truncated")
            if not todo:
                break
        return out

    # -- jobs per level --
    def chunk_jobs(self, chunks: list[Chunk]) -> list[_Job]:
        jobs = []
        for c in chunks:
            ctx = [f"Signature: {c.signature}" if c.signature else "",
                   f"In class: {c.class_name}" if c.class_name else "",
                   f"Comment: {_flat(c.comment, 400)}" if c.comment else "",
                   f"Calls: {', '.join(c.calls[:12])}" if c.calls else ""]
            code, cut = self.precut(c.text)
            # No line numbers in prompt or key: an edit above a chunk must not invalidate it.
            values = {"kind": c.kind, "name": c.qualified_name or c.name or c.kind,
                      "path": c.path, "context": "\n".join(x for x in ctx if x), "code": code}
            jobs.append(_Job(target_id=c.id, mode="chunk_explanation",
                             key=self.key("chunk_explanation", _sha(values, c.text)),
                             values=values, shrink=["code", "context"], cut=cut))
        return jobs

    def precut(self, code: str) -> tuple[str, bool]:
        if len(code) <= self.opts.max_code_chars:
            return code, False
        return _cut(code, self.opts.max_code_chars), True

    def children(self, items: list[tuple[str, str]], done: dict[str, Explanation]
                 ) -> tuple[str, list[str]]:
        """('- label: explanation' lines, child keys) for the items that have explanations."""
        lines, keys = [], []
        for target, label in items:
            if target in done:
                lines.append(f"- {label}: {_flat(done[target].text, self.opts.max_child_chars)}")
                keys.append(done[target].cache_key)
        return "\n".join(lines) or "(none)", keys


def explainable(chunks: list[Chunk], opts) -> list[Chunk]:
    kinds = set(opts.kinds)
    return [c for c in chunks if c.kind in kinds and not c.is_declaration
            and len(c.text) >= opts.min_chunk_chars]


def _file_code(chunks: list[Chunk]) -> str:
    """A file's code rebuilt from its chunks, outermost first, without overlapping repeats."""
    parts, end = [], 0
    for c in sorted(chunks, key=lambda c: (c.start_line, -c.end_line)):
        if c.start_line > end and c.text:
            parts.append(c.text)
            end = c.end_line
    return "\n\n".join(parts)


def _entities(run: _Run, inputs: _Inputs, chunk_done: dict[str, Explanation]
              ) -> list[Explanation]:
    levels = set(run.opts.levels)
    by_level: dict[str, list[Entity]] = {}
    for e in inputs.entities:
        by_level.setdefault(e.level, []).append(e)
    by_path: dict[str, list[Chunk]] = {}
    for c in inputs.chunks:
        by_path.setdefault(c.path, []).append(c)
    out: list[Explanation] = []
    file_done: dict[str, Explanation] = {}

    if "file" in levels:
        jobs = []
        for ent in by_level.get("file", []):
            members = sorted(by_path.get(ent.path, []), key=lambda c: c.start_line)
            children, keys = run.children(
                [(c.id, f"{c.kind} {c.qualified_name or c.name}") for c in members], chunk_done)
            code = _file_code(members) or ent.text
            content = _sha(ent.id, ent.source_hash, ent.text, code, keys)
            full = _Job(target_id=ent.id, mode="file_level",
                        key=run.key("file_level", content),
                        values={"path": ent.path, "children": children, "code": code},
                        shrink=["code", "children"])
            small = _Job(target_id=ent.id, mode="file_level_fallback",
                         key=run.key("file_level_fallback", content),
                         values={"path": ent.path, "children": children},
                         shrink=["children"])
            if small.key in run.cache and full.key not in run.cache:
                jobs.append(small)
            elif full.key in run.cache or not keys:
                full.values["code"], full.cut = run.precut(code)  # nothing to fall back on
                jobs.append(full)
            else:
                too_big = len(code) > run.opts.max_code_chars or \
                    messages_tokens(run.gen, render(run.gs, "file_level", full.values)) > \
                    run.gen.context_size - run.cfg.max_tokens - 16
                jobs.append(small if too_big else full)
        file_done = run.run(jobs)
        out += file_done.values()

    if "module" in levels:
        files = sorted(file_done.items())
        jobs = []
        for ent in by_level.get("module", []):
            prefix = "" if ent.path in ("", ".") else ent.path.rstrip("/") + "/"
            children, keys = run.children(
                [(fid, node_path(fid)) for fid, _ in files
                 if (node_path(fid) or "").startswith(prefix)], file_done)
            jobs.append(_Job(target_id=ent.id, mode="module_level",
                             key=run.key("module_level", _sha(ent.id, keys)),
                             values={"path": ent.path or ".", "children": children},
                             shrink=["children"]))
        out += run.run([j for j in jobs if j.values["children"] != "(none)"]).values()

    if "call_chain" in levels:
        jobs = []
        for ent in by_level.get("call_chain", []):
            root_id = chain_root(ent.id)
            root = inputs.by_id.get(root_id)
            if root is None:
                continue
            callees = inputs.callees.get(root_id) or [m for m in ent.members if m != root_id]

            def label(cid: str) -> str:
                c = inputs.by_id[cid]
                return f"{c.qualified_name or c.name} ({c.path})"

            near = [x for x in dict.fromkeys(inputs.callers.get(root_id, [])) if x in inputs.by_id]
            far = [x for x in dict.fromkeys(callees) if x in inputs.by_id]
            callers, k1 = run.children([(c, label(c)) for c in near], chunk_done)
            called, k2 = run.children([(c, label(c)) for c in far], chunk_done)
            # Neighbours without an explanation still appear, by name and signature.
            callers = _with_unexplained(callers, near, chunk_done, inputs)
            called = _with_unexplained(called, far, chunk_done, inputs)
            _, k0 = run.children([(root_id, "root")], chunk_done)
            code, cut = run.precut(root.text)
            values = {"name": root.qualified_name or root.name, "path": root.path,
                      "code": code, "callers": callers, "callees": called}
            jobs.append(_Job(target_id=ent.id, mode="call_chain",
                             key=run.key("call_chain", _sha(
                                 label(root_id), root.text, [label(c) for c in near + far],
                                 [inputs.by_id[c].signature for c in near + far], k0, k1, k2)),
                             values=values, shrink=["code", "callees", "callers"], cut=cut))
        out += run.run(jobs).values()
    return out


def _with_unexplained(text: str, ids: list[str], done: dict[str, Explanation],
                      inputs: _Inputs) -> str:
    extra = [f"- {inputs.by_id[c].qualified_name or inputs.by_id[c].name}: "
             f"{inputs.by_id[c].signature or inputs.by_id[c].kind}" for c in ids if c not in done]
    if not extra:
        return text
    return "\n".join(([] if text == "(none)" else [text]) + extra)


# ---- public stage functions -------------------------------------------------------------------

def _cache_files(cache: str | Path | list | None, out: Path) -> list[Path]:
    if cache is None:
        return [out] if out.is_file() else []
    items = cache if isinstance(cache, list) else [cache]
    return [Path(c) for c in items if Path(c).is_file()]


def explain_stage(chunks: str | Path, entities: str | Path | None,
                  structure: str | Path | None, out_jsonl: str | Path, settings, shard: int = 0,
                  of: int = 1, cache: str | Path | list | None = None, *,
                  generator: Generator | None = None, progress: Progress = False
                  ) -> ExplainReport:
    """Explain the chunks of shard `shard` of `of`; with of == 1 also every entity level.

    `chunks` is chunks.jsonl or an index directory holding the three stage files (then
    entities/structure may be None). `cache` is one or more earlier explanation files (default:
    out_jsonl itself if it exists; [] for none). `progress`: True for a progress bar on stderr,
    or a callable(level, done, total). With backend "none" (and no generator given) nothing is
    generated and an empty file is written.
    """
    if not 0 <= shard < of:
        raise UserError(f"shard {shard} is not in 0..{of - 1}")
    t0, out = time.perf_counter(), Path(out_jsonl)
    report = ExplainReport(shard=shard, of=of)
    if generator is None and settings.generation.explanations.backend == "none":
        write_jsonl(out, [])
        return report
    levels = set(settings.generation.explain.levels) if of == 1 else set()
    inputs = _Inputs(chunks, entities, structure, levels)
    run = _Run(settings, generator, _cache_files(cache, out), report, progress)
    try:
        mine = [c for c in explainable(inputs.chunks, run.opts) if shard_of(c.id, of) == shard]
        chunk_done = run.run(run.chunk_jobs(mine))
        rows = [chunk_done[c.id] for c in mine if c.id in chunk_done]
        if of == 1:
            rows += _entities(run, inputs, chunk_done)
    finally:
        run.close()
    write_jsonl(out, rows)
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def merge_explanations(shard_files: list[str | Path], out_jsonl: str | Path, settings,
                       chunks: str | Path | None = None, entities: str | Path | None = None,
                       structure: str | Path | None = None,
                       cache: str | Path | list | None = None, *,
                       generator: Generator | None = None, progress: Progress = False
                       ) -> ExplainReport:
    """Join the chunk explanations of all shards, then explain the entity levels.

    Shard rows whose key no longer matches the current chunk are ignored; selected chunks left
    without an explanation are counted as missing_children (a failed or absent shard).
    """
    t0, out = time.perf_counter(), Path(out_jsonl)
    report = ExplainReport()
    if generator is None and settings.generation.explanations.backend == "none":
        write_jsonl(out, [])
        return report
    missing = [str(f) for f in shard_files if not Path(f).is_file()]
    if missing:
        raise UserError(f"shard explanation file not found: {missing[0]}")
    if chunks is None:
        raise UserError("merging explanations needs the chunks file (--chunks)")
    inputs = _Inputs(chunks, entities, structure, set(settings.generation.explain.levels))
    run = _Run(settings, generator, _cache_files(cache, out), report, progress)
    expected = {j.target_id: j.key for j in run.chunk_jobs(explainable(inputs.chunks, run.opts))}
    chunk_done: dict[str, Explanation] = {}
    for f in shard_files:
        for e in load_explanations(f):
            if e.mode == "chunk_explanation" and expected.get(e.target_id) == e.cache_key:
                chunk_done[e.target_id] = e
    report.missing_children = len(expected) - len(chunk_done)
    rows = [chunk_done[c.id] for c in inputs.chunks if c.id in chunk_done]
    try:
        rows += _entities(run, inputs, chunk_done)
    finally:
        run.close()
    write_jsonl(out, rows)
    report.seconds = round(time.perf_counter() - t0, 3)
    return report


def apply_explanations(records: list[Chunk], explanations: list[Explanation]) -> list[Chunk]:
    """Copies of records with Chunk.explanation set from the explanation of the same id."""
    by_id = {e.target_id: e.text for e in explanations}
    return [r.model_copy(update={"explanation": by_id[r.id]}) if r.id in by_id else r
            for r in records]
