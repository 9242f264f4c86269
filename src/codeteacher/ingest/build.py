"""`build_index`: run every stage into a scratch folder, then swap it in atomically.

The previous index is the cache (chunks per file hash, vectors per text hash), so an unchanged
repository re-embeds nothing and a changed file costs only its own chunks. Whatever goes wrong
(bad input, Ctrl-C, a kill) the previous index stays where it was and loadable.
"""
from __future__ import annotations

import gc
import os
import shutil
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..contracts.errors import UserError
from ..contracts.jsonio import read_model
from ..contracts.models import Manifest
from ..contracts.settings import Settings
from ..index import layout as L
from . import stages as st


class BuildReport(BaseModel):
    name: str
    out: str
    files: int
    skipped: dict[str, int] = Field(default_factory=dict)
    chunks_by_kind: dict[str, int] = Field(default_factory=dict)
    edges_by_type: dict[str, int] = Field(default_factory=dict)
    stage_seconds: dict[str, float] = Field(default_factory=dict)
    parsed: int = 0
    reused_files: int = 0
    embedded: int = 0
    reused_vectors: int = 0
    unresolved_calls: int = 0
    unresolved_includes: int = 0
    # the explanation stage's report (explain.ExplainReport without its id list): counts,
    # seconds, backend and model names, per-mode counts and the first few errors
    explanations: dict[str, Any] = Field(default_factory=dict)
    # files the parser failed on in part (their other chunks are indexed): path -> what was lost
    partial_files: dict[str, str] = Field(default_factory=dict)
    up_to_date: bool = False  # nothing changed: the previous index was kept as it was


def valid_index(path: Path) -> Manifest | None:
    try:
        if (path / L.MANIFEST).is_file():
            return read_model(path / L.MANIFEST, Manifest)
    except UserError:
        return None
    return None


