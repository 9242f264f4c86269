"""Retrieval benchmark: evidence-file recall@5/@10 per question set and per category, with two
peers computed in the same run beside ours, warm query latency, and an ablation of the online
retrieval parts (each switched off in turn).

    .venv/bin/python eval/bench_retrieval.py \
        --v2 embeddings/ippl --v2-questions ../shared/benchmarks/ippl/questions_v2.json \
        --v2-references ../shared/benchmarks/ippl/reference_answers_v2.json \
        --dev ../shared/benchmarks/dev/questions.json \
        --dev-index TeaLeaf=embeddings/TeaLeaf --dev-index ExaMiniMD=embeddings/ExaMiniMD \
        [--ablation] [--json OUT] [--show-misses]

Question sets:
- v2 (IPPL public questions): gold files follow the evaluation rule
  (codeteacher.evaluation.metrics.gold_files): the file names in the reference answer, else in
  the question, kept where the corpus has such a file; matched by base name.
- dev sets (a questions.json with `gold_files` relative to the repository root, one index per
  corpus): matched by full repository-relative path.

Peers (same questions, same gold, same k):
- `bm25 files`: BM25 over whole files (the file's full text, our identifier-aware tokenizer),
  one item per file: the simplest naive file search.
- `fused`: dense (FAISS) + chunk BM25 fused by reciprocal rank, no rerank, expansion, routing,
  lookups or per-file limits: the plain hybrid RAG baseline.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path, PurePosixPath

import numpy as np
from rich.console import Console
from rich.table import Table

from codeteacher.api import Engine
from codeteacher.evaluation.metrics import corpus_name_map, gold_files

from codeteacher.contracts.errors import UserError
from codeteacher.contracts.settings import load_settings
from codeteacher.index.lexical import LexicalIndex, tokenize

# Each ablation switches one part of the online stage off (settings path -> value).
ABLATIONS = {
    "full": {},
    "no routing": {"routing.enabled": False},
    "no rerank": {"rerank.enabled": False},
    "no expansion": {"expansion.enabled": False},
    "no context filter": {"context_filter.enabled": False},
    "no exact tokens": {"retrieval.exact_tokens.enabled": False},
    "no names beside a kind noun": {"retrieval.kind_noun_cue": ""},
    "no file channel": {"retrieval.file_channel.enabled": False},
    "no name family cap": {"retrieval.max_per_name": None},
    "no plainest port": {"retrieval.plainest_variant": False},
    "no plainest port folder": {"retrieval.plainest_port": False},
    "no device-code rule": {"retrieval.device_constructs": ""},
    "no document cap": {"retrieval.max_doc_files": None},
    "no option-code cue": {"rerank.weights.option_code": 0.0},
    "no threaded port for threads": {"retrieval.thread_cue": r"(?!)"},
    "no base-class channel": {"retrieval.base_classes.enabled": False},
    "no other-port demotion": {"retrieval.other_port_share": 2.0},
    "no mirrored-folder family": {"retrieval.mirror_share": 2.0},
    "no identical-copy merge": {"retrieval.one_of_identical": False},
    "no reference-named port": {"retrieval.reference_port_cue": ""},
    "no callees elsewhere": {f"expansion.profiles.{p}.callees": 0
                             for p in ("minimal", "balanced", "broad")},
    "no callers elsewhere": {f"expansion.profiles.{p}.callers": 0
                             for p in ("minimal", "balanced", "broad")},
    "neighbours by similarity alone": {"expansion.neighbour_order": "similarity"},
    "trivial chunks stand for their file": {"retrieval.skip_trivial_inner": False},
    "other projects' copies not ranked down": {"rerank.weights.third_party": 0.0},
    "licensed own parts taken for copies": {"rerank.third_party_own_parts": False},
    "documents keep their place": {"retrieval.doc_after": 0},
    "no enclosing reference port": {"retrieval.enclosing_reference": False},
    "no enclosed variants": {"retrieval.enclosed_variants": False},
    "no plainest among ports named alike": {"retrieval.named_port_tie_plainest": False},
    "no twin of the best match": {f"expansion.profiles.{p}.twin": 0
                                  for p in ("minimal", "balanced", "broad")},
    "other build tool not ranked down": {"rerank.weights.other_build_tool": 0.0},
    "no includers of a named file": {f"expansion.profiles.{p}.includers": 0
                                     for p in ("minimal", "balanced", "broad")},
    "no linked build files": {f"expansion.profiles.{p}.build_links": 0
                              for p in ("minimal", "balanced", "broad")},
    "no build files setting a tested macro": {f"expansion.profiles.{p}.macro_builds": 0
                                              for p in ("minimal", "balanced", "broad")},
    "generated files not ranked down": {"rerank.weights.generated": 0.0},
    "output code not ranked down": {"rerank.weights.output_code": 0.0},
    "no data-structure words": {"routing.entity_cues.class":
                                r"\b(class|struct|type|template)(es|s)?\b"},
    "1 data file, 2 documents, examples off-scope": {"retrieval.max_data_files": 1,
                                      "retrieval.max_doc_files": 2,
                                      "rerank.off_scopes": ["test", "build", "example"]},
    "carried only items of a file dropped": {"context_filter.keep_files": False},
    "'called' always a call": {"routing.naming_cue": ""},
    "3 per file": {"retrieval.max_per_file": 3},
    "folders kept": {"retrieval.modules_as_files": False},
    # Tried and off by default: switched ON here to show what they would do.
    "+ feedback (PRF)": {"retrieval.feedback.enabled": True},
    "+ quoted numbers": {"retrieval.exact_tokens.numbers": True},
    "+ in-scope list for build questions": {"retrieval.scope_channel.enabled": True},
    "+ other-file expansion": {f"expansion.profiles.{p}.{r}": 1
                               for p in ("minimal", "balanced", "broad")
                               for r in ("twin", "build", "bases")}
                              | {"expansion.twin_seeds": 4, "expansion.twin_decay": 0.9},
}
K_MAX = 10


def with_overrides(settings, overrides: dict):
    data = settings.model_dump()
    for dotted, value in overrides.items():
        node = data
        *parents, leaf = dotted.split(".")
        for p in parents:
            node = node[p]
        node[leaf] = value
    return type(settings).model_validate(data)


def parse_variant(spec: str) -> dict:
    """`a.b=1;c.d="x"` -> {"a.b": 1, "c.d": "x"}: one settings variant (values are JSON)."""
    out = {}
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        dotted, sep, raw = part.partition("=")
        if not sep:
            raise SystemExit(f"error: --vary expects PATH=JSON, got {part!r}")
        try:
            out[dotted.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            raise SystemExit(f"error: --vary value of {dotted.strip()} is not JSON: {raw!r}")
    return out


def _recall(gold: list[str], got: list[str], k: int) -> float:
    seen = set(got[:k])
    return sum(1 for g in gold if g in seen) / len(gold)


class QuestionSet:
    """Questions of one corpus with their gold files and how files are compared."""

    def __init__(self, name: str, index: str, questions: list[dict], by_basename: bool):
        self.name, self.index, self.questions, self.by_basename = name, index, questions, \
            by_basename

    def key(self, path: str) -> str:
        return PurePosixPath(path).name.lower() if self.by_basename else path


def read_questions(path: str) -> list[dict]:
    """The questions of one dev-format file; an unreadable or malformed file is a one-line
    error, and so is a question without its corpus, text or gold files."""
    try:
        qs = json.loads(Path(path).read_text(encoding="utf-8"))["questions"]
        for q in qs:
            q["corpus"], q["question"], q["gold_files"]  # noqa: B018 -- presence check
    except OSError as exc:
        raise SystemExit(f"error: cannot read questions {path}: {exc.strerror}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"error: {path} is not a dev-format question file "
                         f"({type(exc).__name__}: {exc})".splitlines()[0]) from None
    return qs


def load_sets(args) -> list[QuestionSet]:
    sets = []
    if args.v2:
        qs = json.loads(Path(args.v2_questions).read_text())["questions"]
        refs = {a["id"]: a["answer"]
                for a in json.loads(Path(args.v2_references).read_text())["answers"]}
        sets.append(QuestionSet("v2", args.v2, [{**q, "_ref": refs.get(q["id"], "")}
                                                for q in qs], by_basename=True))
    if args.dev:
        dev = [q for f in args.dev for q in read_questions(f)]
        for spec in args.dev_index:
            name, _, index = spec.partition("=")
            qs = [q for q in dev if q["corpus"] == name]
            if not qs:
                raise SystemExit(f"error: no dev questions for corpus '{name}'")
            sets.append(QuestionSet(name, index, qs, by_basename=False))
    if not sets:
        raise SystemExit("error: give --v2 and/or --dev with --dev-index NAME=INDEX")
    return sets


def gold_of(qset: QuestionSet, q: dict, corpus_names: dict) -> list[str]:
    if qset.by_basename:
        gold, _ = gold_files(q.get("_ref", ""), q["question"], corpus_names)
        return [g.lower() for g in gold]
    return list(q["gold_files"])


class FilePeer:
    """BM25 over whole files of the index's repository."""

    def __init__(self, store):
        self.paths = sorted(store.manifest.files)
        docs = []
        for p in self.paths:
            try:
                text = (store.root / p).read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            docs.append(tokenize(p.replace("/", " ").replace(".", " ") + " " + text))
        self.bm25 = LexicalIndex.build(docs)

    def search(self, question: str, k: int) -> list[str]:
        s = self.bm25.scores(tokenize(question))
        order = np.argsort(-s)[:k]
        return [self.paths[i] for i in order if s[i] > 0]


