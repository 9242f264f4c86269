"""Evaluation scores on hand-made inputs: words, coverage, gold files, evidence parsing,
recall@k, statistics, verdict parsing, and the input-file checks."""
from __future__ import annotations

import json
import math

import pytest

from codeteacher.contracts.errors import UserError
from codeteacher.evaluation.io import load_answers, load_questions, load_references
from codeteacher.evaluation.judge import parse_verdict
from codeteacher.evaluation.metrics import (
    aggregate_by_category,
    content_words,
    corpus_name_map,
    evidence_items,
    file_names,
    gold_files,
    percentile,
    recall_at_k,
    reference_coverage,
    std_error,
)


def test_content_words_are_unique_lowercase_identifiers_without_stop_words():
    text = "Defines the `Field` class, with 2 ghosts: field.hpp uses Vec3 and ab."
    assert content_words(text) == ["defines", "field", "class", "ghosts", "hpp", "vec3"]


def test_reference_coverage_known_values():
    ref = "Deposit charge with depositChargeCIC in deposit.cpp"  # deposit charge ...cic cpp
    assert reference_coverage(ref, "The charge is deposited by depositChargeCIC.") == 0.5
    assert reference_coverage(ref, "deposit.cpp: depositChargeCIC deposits charge") == 1.0
    assert reference_coverage(ref, "") == 0.0
    assert reference_coverage("is it in the", "anything") is None


def test_reference_coverage_reads_only_the_first_words():
    ref = "Deposit charge with depositChargeCIC in deposit.cpp"
    answer = "filler " * 250 + "charge depositChargeCIC"
    assert reference_coverage(ref, answer, words=250) == 0.0
    assert reference_coverage(ref, answer, words=252) == 0.5


def test_file_names_handles_paths_suffix_lists_and_abbreviations():
    text = ("See `src/halo_exchange.cpp`, `include/minipic/field.hpp/.cpp`, e.g. "
            "deposit.cpp::depositChargeCIC() and CMakeLists.txt; version 0.3, i.e. nothing.")
    assert file_names(text) == ["halo_exchange.cpp", "field.hpp", "field.cpp", "deposit.cpp",
                                "CMakeLists.txt"]


def test_gold_files_prefer_reference_then_question_and_keep_corpus_files():
    corpus = corpus_name_map(["include/minipic/field.hpp", "src/deposit.cpp"])
    assert gold_files("In field.hpp and missing.hpp.", "Q about deposit.cpp", corpus) == \
        (["field.hpp"], "reference")
    assert gold_files("Only missing.hpp here.", "What does Deposit.CPP do?", corpus) == \
        (["deposit.cpp"], "question")
    assert gold_files("No file at all.", "Why?", corpus) == ([], "")
    assert gold_files("In missing.hpp.", "Why?", None) == (["missing.hpp"], "reference")


def test_evidence_items_from_the_evidence_section_only():
    answer = ("Answer:\nIt is in bar.hpp.\n\n**Evidence:**\n- src/a.cpp : f — x\n"
              "- a note without a file\n- include/b.hpp, src/c.cpp : g\n")
    assert evidence_items(answer) == [["a.cpp"], ["b.hpp", "c.cpp"]]
    assert evidence_items("Answer: it is in bar.hpp.") == []
    assert evidence_items("Evidence suggests a.cpp is used.") == []
    assert evidence_items("## Evidence\n1. x/y/z.h : S") == [["z.h"]]


def test_recall_at_k():
    gold = ["a.cpp", "C.cpp"]
    items = [["x.h"], ["a.cpp"], ["c.cpp", "d.h"]]
    assert recall_at_k(gold, items, 1) == 0.0
    assert recall_at_k(gold, items, 2) == 0.5
    assert recall_at_k(gold, items, 3) == 1.0
    assert recall_at_k([], items, 3) is None


def test_statistics():
    assert percentile([4, 1, 3, 2], 50) == 2.5
    assert math.isclose(percentile([1, 2, 3, 4], 95), 3.85)
    assert percentile([], 50) is None
    assert math.isclose(std_error([1.0, 0.0, 0.5]), math.sqrt(0.25 / 3))
    assert std_error([1.0]) == 0.0


