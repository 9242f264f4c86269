"""Deterministic answer scores: evidence-file recall@k, reference-token coverage, abstention,
latency and tokens, per answer and aggregated per category. No model is involved.

Gold files of a question are the file names named in its reference answer (else in the
question), kept where a file of that base name exists in the corpus. Files are matched by base
name, case-insensitively, because answers cite paths relative to whatever root their system
indexed (`src/x.h`, `data/raw/proj/src/x.h`, ...).
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable
from pathlib import PurePosixPath

# A file name: a path-ish stem, a dot, a letter-led extension; `A.h/.cpp` names A.h and A.cpp.
_EXT = r"[A-Za-z][A-Za-z0-9+]{0,5}\b"
_FILE_RE = re.compile(r"[A-Za-z0-9_.+/-]*[A-Za-z0-9_+-]\." + _EXT + r"(?:/\." + _EXT + r")*")
_WORD_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EVIDENCE_HEADER = re.compile(
    r"^[ \t>]*(?:#{1,6}[ \t]*)?[*_]*evidence[*_]*[ \t]*(?::[*_]*|$)[ \t]*(.*)$",
    re.IGNORECASE | re.MULTILINE)

STOP_WORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing done down during each either else
etc few for from further had has have having he her here hers him his how however i if in
into is it its itself just may me might more most must my no nor not now of off on once only
onto or other otherwise our out over own per same she should since so some such than that the
their theirs them then there these they this those through thus to too under until up upon us
use used uses using very via was we were what when where whether which while who whom whose
why will with within without would yet you your
""".split())


# ---- text -------------------------------------------------------------------------------------

def content_words(text: str) -> list[str]:
    """Unique lowercased identifier-like words with 3+ letters, minus stop words, in order."""
    out: dict[str, None] = {}
    for word in _WORD_RE.findall(text or ""):
        low = word.lower()
        if sum(c.isalpha() for c in word) >= 3 and low not in STOP_WORDS:
            out.setdefault(low)
    return list(out)


def reference_coverage(reference: str, answer: str, words: int = 250) -> float | None:
    """Share of the reference's content words found among the answer's first `words` words."""
    ref = content_words(reference)
    if not ref:
        return None
    head = set(content_words(" ".join((answer or "").split()[:words])))
    return sum(1 for w in ref if w in head) / len(ref)


def file_names(text: str) -> list[str]:
    """Base names of the file names written in text, in order of first mention."""
    out: dict[str, None] = {}
    for match in _FILE_RE.finditer(text or ""):
        first, *more_exts = match.group(0).split("/.")
        base = PurePosixPath(first).name
        stem, ext = base.rsplit(".", 1)
        if not stem.strip("._-+") or ("/" not in first and len(stem) == len(ext) == 1):
            continue  # ".h" alone, "e.g", "i.e"
        out.setdefault(base)
        for ext in more_exts:
            out.setdefault(f"{stem}.{ext}")
    return list(out)


def corpus_name_map(paths: Iterable[str]) -> dict[str, str]:
    """lowercased base name -> base name as spelled in the corpus."""
    return {PurePosixPath(p).name.lower(): PurePosixPath(p).name for p in paths}


def gold_files(reference: str, question: str,
               corpus: dict[str, str] | None) -> tuple[list[str], str]:
    """(gold base names, source) with source 'reference', 'question' or '' (none found)."""
    for source, text in (("reference", reference), ("question", question)):
        names = file_names(text)
        if corpus is not None:
            names = [corpus[n.lower()] for n in names if n.lower() in corpus]
        if names:
            return list(dict.fromkeys(names)), source
    return [], ""


def evidence_section(answer: str) -> str | None:
    """The text from the answer's 'Evidence' header on, or None if it has none."""
    match = _EVIDENCE_HEADER.search(answer or "")
    return None if match is None else (answer[match.start(1):])


def evidence_items(answer: str) -> list[list[str]]:
    """Files cited by the answer's Evidence section: one item per line that names a file."""
    section = evidence_section(answer)
    if section is None:
        return []
    return [names for line in section.splitlines() if (names := file_names(line))]


def recall_at_k(gold: list[str], items: list[list[str]], k: int) -> float | None:
    """Share of gold base names found among the files of the first k items."""
    if not gold:
        return None
    seen = {n.lower() for item in items[:k] for n in item}
    return sum(1 for g in gold if g.lower() in seen) / len(gold)


# ---- statistics -------------------------------------------------------------------------------

def mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def std_error(values: list[float]) -> float | None:
    if len(values) < 2:
        return 0.0 if values else None
    m = sum(values) / len(values)
    var = sum((v - m) ** 2 for v in values) / (len(values) - 1)
    return math.sqrt(var / len(values))