def _check_output(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise UserError(f"output path exists and is not a folder: {out}")
    if out.is_dir() and any(out.iterdir()) and not (out / L.MANIFEST).exists():
        raise UserError(f"output folder {out} exists and is not a codeteacher index; "
                        "refusing to overwrite it")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        probe = out.parent / f".{out.name}.probe-{_host()}-{os.getpid()}"
        probe.mkdir()
        probe.rmdir()
    except OSError as exc:
        raise UserError(f"output folder is not writable: {out.parent} ({exc.strerror})") from None


def _host() -> str:
    import socket

    return "".join(c for c in socket.gethostname() if c.isalnum() or c in "-_")[:40] or "host"


def scratch_dir(out: Path, pid: int | None = None) -> Path:
    """This build's (or process `pid`'s) scratch folder beside `out`, named by host and PID so
    that a later build can tell whether its owner is still alive."""
    return out.parent / f".{out.name}.building-{_host()}-{pid or os.getpid()}"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def clean_stale_scratch(out: Path) -> list[Path]:
    """Remove scratch folders (and half-swapped old copies) that builds killed with -9 left
    beside `out`: only those of this host whose PID is no longer alive. Folders of another
    host (a shared file system) are left alone: their PIDs mean nothing here."""
    removed = []
    if not out.parent.is_dir():
        return removed
    host = _host()
    for kind in ("building", "old", "probe"):
        for p in out.parent.glob(f".{out.name}.{kind}-*"):
            tag = p.name[len(f".{out.name}.{kind}-"):]
            owner, _, pid = tag.rpartition("-")
            if owner not in ("", host) or not pid.isdigit() or int(pid) == os.getpid():
                continue
            if kind == "old" and not (out / L.MANIFEST).is_file():
                continue  # the only complete copy: store._recover serves it
            if not _pid_alive(int(pid)):
                shutil.rmtree(p, ignore_errors=True)
                removed.append(p)
    return removed


def swap_in(work: Path, out: Path) -> None:
    """Replace `out` by `work` with two renames; `out` is never left half-written."""
    old = out.parent / f".{out.name}.old-{_host()}-{os.getpid()}"
    if out.exists():
        out.rename(old)
    work.rename(out)
    shutil.rmtree(old, ignore_errors=True)


@contextmanager
def _gc_paused():
    """A build allocates ~10^5 short-lived pydantic objects, which makes CPython's cyclic
    collector sweep the (large, long-lived) model objects over and over: pausing it during the
    build halves an incremental rebuild. Reference counting still frees everything acyclic."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def build_index(repo: str | Path, out: str | Path | None = None, name: str | None = None,
                settings: Settings | None = None, progress: bool = False,
                include: list[str] | None = None, exclude: list[str] | None = None
                ) -> BuildReport:
    with _gc_paused():
        return _build_index(repo, out, name, settings, progress, include, exclude)


def _build_index(repo, out, name, settings, progress, include, exclude) -> BuildReport:
    settings = settings or Settings()
    repo = Path(repo).expanduser()
    if not repo.exists():
        raise UserError(f"repository path does not exist: {repo}")
    name = name or repo.resolve().name
    out = Path(out) if out else Path("embeddings") / name
    _check_output(out)
    clean_stale_scratch(out)
    old = valid_index(out)
    cache = out if old else None
    work = scratch_dir(out)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    seconds: dict[str, float] = {}

    def timed(stage: str, fn, *args, **kwargs):
        t0 = time.perf_counter()
        result = fn(*args, **kwargs)
        seconds[stage] = round(time.perf_counter() - t0, 3)
        return result

    try:
        collected = timed("collect", st.stage_collect, repo, work / L.FILES, settings,
                          include=include, exclude=exclude)
        if old is not None and _up_to_date(old, collected, settings, name, out):
            shutil.rmtree(work, ignore_errors=True)
            record_settings(out, settings)  # today's run-time settings, same content
            return _unchanged_report(old, collected, out, seconds)
        parse = timed("parse", st.stage_parse, work / L.FILES, work / L.CHUNKS, settings,
                      cache=cache, progress=progress)
        structure = timed("graph", st.stage_graph, work / L.FILES, work / L.CHUNKS,
                          work / L.STRUCTURE)
        timed("entities", st.stage_entities, work / L.FILES, work / L.CHUNKS,
              work / L.STRUCTURE, work / L.ENTITIES)
        explained = timed("explain", _explain, work, cache, settings, progress)
        emb = timed("embed", st.stage_embed, work / L.CHUNKS, work / L.ENTITIES, work,
                    settings, cache=cache,  # explanations exist only when the stage ran
                    explanations_path=work / L.EXPLANATIONS if explained else None,
                    progress=progress)
        manifest = timed("index", st.stage_index, work, work, settings, name, seconds)
        _link_papers(work, cache, settings)
        manifest.stage_seconds = seconds
        manifest.explanations = _explanation_signatures(settings)
        from ..contracts.jsonio import write_json
        record_settings(work, settings)
        write_json(work / L.MANIFEST, manifest)
        swap_in(work, out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    kinds = _kinds(manifest)
    edges = {k.split(".", 1)[1]: v for k, v in structure.counts.items() if k.startswith("edges.")}
    return BuildReport(name=name, out=str(out), files=len(collected.files),
                       skipped=collected.skipped, chunks_by_kind=kinds, edges_by_type=edges,
                       stage_seconds=seconds, parsed=parse["parsed"], reused_files=parse["reused"],
                       embedded=emb["embedded"], reused_vectors=emb["reused"],
                       unresolved_calls=structure.unresolved_calls,
                       unresolved_includes=structure.unresolved_includes,
                       partial_files=parse["partial"],
                       explanations=explained)


def record_settings(index_dir: Path, settings: Settings) -> None:
    """Keep the settings an index was built with inside it: `serve` uses them when it is given
    no --settings (never a file from its working directory)."""
    from ..contracts.settings.sources import RECORDED_FILE

    # Paths read from a settings file are absolute already; a default left relative means
    # "beside the index" to `serve` (contracts/settings/sources.served_settings).
    tmp = index_dir / f".{RECORDED_FILE}.{os.getpid()}"
    tmp.write_text(settings.model_dump_json(indent=1) + "\n", encoding="utf-8")
    tmp.replace(index_dir / RECORDED_FILE)  # atomic: a server may be reading it


def _kinds(manifest: Manifest) -> dict[str, int]:
    return {k.split(".", 1)[1]: v for k, v in manifest.counts.items() if k.startswith("kind.")}


def _explanation_signatures(settings: Settings) -> dict[str, str]:
    if settings.generation.explanations.backend == "none":
        return {}
    from ..generation import model_id_for
    from ..generation.prompts import prompt_signatures

    return {**prompt_signatures(settings.generation),
            "model": model_id_for(settings.generation.explanations)}


def _up_to_date(old: Manifest, collected, settings: Settings, name: str, out: Path) -> bool:
    """True when a rebuild would reproduce the index in `out`: same file contents, same
    index-relevant settings, chunker, embedding model and explanation prompts. Checking this
    right after collection makes a no-change rebuild cost a directory walk."""
    from ..contracts.models import SCHEMA_VERSION
    from ..embedding import model_id as embed_model_id
    from ..embedding import resolve as resolve_embedding

    if settings.papers.link_on_index and not (out / L.LINKS_FILE).is_file():
        return False
    return (old.schema_version == SCHEMA_VERSION and old.chunker_version == L.CHUNKER_VERSION
            and old.name == name and old.root == collected.root
            and old.settings_signature == settings.index_signature()
            and old.model_id == embed_model_id(settings.embedding)
            and old.embedding == resolve_embedding(settings.embedding).model_dump(mode="json")
            and old.explanations == _explanation_signatures(settings)
            and old.files == {f.path: f.sha256 for f in collected.files}
            and all((out / f).exists()
                    for f in (L.FAISS, L.BM25, L.RECORDS, L.VECTOR_KEYS)))


def _unchanged_report(old: Manifest, collected, out: Path, seconds: dict) -> BuildReport:
    import json

    keys = json.loads((out / L.VECTOR_KEYS).read_text(encoding="utf-8"))
    facts = st.read_facts(out / L.FACTS) if (out / L.FACTS).is_file() else {}
    return BuildReport(name=old.name, out=str(out), files=len(collected.files),
                       skipped=collected.skipped, chunks_by_kind=_kinds(old), stage_seconds=seconds,
                       reused_files=len(collected.files), reused_vectors=sum(1 for k in keys if k),
                       partial_files=st.partial_files(facts), up_to_date=True)


def _explain(work: Path, cache: Path | None, settings: Settings, progress: bool) -> dict:
    """Run the LLM explanation stage when a backend is configured (else nothing to do)."""
    gen = getattr(settings, "generation", None)
    if gen is None or gen.explanations.backend == "none":
        return {}
    from .explain import explain_stage

    report = explain_stage(work / L.CHUNKS, work / L.ENTITIES, work / L.STRUCTURE,
                           work / L.EXPLANATIONS, settings,
                           cache=(cache / L.EXPLANATIONS) if cache else None, progress=progress)
    return report.model_dump(exclude={"generated_ids"})  # one id per target: too long


def _link_papers(work: Path, cache: Path | None, settings: Settings) -> None:
    """Relink entities to papers when asked to, or when the previous index had links (a
    rebuild must not silently lose them). Without the library the old links are kept."""
    from ..papers.linking import build_paper_links

    old = cache / L.LINKS_FILE if cache else None
    had_links = old is not None and old.is_file()
    if not settings.papers.link_on_index and not had_links:
        return
    library = Path(settings.papers.library)
    if library.is_file():
        build_paper_links(work, library, settings)
    elif had_links:
        shutil.copy2(old, work / L.LINKS_FILE)


def assemble_index(work: Path, out: Path, settings: Settings, name: str | None) -> None:
    """`codeteacher stage index`: an index folder from stage files (in `work` or
    `work/embedded`), assembled in a scratch folder beside `out` and swapped in atomically."""
    _check_output(out)
    clean_stale_scratch(out)
    tmp = scratch_dir(out)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        for f in (L.FILES, L.CHUNKS, L.FACTS, L.STRUCTURE, L.ENTITIES, L.EXPLANATIONS,
                  L.RECORDS, L.VECTORS, L.VECTOR_KEYS):
            src = work / f
            if not src.is_file():
                src = work / "embedded" / f
            if src.is_file():
                shutil.copy2(src, tmp / f)
        st.stage_index(tmp, tmp, settings, name or out.parent.name)
        swap_in(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