def test_aggregate_per_category_with_judge_scores():
    def row(i, cat, verdict, score, lat):
        return {"id": i, "category": cat, "gold_files": ["a.h"], "error": None,
                "abstained": False, "latency_seconds": lat, "tokens_in": 10, "tokens_out": 5,
                "context_recall@5": 1.0, "answer_recall@5": 0.5, "coverage": 0.4,
                "verdict": verdict, "judge_score": score}
    rows = [row("1", "a", "Correct", 1.0, 1.0), row("2", "a", "Partial", 0.5, 2.0),
            row("3", "b", "unparseable", None, 3.0)]
    summary = aggregate_by_category(rows, [5])
    overall = summary["overall"]
    assert overall["n"] == 3 and overall["judge_mean"] == 0.75
    assert overall["judge_correct"] == 1 and overall["judge_unparseable"] == 1
    assert math.isclose(overall["judge_se"], 0.25)
    assert overall["latency_p50"] == 2.0 and overall["tokens_in_total"] == 30
    assert list(summary) == ["overall", "a", "b"]
    assert summary["b"].get("judge_mean") is None and summary["b"]["judge_unparseable"] == 1


@pytest.mark.parametrize("reply, label, reason", [
    ("Verdict: Correct - names depositChargeCIC", "Correct", "names depositChargeCIC"),
    ("**Verdict:** Partial — misses the file", "Partial", "misses the file"),
    ("verdict = incorrect\nwrong solver", "Incorrect", "wrong solver"),
    ("Incorrect. It names the wrong file.", "Incorrect", "It names the wrong file."),
    ("Partially correct: only one of two files", "Partial", "only one of two files"),
    ("The answer is correct.", "Correct", ""),
    ("Verdict: Correct|Partial|Incorrect - reason", "unparseable", ""),
    ("The answer is correct, but the key facts are incorrect.", "unparseable", ""),
    ("Verdict: the answer seems fine", "unparseable", ""),
    ("", "unparseable", ""),
    ("The reference is about halos.", "unparseable", ""),
])
def test_parse_verdict(reply, label, reason):
    assert parse_verdict(reply) == (label, reason)


@pytest.mark.parametrize("content, message", [
    ("{not json", "not valid JSON|corrupt"),
    ('{"questions": [{"id": "a"}]}', "needs a non-empty 'id' and a 'question'"),
    ('{"questions": [{"id": "a", "question": "x"}, {"id": "a", "question": "y"}]}',
     "duplicate question id 'a'"),
    ('{"questions": []}', "no questions"),
    ('{"items": 3}', "expected a JSON list"),
])
def test_malformed_question_files_raise_one_line_user_errors(tmp_path, content, message):
    import re
    path = tmp_path / "q.json"
    path.write_text(content)
    with pytest.raises(UserError) as info:
        load_questions(path)
    assert re.search(message, str(info.value)) and "\n" not in str(info.value)


def test_question_and_reference_formats(tmp_path):
    (tmp_path / "q.json").write_text(json.dumps([{"id": 1, "question": "Why?"}]))
    assert load_questions(tmp_path / "q.json")["questions"] == \
        [{"id": "1", "category": "uncategorized", "question": "Why?"}]
    (tmp_path / "r.json").write_text(json.dumps({"1": "Because."}))
    assert load_references(tmp_path / "r.json") == {"1": "Because."}
    (tmp_path / "r2.json").write_text(json.dumps({"answers": [{"id": "1"}]}))
    with pytest.raises(UserError, match="reference 1 needs"):
        load_references(tmp_path / "r2.json")
    with pytest.raises(UserError, match="missing file"):
        load_questions(tmp_path / "absent.json")


def test_answer_files_of_the_wrong_schema_are_refused(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({"results": []}))
    with pytest.raises(UserError, match="not an answers file"):
        load_answers(tmp_path / "a.json")
    (tmp_path / "b.json").write_text(json.dumps({"answers": [{"answer": "x"}]}))
    with pytest.raises(UserError, match="answer 1 needs an 'id'"):
        load_answers(tmp_path / "b.json")
    with pytest.raises(UserError, match="no answers file"):
        load_answers(tmp_path / "missing")


def test_question_file_model_is_the_one_reader(tmp_path):
    """ask --questions and eval read question files through evaluation.io.QuestionFile."""
    import inspect

    from codeteacher.evaluation.io import QuestionFile
    from codeteacher.shells import cli

    (tmp_path / "q.json").write_text(json.dumps({"version": 2, "questions": [
        {"id": 7, "question": "Why?", "category": None, "gold_files": ["a.cpp"]},
        {"id": " b ", "question": "How?", "category": "algorithm"}]}))
    qf = QuestionFile.load(tmp_path / "q.json")
    assert qf.version == "2" and [(q.id, q.category) for q in qf.questions] == \
        [("7", "uncategorized"), ("b", "algorithm")]
    (tmp_path / "bool.json").write_text(json.dumps([{"id": True, "question": "x"}]))
    with pytest.raises(UserError, match="question 1 needs a non-empty 'id'"):
        QuestionFile.load(tmp_path / "bool.json")
    assert "QuestionFile" in inspect.getsource(cli.cmd_ask)
