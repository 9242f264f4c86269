"""Human-readable output: report.md of one run, and the side-by-side comparison tables."""
from __future__ import annotations

from ..contracts.settings.generation import PACKAGED_GGUF


def metric_columns(ks: list[int]) -> list[tuple[str, str]]:
    """(summary key, column title) of every score shown, in order."""
    cols = [("n", "n"), ("errors", "errors"), ("with_gold", "gold")]
    cols += [(f"context_recall@{k}", f"ctx R@{k}") for k in ks]
    cols += [(f"answer_recall@{k}", f"ans R@{k}") for k in ks]
    cols += [("coverage", "coverage"), ("coverage_prose", "cov prose"),
             ("gold_named", "gold named"),
             ("abstention_rate", "abstain"),
             ("unsupported_rate", "unsupp"), ("ttft_p50", "ttft p50 s"),
             ("latency_p50", "lat p50 s"), ("latency_p95", "lat p95 s"),
             ("tokens_in_mean", "tok in"), ("tokens_out_mean", "tok out"),
             ("judge", "judge ± SE"), ("judge_counts", "C/P/I/?")]
    return cols


def fmt(key: str, summary: dict) -> str:
    """One cell: a summary's value for key, '–' where it does not apply."""
    if key == "judge":
        m = summary.get("judge_mean")
        return "–" if m is None else f"{m:.3f} ± {summary.get('judge_se') or 0:.3f}"
    if key == "judge_counts":
        if summary.get("judge_mean") is None:
            return "–"
        return "/".join(str(summary.get(f"judge_{x}", 0))
                        for x in ("correct", "partial", "incorrect", "unparseable"))
    value = summary.get(key)
    if value is None:
        return "–"
    if key in ("n", "errors", "with_gold"):
        return str(value)
    if key.startswith("latency"):
        return f"{value:.2f}"
    if key.startswith("tokens"):
        return f"{value:.0f}"
    return f"{value:.3f}"


def judge_line(judge: dict) -> str:
    if judge and judge.get("error"):
        return f"failed ({judge['error']}); rerun to judge"
    if not judge or not judge.get("enabled"):
        return "off (judge backend 'none'; set generation.judge in the settings to grade answers)"
    line = (f"{judge['backend']} / {judge['model']} (prompt {judge.get('prompt')} "
            f"v{judge.get('prompt_version')}, signature {str(judge.get('prompt_signature'))[:12]})")
    if judge.get("model") == PACKAGED_GGUF:
        line += (" — the packaged tiny model: its verdicts exercise the pipeline and are not "
                 "a meaningful grade")
    return line


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def render_report(scores: dict, doc: dict) -> str:
    """report.md of one run."""
    meta = doc.get("run_metadata") or {}
    manifest = doc.get("vector_store_manifest") or {}
    models = doc.get("models") or {}
    answer_model = models.get("answer_model") or {}
    ks = scores["recall_ks"]
    status = ("complete" if scores["complete"] else
              f"incomplete: {scores['answered']} of {scores['questions']} questions answered "
              "(rerun the same command to resume)")
    overall = scores["summary"]["overall"]
    lines = [
        f"# Evaluation: {scores['run']}", "",
        f"- Run: {status}; {overall['errors']} answer(s) failed.",
        f"- Questions: {meta.get('questions_source', '?')}; references: "
        f"{meta.get('references_source') or 'none (no coverage, no judge)'}.",
        f"- Index: {meta.get('index_dir', '?')} (name {manifest.get('name', '?')}, "
        f"{manifest.get('model_id', '?')} embeddings, "
        f"{meta.get('vector_store_chunk_count', '?')} records).",
        f"- Answers: backend {answer_model.get('backend', '?')}, model "
        f"{answer_model.get('model') or '–'}, k = {meta.get('k', '?')}.",
        f"- Judge: {judge_line(scores.get('judge') or {})}.",
        f"- Gold files: named in the reference (else the question), "
        + (f"kept where the index has a file of that name ({scores['corpus_files']} files)"
           if scores["gold_restricted_to_corpus"] else "not restricted to a corpus")
        + f"; {overall['with_gold']} of {overall['n']} answered questions have gold.",
        f"- Recall@k: share of gold files among the first k items of the retrieved context "
        f"(ctx) and of the answer's evidence (ans). Coverage: share of the reference's content "
        f"words in the answer's first {scores['coverage_words']} words.",
        "", "## Scores per category", "",
    ]
    cols = metric_columns(ks)
    rows = [[cat] + [fmt(key, s) for key, _ in cols] for cat, s in scores["summary"].items()]
    lines += [_md_table(["category"] + [t for _, t in cols], rows), ""]
    if scores["no_gold"]:
        lines += ["## Questions without gold files (not scored for recall)", "",
                  ", ".join(scores["no_gold"]), ""]
    lines += ["## Answers", ""]
    k0 = ks[0] if ks else None
    rows = []
    for r in scores["per_answer"]:
        rows.append([r["id"], r["category"], ", ".join(r["gold_files"]) or "–",
                     _num(r.get(f"context_recall@{k0}")), _num(r.get(f"answer_recall@{k0}")),
                     _num(r.get("coverage")), r.get("verdict") or "–",
                     _num(r.get("latency_seconds"), 2),
                     (r["error"] or "").replace("|", "/")[:80] or "–"])
    lines.append(_md_table(["id", "category", "gold", f"ctx R@{k0}", f"ans R@{k0}", "coverage",
                            "verdict", "latency s", "error"], rows))
    reasons = [r for r in scores["per_answer"] if r.get("verdict")]
    if reasons:
        lines += ["", "## Judge verdicts", ""]
        lines += [f"- {r['id']}: {r['verdict']} — {r.get('judge_reason') or '(no reason)'}"
                  for r in reasons]
    return "\n".join(lines) + "\n"


def _num(value, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def compare_tables(all_scores: list[dict]):
    """rich Tables: the overall scores of every run, then one table per score with a row per
    category and a column per run."""
    from rich.table import Table

    labels = [s["run"] for s in all_scores]
    ks = sorted({k for s in all_scores for k in s["recall_ks"]})
    cols = metric_columns(ks)
    overview = Table(title="Overall")
    overview.add_column("score")
    for label in labels:
        overview.add_column(label, justify="right")
    for key, title in cols:
        overview.add_row(title, *[fmt(key, s["summary"]["overall"]) for s in all_scores])
    tables = [overview]
    categories: list[str] = []
    for s in all_scores:
        categories += [c for c in s["summary"] if c not in categories]
    for key, title in cols:
        if all(fmt(key, s["summary"]["overall"]) == "–" for s in all_scores):
            continue
        table = Table(title=title)
        table.add_column("category")
        for label in labels:
            table.add_column(label, justify="right")
        for cat in categories:
            table.add_row(cat, *[fmt(key, s["summary"].get(cat, {})) for s in all_scores])
        tables.append(table)
    return tables