def percentile(values: list[float], p: float) -> float | None:
    """Linear-interpolation percentile (numpy's default), p in [0, 100]."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * p / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def pearson(xs: list[float], ys: list[float]) -> float | None:
    if len(xs) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else None


# ---- per answer and per category --------------------------------------------------------------

def score_answer(answer: dict, reference: str | None, corpus: dict[str, str] | None,
                 ks: list[int], coverage_words: int) -> dict:
    """Deterministic scores of one normalized answer (see io.normalize_answer)."""
    gold, source = gold_files(reference or "", answer["question"], corpus)
    row = {"id": answer["id"], "category": answer["category"], "gold_files": gold,
           "gold_source": source, "error": answer["error"],
           "abstained": answer["abstained"], "latency_seconds": answer["latency_seconds"],
           "tokens_in": answer["tokens_in"], "tokens_out": answer["tokens_out"],
           "evidence_source": answer["evidence_source"],
           "ttft_seconds": answer.get("ttft_seconds"), "confidence": answer.get("confidence"),
           "answer_source": answer.get("answer_source", ""),
           "unsupported_names": answer.get("unsupported_names")}
    for k in ks:
        ctx = answer["context_items"]
        row[f"context_recall@{k}"] = None if ctx is None else recall_at_k(gold, ctx, k)
        row[f"answer_recall@{k}"] = recall_at_k(gold, answer["evidence_items"], k)
    # Gold files the answer's own sentences name (the prose before any Evidence list).
    prose = answer.get("answer_prose")
    if prose is None:
        section = evidence_section(answer["answer"])
        prose = answer["answer"][: len(answer["answer"]) - len(section)] if section else \
            answer["answer"]
    row["gold_named"] = recall_at_k(gold, [file_names(prose)], 1)
    row["coverage"] = (None if reference is None
                       else reference_coverage(reference, answer["answer"], coverage_words))
    row["coverage_prose"] = (None if reference is None or prose is None
                             else reference_coverage(reference, prose, coverage_words))
    return row


def _values(rows: list[dict], key: str) -> list[float]:
    return [float(r[key]) for r in rows if r.get(key) is not None]


def aggregate(rows: list[dict], ks: list[int]) -> dict:
    """Summary of scored rows (one group): means, rates, percentiles, judge mean ± SE."""
    out: dict = {"n": len(rows), "errors": sum(1 for r in rows if r["error"]),
                 "with_gold": sum(1 for r in rows if r["gold_files"])}
    for k in ks:
        for kind in ("context", "answer"):
            out[f"{kind}_recall@{k}"] = mean(_values(rows, f"{kind}_recall@{k}"))
    out["coverage"] = mean(_values(rows, "coverage"))
    out["gold_named"] = mean(_values(rows, "gold_named"))
    out["coverage_prose"] = mean(_values(rows, "coverage_prose"))
    abst = _values(rows, "abstained")
    out["abstention_rate"] = mean(abst)
    names = [r["unsupported_names"] for r in rows if isinstance(r.get("unsupported_names"), list)]
    # Share of answers whose prose names a file or symbol the context did not hold.
    out["unsupported_rate"] = mean([float(bool(n)) for n in names])
    out["unsupported_per_answer"] = mean([float(len(n)) for n in names])
    ttft = _values(rows, "ttft_seconds")
    out["ttft_p50"] = percentile(ttft, 50)
    out["ttft_p95"] = percentile(ttft, 95)
    sources: dict[str, int] = defaultdict(int)
    for r in rows:
        if r.get("answer_source"):
            sources[r["answer_source"]] += 1
    out["answer_sources"] = dict(sources)
    lat = _values(rows, "latency_seconds")
    out["latency_p50"] = percentile(lat, 50)
    out["latency_p95"] = percentile(lat, 95)
    out["latency_mean"] = mean(lat)
    for key in ("tokens_in", "tokens_out"):
        vals = _values(rows, key)
        out[f"{key}_mean"] = mean(vals)
        out[f"{key}_total"] = int(sum(vals)) if vals else None
    judged = [r for r in rows if r.get("verdict")]
    if judged:
        scores = _values(judged, "judge_score")
        out["judge_mean"] = mean(scores)
        out["judge_se"] = std_error(scores)
        for label in ("Correct", "Partial", "Incorrect", "unparseable"):
            out[f"judge_{label.lower()}"] = sum(1 for r in judged if r["verdict"] == label)
    return out


def aggregate_by_category(rows: list[dict], ks: list[int]) -> dict[str, dict]:
    """{'overall': summary, <category>: summary, ...} (categories in order of appearance)."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[r["category"] or "uncategorized"].append(r)
    out = {"overall": aggregate(rows, ks)}
    out.update({cat: aggregate(items, ks) for cat, items in groups.items()})
    return out