def fused_peer(engine: Engine, question: str, k: int) -> list[str]:
    """Dense + chunk BM25 by reciprocal rank; nothing else."""
    store, rs = engine.store, engine.settings.retrieval
    qvec = engine.embedder.embed([question])[0]
    fused: dict[int, float] = defaultdict(float)
    _, ids = store.faiss.search(qvec.reshape(1, -1), min(rs.dense_k, len(store.records)))
    for rank, i in enumerate(i for i in ids[0] if i >= 0):
        fused[int(i)] += 1.0 / (rs.rrf_k + rank + 1)
    lex = store.lexical.scores(tokenize(question))
    top = np.argsort(-lex)[: rs.lexical_k]
    for rank, i in enumerate(i for i in top if lex[i] > 0):
        fused[int(i)] += 1.0 / (rs.rrf_k + rank + 1)
    best = sorted(fused, key=lambda i: -fused[i])[:k]
    return [store.records[i].path for i in best]


def evaluate_ours(engine: Engine, qset: QuestionSet, gold: dict) -> dict:
    per_cat: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    latencies, misses, tops, per_q = [], [], {}, {}
    for q in qset.questions:
        t0 = time.perf_counter()
        hits = engine.search(q["question"], k=K_MAX)
        latencies.append((time.perf_counter() - t0) * 1000)
        g = gold[q["id"]]
        if not g:
            continue
        got = [qset.key(h.chunk.path) for h in hits]
        tops[q["id"]] = got
        _add(per_cat, q["category"], g, got, per_q, q["id"])
        if _recall(g, got, 5) < 1:
            misses.append({"id": q["id"], "gold": g, "top5": got[:5],
                           "why": [h.why[:3] for h in hits[:5]]})
    lat = sorted(latencies)
    return {"recall": _means(per_cat), "p50_ms": round(lat[len(lat) // 2], 1),
            "p95_ms": round(lat[max(0, int(len(lat) * 0.95) - 1)], 1), "misses": misses,
            "tops": tops, "per_question": per_q}


def evaluate(engine: Engine, questions: list[dict], refs: dict[str, str]) -> dict:
    """v2-style run of our pipeline on one index (used by bench_ingest.py)."""
    qset = QuestionSet("v2", str(engine.store.path),
                       [{**q, "_ref": refs.get(q["id"], "")} for q in questions], by_basename=True)
    names = corpus_name_map(engine.store.manifest.files)
    return evaluate_ours(engine, qset, {q["id"]: gold_of(qset, q, names) for q in qset.questions})


def _add(per_cat, category: str, gold: list[str], got: list[str], per_q: dict, qid: str) -> None:
    per_q[qid] = [_recall(gold, got, k) for k in (5, 10)]
    for k, r in zip((5, 10), per_q[qid]):
        per_cat[category][f"r@{k}"].append(r)
        per_cat["ALL"][f"r@{k}"].append(r)


def paired(results: dict, label: str, against: str = "full", resamples: int = 2000) -> dict:
    """`label` against `against` over every question of every set, paired by question:
    the mean recall@5 difference with a bootstrap 95% interval (questions resampled, seed
    fixed), and how many sets it moves up and down. A 12-question set moves by 1/12 of a
    question's recall at a time, so one set's +/-0.03 is one question; the interval says
    whether a change is more than that."""
    diffs, up, down = [], 0, 0
    for res in results.values():
        a, b = res[against]["per_question"], res[label]["per_question"]
        d = [b[q][0] - a[q][0] for q in a if q in b]
        diffs += d
        mean = sum(d) / len(d) if d else 0.0
        up, down = up + (mean > 1e-9), down + (mean < -1e-9)
    x = np.asarray(diffs, dtype=float)
    if not len(x):
        return {"n": 0, "mean": 0.0, "low": 0.0, "high": 0.0, "sets_up": 0, "sets_down": 0}
    rng = np.random.default_rng(0)
    boot = x[rng.integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)
    return {"n": len(x), "mean": round(float(x.mean()), 3),
            "low": round(float(np.percentile(boot, 2.5)), 3),
            "high": round(float(np.percentile(boot, 97.5)), 3),
            "sets_up": int(up), "sets_down": int(down)}


def _means(per_cat) -> dict:
    return {c: {m: round(statistics.mean(v), 3) for m, v in d.items()} | {"n": len(d["r@5"])}
            for c, d in per_cat.items()}


def evaluate_peer(search_fn, qset: QuestionSet, gold: dict) -> dict:
    per_cat: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    # As for ours: --json shows what a peer finds that we do not, and its ranked lists let a
    # fusion with ours be studied offline.
    misses, per_q, tops = [], {}, {}
    for q in qset.questions:
        g = gold[q["id"]]
        if g:
            got = [qset.key(p) for p in search_fn(q["question"])]
            tops[q["id"]] = got
            _add(per_cat, q["category"], g, got, per_q, q["id"])
            if _recall(g, got, 5) < 1:
                misses.append({"id": q["id"], "gold": g, "top5": got[:5]})
    return {"recall": _means(per_cat), "misses": misses, "tops": tops, "per_question": per_q}


def run_set(qset: QuestionSet, base, runs: dict) -> dict:
    engine = Engine.load(qset.index, base)
    engine.search("warm up the models")
    names = corpus_name_map(engine.store.manifest.files)
    gold = {q["id"]: gold_of(qset, q, names) for q in qset.questions}
    out: dict[str, dict] = {}
    t0 = time.perf_counter()
    peer = FilePeer(engine.store)
    out["bm25 files"] = evaluate_peer(lambda q: peer.search(q, K_MAX), qset, gold)
    out["bm25 files"]["build_s"] = round(time.perf_counter() - t0, 2)
    out["fused"] = evaluate_peer(lambda q: fused_peer(engine, q, K_MAX), qset, gold)
    for label, overrides in runs.items():
        engine.settings = with_overrides(base, overrides)
        engine.search("warm up")
        out[label] = evaluate_ours(engine, qset, gold)
    return out


def print_set(con: Console, name: str, results: dict) -> None:
    cats = sorted({c for r in results.values() for c in r["recall"]},
                  key=lambda c: (c == "ALL", c))
    table = Table(title=f"{name}: evidence-file recall@5 / @10")
    table.add_column("category")
    table.add_column("n", justify="right")
    for label in results:
        table.add_column(label, justify="right")
    for c in cats:
        first = results["full"]["recall"].get(c, {})
        row = [c, str(first.get("n", 0))]
        for r in results.values():
            m = r["recall"].get(c)
            row.append(f"{m['r@5']:.2f} / {m['r@10']:.2f}" if m else "-")
        table.add_row(*row)
    table.add_row("latency p50 / p95 ms", "",
                  *[f"{r['p50_ms']} / {r['p95_ms']}" if "p50_ms" in r else ""
                    for r in results.values()])
    con.print(table)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--v2", "--index", metavar="INDEX", help="IPPL index for the v2 questions")
    ap.add_argument("--v2-questions", "--questions")
    ap.add_argument("--v2-references", "--references")
    ap.add_argument("--dev", action="append", default=[], metavar="QUESTIONS",
                    help="a dev-format questions file (gold_files); repeatable, the files' "
                         "questions are pooled and split by corpus")
    ap.add_argument("--dev-index", action="append", default=[], metavar="NAME=INDEX")
    ap.add_argument("--settings")
    ap.add_argument("--ablation", action="store_true")
    ap.add_argument("--only", action="append", default=[], metavar="LABEL",
                    help="run only these ablation labels (with --ablation)")
    ap.add_argument("--vary", action="append", default=[], metavar="PATH=JSON[;PATH=JSON]",
                    help="a settings variant run beside full (e.g. "
                         "'rerank.weights.file_support=0.002'); repeatable")
    ap.add_argument("--json")
    ap.add_argument("--show-misses", action="store_true")
    args = ap.parse_args()
    if args.v2 and not (args.v2_questions and args.v2_references):
        raise SystemExit("error: --v2 needs --v2-questions and --v2-references")
    base = load_settings(args.settings)
    runs = ABLATIONS if args.ablation else {"full": {}}
    if args.only:
        runs = {k: v for k, v in runs.items() if k == "full" or k in args.only}
    for spec in args.vary:
        runs = {**runs, spec: parse_variant(spec)}
    for label, overrides in runs.items():  # a wrong path is an error before any run
        try:
            with_overrides(base, overrides)
        except (KeyError, TypeError, ValueError) as exc:
            raise SystemExit(f"error: settings variant {label!r}: {exc}".splitlines()[0])
    sets = load_sets(args)
    con = Console(width=int(os.environ.get("COLUMNS", 200)))
    results = {}
    for qset in sets:
        results[qset.name] = run_set(qset, base, runs)
        print_set(con, qset.name, results[qset.name])
        if args.show_misses:
            for m in results[qset.name]["full"]["misses"]:
                con.print(f"miss {m['id']}: gold={m['gold']} top5={m['top5']}", markup=False)
    summary = Table(title="ALL questions per set: recall@5 / @10")
    summary.add_column("set")
    labels = list(next(iter(results.values())))
    for label in labels:
        summary.add_column(label, justify="right")
    for name, res in results.items():
        summary.add_row(name, *[f"{res[lb]['recall']['ALL']['r@5']:.3f} / "
                                f"{res[lb]['recall']['ALL']['r@10']:.3f}" for lb in labels])
    con.print(summary)
    against = Table(title="Each run against full, paired by question over all sets: recall@5 "
                          "difference, bootstrap 95% interval, sets moved")
    for col in ("run", "questions", "mean", "95% interval", "sets up", "sets down"):
        against.add_column(col, justify="left" if col == "run" else "right")
    for label in labels:
        if label != "full":
            c = paired(results, label)
            against.add_row(label, str(c["n"]), f"{c['mean']:+.3f}",
                            f"{c['low']:+.3f} .. {c['high']:+.3f}", str(c["sets_up"]),
                            str(c["sets_down"]))
    con.print(against)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except UserError as exc:  # a bad settings file or index: one line, as the CLI says it
        raise SystemExit(f"error: {exc}".splitlines()[0])
