"""Which records' vectors matter? Masks record groups out of the dense side of existing indexes
(their vectors set to zero, as `embedding.skip_kinds` leaves them, or replaced by a related
record's vector) and reports evidence-file recall@5/@10 per question set beside the share of
embedding work (vectors, tokens within the model window) each mask would save. Nothing is
re-embedded: the candidates are cheap to rank before any rebuild.

    .venv/bin/python eval/bench_embed_less.py \
        --v2 embeddings/ippl --v2-questions ../shared/benchmarks/ippl/questions_v2.json \
        --v2-references ../shared/benchmarks/ippl/reference_answers_v2.json \
        --dev ../shared/benchmarks/dev/questions.json \
        --dev-index TeaLeaf=embeddings/TeaLeaf --dev-index ExaMiniMD=embeddings/ExaMiniMD \
        [--mask call_chain --mask module ...] [--window entities=64 --window code=96]

`--window GROUP=TOKENS` re-embeds only that group's records with a shorter model window (ONNX
float32; groups: code, entities = file/module/call_chain/doc_section/script/build) and puts
those vectors in place of the index's: a window per kind, measured before any rebuild.

BM25, exact lookups and the records themselves are untouched; only `store.vectors` and the
FAISS index change (dense search, file-scoped similarity, expansion picks, confidence).
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from codeteacher.api import Engine
from codeteacher.contracts.settings import EmbeddingSettings, load_settings
from codeteacher.evaluation.metrics import corpus_name_map
from codeteacher.index.layout import chain_root, embed_text

sys.path.insert(0, str(Path(__file__).parent))
from bench_retrieval import evaluate_ours, gold_of, load_sets  # noqa: E402

CODE = {"function", "method", "constructor", "destructor", "operator", "class", "struct",
        "union", "enum", "typedef", "macro"}


def _lines(r) -> int:
    return r.end_line - r.start_line + 1


# name -> predicate over a record: True = its vector is masked (zeroed)
MASKS = {
    "call_chain": lambda r: r.kind == "call_chain",
    "module": lambda r: r.kind == "module",
    "file": lambda r: r.kind == "file",
    "doc_section": lambda r: r.kind == "doc_section",
    "script+build": lambda r: r.kind in ("script", "build"),
    "in-class declarations": lambda r: r.is_declaration and r.kind != "declaration",
    "code <= 2 lines": lambda r: r.kind in CODE and _lines(r) <= 2,
    "code <= 3 lines": lambda r: r.kind in CODE and _lines(r) <= 3,
    "code <= 5 lines": lambda r: r.kind in CODE and _lines(r) <= 5,
    "typedef+macro": lambda r: r.kind in ("typedef", "macro"),
    "destructor": lambda r: r.kind == "destructor",
    "call_chain+module": lambda r: r.kind in ("call_chain", "module"),
}
GROUPS = {"code": lambda r: r.kind in CODE,
          "entities": lambda r: r.kind in ("file", "module", "call_chain", "doc_section",
                                           "script", "build")}
# masks whose records take a related record's vector instead of zero
SUBSTITUTE = {
    "call_chain = root's vector": "call_chain",
}


def _substitute(store, base: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    vec, masked = base.copy(), np.zeros(len(store.records), dtype=bool)
    for i, r in enumerate(store.records):
        if r.kind == kind == "call_chain":
            root = store.by_id.get(chain_root(r.id) or "")
            vec[i] = base[root] if root is not None else 0.0
            masked[i] = True
    return vec, masked


def _rewindow(store, base: np.ndarray, es: EmbeddingSettings, spec: str, tokens: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """Vectors with the group's records re-embedded at a shorter window; their token costs."""
    from codeteacher.embedding import load_embedder

    group, _, n = spec.partition("=")
    sel = [i for i, r in enumerate(store.records) if GROUPS[group](r) and tokens[i] > 0]
    short = es.model_copy(update={"max_seq_length": int(n), "backend": "onnx",
                                  "quantize": "none"})
    vec, cost = base.copy(), tokens.copy()
    texts = [embed_text(store.records[i], es.max_code_chars) for i in sel]
    vec[sel] = load_embedder(short).embed(texts)
    cost[sel] = _tokens(store, short)[sel]
    return vec, cost


