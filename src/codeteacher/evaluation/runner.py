"""`codeteacher eval`: ask every question through Engine.ask (the path of `ask`), save after each
answer, judge, score and report.

answers.json follows the paper's answer-file schema (schema, run_complete, run_metadata,
models, settings_snapshot, vector_store_manifest, answers[id, category, question, answer,
evidence_files, error, latency_seconds]) plus our evidence lists. It is rewritten atomically
after every answer, so an interrupted run resumes: answers already saved without an error (for
the same question text) are kept, the rest are asked.
"""
from __future__ import annotations

import platform
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from ..contracts.errors import UserError
from ..contracts.jsonio import write_json, write_text
from .io import (
    ANSWERS_FILE,
    SCHEMA,
    index_files,
    index_manifest,
    load_answers,
    load_questions,
    load_references,
)
from .judge import Judge, judge_backend
from .report import render_report
from .scoring import JUDGMENTS_FILE, load_judgments, score_run

Progress = Callable[[str, int, int], None]  # (stage, done, total)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


def load_engine(index_dir: Path, settings):
    from ..api import Engine  # imported here: scoring-only commands need no engine

    return Engine.load(index_dir, settings)


def warm_up(engine, question: str) -> None:
    """Load the engine's models before the clock runs, so latencies exclude loading. A model
    that cannot load stops the run here with its error (every question would fail on it)."""
    warm = getattr(engine, "warm_up", None)
    warm() if callable(warm) else engine.search(question, k=1)


def _spans(items) -> list[dict]:
    return [{"path": e.path, "start_line": e.start_line, "end_line": e.end_line,
             "symbol": e.symbol} for e in items]


def answer_text(result) -> str:
    """The answer as `ask` shows it: the Answer, then its Evidence bullets (the published runs
    carry theirs in the text too, so both are scored alike)."""
    bullets = [f"- {e.path}:{e.start_line}-{e.end_line} : {e.symbol} — {e.description}"
               for e in result.evidence]
    return result.answer + ("\n\nEvidence:\n" + "\n".join(bullets) if bullets else "")


def answer_record(q: dict, result, latency: float) -> dict:
    """One entry of answers.json from an AskResult."""
    from .metrics import evidence_items

    cited = [n for item in evidence_items(result.answer) for n in item]
    evidence_files = list(dict.fromkeys(cited or [e.path for e in result.evidence]))
    context = result.context or result.evidence
    return {
        "id": q["id"], "category": q["category"], "question": q["question"],
        "answer": answer_text(result), "answer_prose": result.answer,
        "evidence_files": evidence_files, "error": None,
        "latency_seconds": latency,
        "evidence": _spans(result.evidence), "context": _spans(context),
        "context_files": list(dict.fromkeys(e.path for e in context)),
        "abstained": result.abstained, "tokens_in": result.tokens_in,
        "tokens_out": result.tokens_out, "intent": result.intent, "backend": result.backend,
        "model": result.model, "timings_ms": result.timings_ms,
        "answer_source": result.answer_source, "answer_note": result.answer_note,
        "unsupported_names": result.unsupported_names, "confidence": result.confidence,
        "ttft_seconds": None if result.ttft_ms is None else result.ttft_ms / 1000,
    }


def error_record(q: dict, error: str, latency: float) -> dict:
    return {"id": q["id"], "category": q["category"], "question": q["question"], "answer": "",
            "evidence_files": [], "error": error, "latency_seconds": latency}


def _previous(out_dir: Path, questions: list[dict]) -> tuple[dict, dict[str, dict]]:
    """(previous document or {}, id -> reusable answer) of an earlier run in out_dir."""
    if not (out_dir / ANSWERS_FILE).exists():
        return {}, {}
    doc = load_answers(out_dir)
    texts = {q["id"]: q["question"] for q in questions}
    keep = {str(a["id"]): a for a in doc["answers"]
            if not a.get("error") and texts.get(str(a["id"])) == a.get("question")}
    return doc, keep


def _check_same_run(prev: dict, out_dir: Path, index_dir: Path, manifest: dict, k: int):
    """Resuming mixes answers of two sessions: refuse when they would come from another index
    (or another build of it) or another k."""
    meta = prev.get("run_metadata") or {}
    if not prev:
        return
    old_manifest = prev.get("vector_store_manifest") or {}
    if meta.get("index_dir") != str(index_dir.resolve()) \
            or old_manifest.get("created_at") != manifest.get("created_at"):
        raise UserError(f"{out_dir} holds answers from another index or build of it "
                        f"({meta.get('index_dir')}); use a new --out")
    if meta.get("k") != k:
        raise UserError(f"{out_dir} was run with k = {meta.get('k')}; use a new --out for "
                        f"k = {k}")


