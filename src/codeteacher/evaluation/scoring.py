"""Scores of one answers file (ours or the paper's schema): deterministic metrics per answer and
per category, merged with the judge's verdicts where a run has them (judgments.json)."""
from __future__ import annotations

from pathlib import Path

from ..contracts.jsonio import read_json
from ..contracts.settings.evaluation import EvalSettings
from .io import ANSWERS_FILE, normalize_answer
from .metrics import aggregate_by_category, corpus_name_map, score_answer

SCORES_SCHEMA = "codeteacher-eval-scores/v1"
JUDGMENTS_FILE = "judgments.json"


def load_judgments(run_dir: Path) -> dict:
    path = Path(run_dir) / JUDGMENTS_FILE
    if not path.is_file():
        return {"judge": None, "verdicts": {}}
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("verdicts"), dict):
        return {"judge": None, "verdicts": {}}
    return data


def run_label(doc: dict, path: Path) -> str:
    meta = doc.get("run_metadata") if isinstance(doc.get("run_metadata"), dict) else {}
    label = meta.get("run_label")
    if label:
        return str(label)
    path = Path(path)
    return path.parent.name if path.name == ANSWERS_FILE else path.stem


def score_run(doc: dict, references: dict[str, str], corpus_files: list[str] | None,
              cfg: EvalSettings, label: str = "", judgments: dict | None = None,
              question_count: int | None = None) -> dict:
    """scores.json content for an answers document."""
    corpus = corpus_name_map(corpus_files) if corpus_files is not None else None
    ks = list(cfg.recall_ks)
    verdicts = (judgments or {}).get("verdicts", {})
    rows = []
    for rec in doc["answers"]:
        ans = normalize_answer(rec)
        row = score_answer(ans, references.get(ans["id"]), corpus, ks, cfg.coverage_words)
        v = verdicts.get(ans["id"])
        if v and v.get("verdict"):
            row.update(verdict=v["verdict"], judge_score=v.get("score"),
                       judge_reason=v.get("reason", ""))
        rows.append(row)
    judge = (judgments or {}).get("judge")
    return {
        "schema": SCORES_SCHEMA,
        "run": label,
        "complete": bool(doc.get("run_complete", False)),
        "answered": len(rows),
        "questions": question_count if question_count is not None else len(rows),
        "references": len(references),
        "gold_restricted_to_corpus": corpus is not None,
        "corpus_files": len(corpus_files) if corpus_files is not None else None,
        "recall_ks": ks,
        "coverage_words": cfg.coverage_words,
        "judge": judge or {"enabled": False},
        "no_gold": [r["id"] for r in rows if not r["gold_files"]],
        "summary": aggregate_by_category(rows, ks),
        "per_answer": rows,
    }



def compare_runs(runs: list[str | Path], cfg: EvalSettings, references_path=None,
                 corpus_files: list[str] | None = None) -> list[dict]:
    """Scores of several runs (run directories or answer files of either schema), computed
    the same way. References: the given file, else the one a run recorded. Gold files: the
    given corpus list, else the file list of the run's own index manifest, else unrestricted.
    Judge verdicts are those a run directory holds (compare never calls a model)."""
    from .io import answers_path, load_answers, load_references

    explicit_refs = load_references(references_path) if references_path else None
    out = []
    for run in runs:
        path = answers_path(run)
        doc = load_answers(run)
        meta = doc.get("run_metadata") if isinstance(doc.get("run_metadata"), dict) else {}
        refs = explicit_refs
        if refs is None:
            src = meta.get("references_source")
            refs = load_references(src) if src and Path(src).is_file() else {}
        corpus = corpus_files
        files = (doc.get("vector_store_manifest") or {}).get("files")
        if corpus is None and isinstance(files, dict) and files:
            corpus = list(files)
        judgments = _run_verdicts(path.parent) if path.name == ANSWERS_FILE else None
        out.append(score_run(doc, refs, corpus, cfg, label=run_label(doc, path),
                             judgments=judgments))
    labels = [s["run"] for s in out]
    for i, s in enumerate(out):  # keep column titles apart
        if labels.count(s["run"]) > 1:
            s["run"] = f"{s['run']} ({i + 1})"
    return out


def _run_verdicts(run_dir: Path) -> dict | None:
    """The verdicts a run's last scoring used (scores.json), as judgments."""
    path = run_dir / "scores.json"
    if not path.is_file():
        return None
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("per_answer"), list):
        return None
    verdicts = {r["id"]: {"verdict": r["verdict"], "score": r.get("judge_score"),
                          "reason": r.get("judge_reason", "")}
                for r in data["per_answer"] if isinstance(r, dict) and r.get("verdict")}
    return {"judge": data.get("judge"), "verdicts": verdicts}