def _tokens(store, es: EmbeddingSettings) -> np.ndarray:
    """Tokens each record costs the model (0 for kinds the index never embedded)."""
    from tokenizers import Tokenizer

    from codeteacher.embedding import resolve_model_path

    tok = Tokenizer.from_file(str(Path(resolve_model_path(es.model)) / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(es.max_seq_length)
    texts = [embed_text(r, es.max_code_chars) for r in store.records]
    n = np.array([len(e.ids) for e in tok.encode_batch(texts)])
    return np.where([r.kind in es.skip_kinds for r in store.records], 0, n)


def run(qset, settings, masks: list[str], windows: list[str]) -> dict:
    import faiss

    engine = Engine.load(qset.index, settings)
    engine.search("warm up the models")
    store = engine.store
    names = corpus_name_map(store.manifest.files)
    gold = {q["id"]: gold_of(qset, q, names) for q in qset.questions}
    base = np.array(store.vectors, dtype=np.float32)
    es = EmbeddingSettings.model_validate(store.manifest.embedding)
    tokens = _tokens(store, es)
    out = {}
    for label in ["as built", *masks, *windows]:
        cost = tokens
        if label in windows:
            vec, cost = _rewindow(store, base, es, label, tokens)
            masked = np.zeros(len(vec), dtype=bool)
        elif label in SUBSTITUTE:
            vec, masked = _substitute(store, base, SUBSTITUTE[label])
        else:
            masked = np.array([label != "as built" and MASKS[label](r) for r in store.records])
            vec = base.copy()
            vec[masked] = 0.0
        index = faiss.IndexFlatIP(vec.shape[1])
        index.add(vec)
        store.vectors, store.faiss = vec, index
        res = evaluate_ours(engine, qset, gold)["recall"]["ALL"]
        embedded = (tokens > 0) & ~masked
        out[label] = {**res, "vectors": int(embedded.sum()),
                      "token_share": float(cost[embedded].sum() / tokens.sum())}
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--v2", "--index", metavar="INDEX")
    ap.add_argument("--v2-questions", "--questions")
    ap.add_argument("--v2-references", "--references")
    ap.add_argument("--dev", metavar="QUESTIONS")
    ap.add_argument("--dev-index", action="append", default=[], metavar="NAME=INDEX")
    ap.add_argument("--settings")
    ap.add_argument("--mask", action="append", default=[],
                    help=f"masks to try (default all): {', '.join([*MASKS, *SUBSTITUTE])}")
    ap.add_argument("--window", action="append", default=[], metavar="GROUP=TOKENS",
                    help=f"re-embed a group at a shorter window ({', '.join(GROUPS)})")
    args = ap.parse_args()
    masks = args.mask or ([] if args.window else [*MASKS, *SUBSTITUTE])
    bad = [w for w in args.window if w.partition("=")[0] not in GROUPS
           or not w.partition("=")[2].isdigit()]
    if bad:
        raise SystemExit(f"error: --window wants GROUP=TOKENS with GROUP in {list(GROUPS)}")
    unknown = [m for m in masks if m not in MASKS and m not in SUBSTITUTE]
    if unknown:
        raise SystemExit(f"error: unknown mask {unknown[0]!r}")
    settings = load_settings(args.settings)
    results = {q.name: run(q, settings, masks, args.window) for q in load_sets(args)}
    con = Console(width=int(os.environ.get("COLUMNS", 200)))
    t = Table(title="dense side masked: recall@5 / @10 (delta @5 vs as built); vectors, "
                    "share of embedded tokens kept")
    t.add_column("mask")
    for name in results:
        t.add_column(name, justify="right")
    for label in ["as built", *masks, *args.window]:
        row = [label]
        for name, res in results.items():
            r, b = res[label], res["as built"]
            row.append(f"{r['r@5']:.3f} / {r['r@10']:.3f} ({r['r@5'] - b['r@5']:+.3f}); "
                       f"{r['vectors']} v, {r['token_share']:.0%} tok")
        t.add_row(*row)
    con.print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