def run_eval(questions_path: str | Path, index_dir: str | Path, out_dir: str | Path,
             settings=None, references_path: str | Path | None = None, k: int | None = None,
             limit: int | None = None, progress: Progress | None = None,
             engine=None) -> dict:
    """Run (or resume) an evaluation; returns {asked, kept, failed, scores, judge_error}."""
    if settings is None:
        from ..contracts.settings import load_settings
        settings = load_settings()
    cfg = settings.evaluation
    qfile = load_questions(questions_path)
    questions = qfile["questions"]
    references = load_references(references_path)
    index_dir, out_dir = Path(index_dir), Path(out_dir)
    manifest = index_manifest(index_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    prev, kept = _previous(out_dir, questions)
    _check_same_run(prev, out_dir, index_dir, manifest, k or settings.retrieval.k)
    todo = [q for q in questions if q["id"] not in kept]
    if limit is not None:
        todo = todo[:max(limit, 0)]

    records = dict(kept)
    prev_meta = prev.get("run_metadata") or {}
    meta = {
        "run_label": out_dir.resolve().name,
        "run_started_at_utc": prev_meta.get("run_started_at_utc") or _now(),
        "hostname": platform.node(), "python_executable": sys.executable,
        "questions_source": str(Path(questions_path).resolve()),
        "questions_version": qfile["version"],
        "references_source": str(Path(references_path).resolve()) if references_path else None,
        "index_dir": str(index_dir.resolve()),
        "vector_store_chunk_count": (manifest.get("counts") or {}).get("records"),
        "k": k or settings.retrieval.k, "sessions": int(prev_meta.get("sessions", 0)) + 1,
    }
    judge = Judge(judge_backend(settings), cfg)
    models = {"answer_model": (prev.get("models") or {}).get("answer_model") or {},
              "embedding_model": manifest.get("model_id", ""), "judge_model": judge.info()}

    def save() -> dict:
        answers = [records[q["id"]] for q in questions if q["id"] in records]
        done = len(answers) == len(questions) and not any(a.get("error") for a in answers)
        meta.update(answer_count=len(answers),
                    failure_count=sum(1 for a in answers if a.get("error")),
                    last_updated_at_utc=_now(), run_finished_at_utc=_now() if done else None)
        doc = {"schema": SCHEMA, "run_complete": done, "run_metadata": meta, "models": models,
               "settings_snapshot": settings.model_dump(mode="json"),
               "vector_store_manifest": manifest, "answers": answers}
        write_json(out_dir / ANSWERS_FILE, doc)
        return doc

    failed = 0
    if todo:
        engine = engine or load_engine(index_dir, settings)
        warm_up(engine, todo[0]["question"])
        for n, q in enumerate(todo):
            if progress:
                progress("answering", n, len(todo))
            t0 = time.perf_counter()
            try:
                result = engine.ask(q["question"], k=k)
                records[q["id"]] = answer_record(q, result, time.perf_counter() - t0)
                models["answer_model"] = {"backend": result.backend, "model": result.model}
            except Exception as exc:  # one failing question must not end the run
                failed += 1
                records[q["id"]] = error_record(q, _first_line(exc), time.perf_counter() - t0)
            save()
        if progress:
            progress("answering", len(todo), len(todo))
    doc = save()

    try:
        judgments = judge_answers(out_dir, doc, references, judge, cfg, progress)
    except UserError as exc:  # e.g. the judge model is missing: still score and report
        judgments = {"judge": {**judge.info(), "enabled": False, "error": str(exc)},
                     "verdicts": {}}
    corpus = index_files(index_dir)
    scores = score_run(doc, references, corpus, cfg, label=meta["run_label"],
                       judgments=judgments, question_count=len(questions))
    write_json(out_dir / "scores.json", scores)
    write_text(out_dir / "report.md", render_report(scores, doc))
    return {"asked": len(todo), "kept": len(kept), "failed": failed, "scores": scores,
            "judge_error": judgments["judge"].get("error")}


def judge_answers(out_dir: Path, doc: dict, references: dict[str, str], judge: Judge, cfg,
                  progress: Progress | None = None) -> dict:
    """Grade every answered question that has a reference; verdicts are cached in
    judgments.json by (judge, prompt, question, reference, answer) and saved per batch."""
    info = judge.info()
    if not judge.enabled or not references:
        reason = "judge backend 'none'" if not judge.enabled else "no references"
        return {"judge": {**info, "enabled": False, "reason": reason}, "verdicts": {}}
    cached = load_judgments(out_dir)["verdicts"]
    verdicts, todo = {}, []
    for a in doc["answers"]:
        if a.get("error") or a["id"] not in references:
            continue
        item = {"id": a["id"], "question": a["question"], "reference": references[a["id"]],
                "answer": a.get("answer") or ""}
        key = judge.key(item)
        old = cached.get(a["id"])
        if old and old.get("key") == key and old.get("verdict"):
            verdicts[a["id"]] = old
        else:
            todo.append((key, item))
    data = {"judge": info, "verdicts": verdicts}
    try:
        for start in range(0, len(todo), cfg.judge_batch_size):
            if progress:
                progress("judging", start, len(todo))
            batch = todo[start:start + cfg.judge_batch_size]
            for (key, item), v in zip(batch, judge.grade([it for _, it in batch])):
                verdicts[item["id"]] = {**v, "key": key}  # failures (verdict None) retry
            write_json(out_dir / JUDGMENTS_FILE, data)
        if progress and todo:
            progress("judging", len(todo), len(todo))
    finally:
        judge.close()
    write_json(out_dir / JUDGMENTS_FILE, data)
    return data

