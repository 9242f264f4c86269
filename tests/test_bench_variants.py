"""`eval/bench_retrieval.py --vary`: a settings variant measured beside the full pipeline. Bad
variants are one-line errors before any index is loaded."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "eval" / "bench_retrieval.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_retrieval", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_variant_is_dotted_paths_with_json_values():
    parse = _bench().parse_variant
    assert parse('rerank.weights.file_support=0.002; retrieval.reference_port_cue=""') == {
        "rerank.weights.file_support": 0.002, "retrieval.reference_port_cue": ""}
    assert parse("expansion.profiles.minimal.callees=0") == {
        "expansion.profiles.minimal.callees": 0}


def _run(*args):
    return subprocess.run([sys.executable, str(BENCH), "--dev", "missing.json",
                           "--dev-index", "X=missing", *args],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_bad_variants_fail_in_one_line_before_any_index_is_read():
    for variant, says in (("rerank.weights.file_support", "expects PATH=JSON"),
                          ("rerank.top_n=abc", "is not JSON"),
                          ("rerank.no_such_weight=1", "settings variant"),
                          ("nowhere.at_all=1", "settings variant")):
        done = _run("--vary", variant)
        assert done.returncode != 0, variant
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0] and "Traceback" not in done.stderr, \
            (variant, done.stderr)


def test_a_run_is_compared_with_full_question_by_question():
    paired = _bench().paired
    # Set A: the run finds one more question fully; set B: it loses half of one question.
    results = {
        "A": {"full": {"per_question": {"a1": [0.0, 1.0], "a2": [1.0, 1.0]}},
              "run": {"per_question": {"a1": [1.0, 1.0], "a2": [1.0, 1.0]}}},
        "B": {"full": {"per_question": {"b1": [1.0, 1.0], "b2": [0.5, 1.0]}},
              "run": {"per_question": {"b1": [0.5, 1.0], "b2": [0.5, 1.0]}}},
    }
    c = paired(results, "run")
    assert (c["n"], c["mean"], c["sets_up"], c["sets_down"]) == (4, 0.125, 1, 1)
    assert c["low"] < 0 < c["mean"] < c["high"] <= 1.0
    same = paired(results, "full")
    assert (same["mean"], same["low"], same["high"], same["sets_up"]) == (0.0, 0.0, 0.0, 0)


def test_unreadable_or_malformed_question_files_fail_in_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"questions": [{"id": "q1", "question": "where?"}]}')
    for path, says in ((tmp_path / "absent.json", "cannot read questions"),
                       (bad, "not a dev-format question file")):
        done = subprocess.run([sys.executable, str(BENCH), "--dev", str(path),
                               "--dev-index", "X=missing"],
                              capture_output=True, text=True, timeout=120, cwd=ROOT)
        lines = done.stderr.strip().splitlines()
        assert done.returncode != 0 and len(lines) == 1 and says in lines[0], done.stderr
        assert "Traceback" not in done.stderr


def test_several_question_files_are_pooled_and_split_by_corpus(tmp_path):
    import argparse
    import json

    def q(i, corpus):
        return {"id": i, "corpus": corpus, "question": "where?", "gold_files": ["a.c"]}
    (tmp_path / "one.json").write_text(json.dumps({"questions": [q("a1", "A"), q("b1", "B")]}))
    (tmp_path / "two.json").write_text(json.dumps({"questions": [q("a2", "A")]}))
    args = argparse.Namespace(v2=None, dev=[str(tmp_path / "one.json"),
                                            str(tmp_path / "two.json")],
                              dev_index=["A=ixA", "B=ixB"])
    sets = _bench().load_sets(args)
    assert [(s.name, [x["id"] for x in s.questions]) for s in sets] == [
        ("A", ["a1", "a2"]), ("B", ["b1"])]


def test_the_peers_ranked_files_are_kept_beside_their_recall(minipic_index, default_settings):
    """--json keeps each peer's ranked files, as it keeps ours, so a fusion of the lists can
    be studied offline; the recall stored beside them is the recall of those very lists."""
    from codeteacher.api import Engine

    bench = _bench()
    question = {"id": "m1", "corpus": "minipic", "category": "algorithm",
                "question": "How is the charge of each particle deposited onto the grid?",
                "gold_files": ["src/deposit.cpp", "src/fft_poisson.cpp"]}
    qset = bench.QuestionSet("minipic", str(minipic_index), [question], by_basename=False)
    out = bench.run_set(qset, default_settings, {"full": {}})
    peer = bench.FilePeer(Engine.load(str(minipic_index)).store)
    expected = peer.search(question["question"], bench.K_MAX)
    assert expected and out["bm25 files"]["tops"]["m1"] == expected
    for label in ("bm25 files", "fused", "full"):
        got = out[label]["tops"]["m1"]
        assert out[label]["per_question"]["m1"] == [
            bench._recall(question["gold_files"], got, k) for k in (5, 10)]
