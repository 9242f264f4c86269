"""Input and output files of an evaluation: question and reference files, answer files (ours and
the paper's `answers.json` schema), and the corpus file list that restricts gold files.

Every malformed input raises UserError with one line that names the file and the problem.
"""
from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..contracts.errors import UserError
from ..contracts.jsonio import read_json, read_jsonl
from ..contracts.models import Chunk
from .metrics import evidence_items

SCHEMA = "codeteacher-eval/v1"
ANSWERS_FILE = "answers.json"


QUESTIONS_SHAPE = '{"questions": [{"id": ..., "question": "..."}]}'


def _items(data, key: str, path: Path) -> list:
    items = data.get(key) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise UserError(f"{path}: expected a JSON list or an object with a '{key}' list")
    return items


class Question(BaseModel):
    """One question of a question file; other keys an item carries (gold files, notes) are
    ignored here."""

    model_config = ConfigDict(extra="ignore")
    id: str = Field(min_length=1)
    category: str = "uncategorized"
    question: str

    @field_validator("id", mode="before")
    @classmethod
    def _id_text(cls, v):
        return str(v).strip() if isinstance(v, (str, int)) and not isinstance(v, bool) else v

    @field_validator("category", mode="before")
    @classmethod
    def _category_text(cls, v):
        return str(v) if v else "uncategorized"


class QuestionFile(BaseModel):
    """A question file: {"version", "questions": [...]} or just the list. The one reader of
    question files: `ask --questions` and `codeteacher eval` both load them here."""

    version: str = ""
    questions: list[Question]

    @classmethod
    def load(cls, path: str | Path) -> "QuestionFile":
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UserError(f"missing file: {path} (question file not found)") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise UserError(f"question file {path} is not valid JSON ({exc})") from None
        items = _items(data, "questions", path)
        questions = []
        for n, item in enumerate(items, 1):
            try:
                questions.append(Question.model_validate(item))
            except ValidationError:
                raise UserError(f"{path}: question {n} needs a non-empty 'id' and a 'question' "
                                f"text (a question file looks like {QUESTIONS_SHAPE})") from None
        seen: set[str] = set()
        for q in questions:
            if q.id in seen:
                raise UserError(f"{path}: duplicate question id '{q.id}'")
            seen.add(q.id)
        if not questions:
            raise UserError(f"{path}: no questions")
        version = data.get("version", "") if isinstance(data, dict) else ""
        return cls(version=str(version), questions=questions)


def load_questions(path: str | Path) -> dict:
    """{'version', 'questions': [{'id', 'category', 'question'}]} from a question file."""
    return QuestionFile.load(path).model_dump()


def load_references(path: str | Path | None) -> dict[str, str]:
    """id -> reference answer, from {'answers': [{'id', 'answer'}]}, a list, or {id: text}."""
    if path is None:
        return {}
    path = Path(path)
    data = read_json(path)
    if isinstance(data, dict) and "answers" not in data and "references" not in data \
            and data and all(isinstance(v, str) for v in data.values()):
        return {str(k): v for k, v in data.items()}
    key = "references" if isinstance(data, dict) and "references" in data else "answers"
    out = {}
    for n, item in enumerate(_items(data, key, path), 1):
        if not isinstance(item, dict) or "id" not in item \
                or not isinstance(item.get("answer"), str):
            raise UserError(f"{path}: reference {n} needs an 'id' and an 'answer' text")
        out[str(item["id"])] = item["answer"]
    return out


def answers_path(run: str | Path) -> Path:
    """A run directory's answers.json, or the path itself when it is a file."""
    run = Path(run)
    return run / ANSWERS_FILE if run.is_dir() else run


def load_answers(run: str | Path) -> dict:
    """An answers file (ours or the paper's schema), checked for the fields scoring needs."""
    path = answers_path(run)
    if not path.exists():
        raise UserError(f"no answers file: {path}")
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("answers"), list):
        raise UserError(f"{path}: not an answers file (expected an object with an 'answers' "
                        "list, as written by 'codeteacher eval')")
    for n, item in enumerate(data["answers"], 1):
        if not isinstance(item, dict) or "id" not in item \
                or not isinstance(item.get("answer", ""), (str, type(None))):
            raise UserError(f"{path}: answer {n} needs an 'id' and an 'answer' text")
    return data


def _basename_items(paths: list) -> list[list[str]]:
    return [[PurePosixPath(str(p)).name] for p in paths if p]


def normalize_answer(rec: dict) -> dict:
    """One view of an answer record of either schema, for scoring.

    context_items is None when the file has no retrieved context (the paper's runs). The
    answer's evidence is its Evidence section when the text has one naming files, else our
    structured `evidence` list, else the paper's `evidence_files`.
    """
    text = rec.get("answer") or ""
    items, source = evidence_items(text), "answer_text"
    if not items and rec.get("evidence"):
        items, source = _basename_items([e.get("path") for e in rec["evidence"]]), "evidence_list"
    if not items and rec.get("evidence_files"):
        items, source = _basename_items(rec["evidence_files"]), "evidence_files"
    if not items:
        source = ""
    context = rec.get("context")
    context_items = (_basename_items([c.get("path") for c in context])
                     if isinstance(context, list) else None)
    if context_items is None and isinstance(rec.get("context_files"), list):
        context_items = _basename_items(rec["context_files"])

    def num(key):
        value = rec.get(key)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    abst = rec.get("abstained")
    return {"id": str(rec["id"]), "category": str(rec.get("category") or "uncategorized"),
            "question": rec.get("question") or "", "answer": text, "error": rec.get("error"),
            "latency_seconds": num("latency_seconds"), "tokens_in": num("tokens_in"),
            "tokens_out": num("tokens_out"),
            "abstained": abst if isinstance(abst, bool) else None,
            "evidence_items": items, "evidence_source": source, "context_items": context_items,
            "ttft_seconds": num("ttft_seconds"), "confidence": num("confidence"),
            "answer_prose": rec.get("answer_prose") if isinstance(rec.get("answer_prose"), str)
            else None,
            "answer_source": rec.get("answer_source") or "",
            "unsupported_names": (rec["unsupported_names"]
                                  if isinstance(rec.get("unsupported_names"), list) else None)}


def corpus_files_from(path: str | Path) -> list[str]:
    """Corpus file list: an index directory (manifest/records), a directory tree, or a text file
    with one path per line."""
    path = Path(path)
    if path.is_dir() and (path / "manifest.json").is_file():
        return index_files(path)
    if path.is_dir():
        out = []
        for root, dirs, files in os.walk(path):
            dirs[:] = [d for d in dirs if d != ".git"]
            out += [os.path.relpath(os.path.join(root, f), path) for f in files]
        return out
    if path.is_file():
        return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
                if line.strip()]
    raise UserError(f"corpus file list not found: {path}")


def index_manifest(index_dir: str | Path) -> dict:
    data = read_json(Path(index_dir) / "manifest.json")
    if not isinstance(data, dict):
        raise UserError(f"{index_dir}/manifest.json: not an index manifest")
    return data


def index_files(index_dir: str | Path) -> list[str]:
    """Files of an index: the manifest's file list, else the paths of records.jsonl."""
    files = index_manifest(index_dir).get("files")
    if isinstance(files, dict) and files:
        return list(files)
    records = Path(index_dir) / "records.jsonl"
    if records.is_file():
        return sorted({r.path for r in read_jsonl(records, Chunk)})
    raise UserError(f"{index_dir}: the index lists no files (manifest.json has no 'files')")
