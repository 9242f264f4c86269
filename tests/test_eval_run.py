"""`codeteacher eval` end to end on the sample app: run, resume, report, compare (also of answer
files in the paper's schema), bad input, and the packaged tiny model as answerer and judge."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codeteacher.evaluation.cli import main

DATA = Path(__file__).resolve().parent / "data" / "eval"
QUESTIONS = DATA / "minipic_questions.json"
REFERENCES = DATA / "minipic_references.json"
PAPER_SCHEMA = DATA / "minipic_paper_schema.json"
ALL_IDS = [q["id"] for q in json.loads(QUESTIONS.read_text())["questions"]]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, minipic_index, engine):
    """A complete run, made in two sessions: 3 answers, then the rest (resume)."""
    from codeteacher.evaluation.runner import run_eval

    out = tmp_path_factory.mktemp("eval") / "run_a"
    part = run_eval(QUESTIONS, minipic_index, out, settings=engine.settings,
                    references_path=REFERENCES, limit=3, engine=engine)
    partial = json.loads((out / "answers.json").read_text())
    rest = run_eval(QUESTIONS, minipic_index, out, settings=engine.settings,
                    references_path=REFERENCES, engine=engine)
    return out, part, partial, rest


def test_limit_then_resume_asks_only_the_rest(first_run):
    out, part, partial, rest = first_run
    assert (part["asked"], part["kept"]) == (3, 0)
    assert [a["id"] for a in partial["answers"]] == ALL_IDS[:3]
    assert partial["run_complete"] is False
    assert (rest["asked"], rest["kept"], rest["failed"]) == (7, 3, 0)
    doc = json.loads((out / "answers.json").read_text())
    assert [a["id"] for a in doc["answers"]] == ALL_IDS
    assert doc["run_complete"] is True and doc["run_metadata"]["sessions"] == 2
    # the first three answers were kept as saved, not asked again
    assert doc["answers"][:3] == partial["answers"]


def test_answers_file_follows_the_papers_schema_plus_evidence(first_run):
    doc = json.loads((first_run[0] / "answers.json").read_text())
    for key in ("schema", "run_complete", "run_metadata", "models", "settings_snapshot",
                "vector_store_manifest", "answers"):
        assert key in doc
    assert doc["run_metadata"]["answer_count"] == 10
    assert doc["run_metadata"]["failure_count"] == 0
    assert doc["vector_store_manifest"]["name"] == "minipic"
    assert "retrieval" in doc["settings_snapshot"]
    answer = doc["answers"][0]
    for key in ("id", "category", "question", "answer", "evidence_files", "error",
                "latency_seconds", "evidence", "context", "context_files"):
        assert key in answer
    assert set(answer["evidence"][0]) == {"path", "start_line", "end_line", "symbol"}
    assert answer["error"] is None and answer["answer"]


def test_scores_and_report(first_run):
    out = first_run[0]
    scores = json.loads((out / "scores.json").read_text())
    overall = scores["summary"]["overall"]
    assert overall["n"] == 10 and overall["errors"] == 0
    assert overall["with_gold"] == 9 and scores["no_gold"] == ["num_001"]
    assert 0.0 <= overall["context_recall@5"] <= overall["context_recall@10"] <= 1.0
    assert 0.0 < overall["coverage"] < 1.0
    assert overall["abstention_rate"] is not None and overall["latency_p50"] > 0
    by_id = {r["id"]: r for r in scores["per_answer"]}
    assert by_id["loc_001"]["gold_files"] == ["deposit.cpp", "interpolation.hpp"]
    assert by_id["file_002"]["gold_source"] == "question"  # reference names no file
    assert by_id["file_001"]["context_recall@5"] == 1.0  # the file named in the question
    assert set(scores["summary"]) >= {"overall", "algorithm", "numerical_meaning"}
    assert scores["judge"]["enabled"] is False
    report = (out / "report.md").read_text()
    assert "Judge: off" in report and "| algorithm |" in report and "num_001" in report


def test_cli_run_resumes_a_complete_run_without_asking(first_run, minipic_index, tmp_path,
                                                       capsys):
    out = tmp_path / "copy"
    shutil.copytree(first_run[0], out)
    before = json.loads((out / "answers.json").read_text())["answers"]
    code = main(["eval", "--questions", str(QUESTIONS), "--references", str(REFERENCES),
                 "--index", str(minipic_index), "--out", str(out)])
    assert code == 0
    assert "asked 0, kept 10" in capsys.readouterr().err
    assert json.loads((out / "answers.json").read_text())["answers"] == before
    assert main(["eval", "--questions", str(QUESTIONS), "--index", str(minipic_index),
                 "--out", str(out), "--k", "3"]) == 2  # resuming must not mix settings
    assert "was run with k = 8" in capsys.readouterr().err


def test_cli_reports_bad_input_in_one_line(minipic_index, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"questions": [{"id": "x"}]}')
    code = main(["eval", "--questions", str(bad), "--index", str(minipic_index),
                 "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1
    assert "question 1 needs" in err
    assert main(["eval", "--questions", str(tmp_path / "none.json"), "--index",
                 str(minipic_index), "--out", str(tmp_path / "run")]) == 2
    assert "missing file" in capsys.readouterr().err
    assert main(["eval", "--questions", str(QUESTIONS), "--index", str(tmp_path),
                 "--out", str(tmp_path / "run")]) == 2  # not an index
    assert main(["eval", "--questions", str(QUESTIONS)]) == 2
    assert "missing --index, --out" in capsys.readouterr().err
    assert main(["eval", "compare", str(bad)]) == 2
    assert "not an answers file" in capsys.readouterr().err


def test_compare_two_runs(first_run, minipic_index, engine, tmp_path, capsys):
    from codeteacher.evaluation.runner import run_eval

    run_b = tmp_path / "run_b"
    run_eval(QUESTIONS, minipic_index, run_b, settings=engine.settings,
             references_path=REFERENCES, k=3, engine=engine)
    out_json = tmp_path / "cmp.json"
    assert main(["eval", "compare", str(first_run[0]), str(run_b), "--json",
                 str(out_json)]) == 0
    printed = capsys.readouterr().out
    assert "run_a" in printed and "run_b" in printed and "numerical_meaning" in printed
    runs = json.loads(out_json.read_text())["runs"]
    assert [r["run"] for r in runs] == ["run_a", "run_b"]
    a, b = (r["summary"]["overall"] for r in runs)
    assert a["n"] == b["n"] == 10 and a["with_gold"] == b["with_gold"] == 9
    assert a["coverage"] is not None and b["coverage"] is not None  # own references found
    first = json.loads((first_run[0] / "scores.json").read_text())["summary"]["overall"]
    assert a["context_recall@5"] == first["context_recall@5"]


def test_compare_answer_file_in_the_papers_schema(minipic_index, tmp_path, capsys):
    out_json = tmp_path / "cmp.json"
    assert main(["eval", "compare", str(PAPER_SCHEMA), "--references", str(REFERENCES),
                 "--index", str(minipic_index), "--json", str(out_json)]) == 0
    assert "handmade_paper_run" in capsys.readouterr().out
    (run,) = json.loads(out_json.read_text())["runs"]
    rows = {r["id"]: r for r in run["per_answer"]}
    assert rows["loc_001"]["gold_files"] == ["deposit.cpp", "interpolation.hpp"]
    assert rows["loc_001"]["answer_recall@5"] == 0.5  # gather.cpp, deposit.cpp cited
    assert rows["loc_001"]["coverage"] == pytest.approx(7 / 15)
    assert rows["loc_001"]["context_recall@5"] is None  # the paper's files have no context
    assert rows["alg_002"]["answer_recall@5"] == 0.0
    assert run["no_gold"] == ["num_001"]
    overall = run["summary"]["overall"]
    assert overall["answer_recall@5"] == 0.25 and overall["latency_p50"] == 4.0
    assert overall["context_recall@5"] is None and overall["abstention_rate"] is None


def test_compare_a_published_run(shared_dir, tmp_path, capsys):
    bench = shared_dir / "benchmarks" / "ippl"
    run = bench / "published_runs" / "eval_v2_qwen2.5-7B-q4_K_M.json"
    if not run.is_file():
        pytest.skip(f"published run not found: {run}")
    out_json = tmp_path / "cmp.json"
    assert main(["eval", "compare", str(run), "--references",
                 str(bench / "reference_answers_v2.json"), "--json", str(out_json)]) == 0
    (scores,) = json.loads(out_json.read_text())["runs"]
    overall = scores["summary"]["overall"]
    assert overall["n"] == 100 and overall["errors"] == 0
    assert overall["latency_mean"] == pytest.approx(3.5, abs=0.05)  # the README's 3.5 s
    assert overall["with_gold"] >= 38 and 0.3 < overall["coverage"] < 0.6


@pytest.mark.llm
def test_tiny_model_answers_and_judges(minipic_index, tmp_path):
    from codeteacher.contracts.settings import Settings
    from codeteacher.evaluation.runner import run_eval

    tiny = {"backend": "llama-cpp", "model": "packaged:SmolLM2-135M-Instruct",
            "context_size": 2048, "max_tokens": 48}
    settings = Settings.model_validate({"generation": {"answers": tiny, "judge": tiny}})
    out = tmp_path / "tiny"
    result = run_eval(QUESTIONS, minipic_index, out, settings=settings,
                      references_path=REFERENCES, limit=2)
    assert result["asked"] == 2 and result["failed"] == 0
    judgments = json.loads((out / "judgments.json").read_text())
    assert judgments["judge"]["backend"] == "llama-cpp" and judgments["judge"]["enabled"]
    assert len(judgments["judge"]["prompt_signature"]) == 64
    verdicts = judgments["verdicts"]
    assert set(verdicts) == set(ALL_IDS[:2])
    for v in verdicts.values():
        assert v["verdict"] in ("Correct", "Partial", "Incorrect", "unparseable") and v["raw"]
    report = (out / "report.md").read_text()
    assert "packaged:SmolLM2-135M-Instruct" in report and "not a meaningful grade" in report
    doc = json.loads((out / "answers.json").read_text())  # ask answered with the tiny model
    assert doc["models"]["answer_model"]["backend"] == "llama-cpp"
    assert all(a["backend"] == "llama-cpp" for a in doc["answers"])


def test_a_model_that_cannot_load_stops_the_run_with_its_error(minipic_index, tmp_path):
    """Not a 'complete' run of failed questions: the warm-up error is the run's error."""
    from codeteacher.contracts.errors import UserError
    from codeteacher.contracts.settings import Settings
    from codeteacher.evaluation.runner import run_eval

    missing = tmp_path / "absent.gguf"
    settings = Settings.model_validate({"generation": {"answers": {
        "backend": "llama-cpp", "model": str(missing)}}})
    with pytest.raises(UserError, match="absent.gguf"):
        run_eval(QUESTIONS, minipic_index, tmp_path / "run", settings=settings, limit=2)
