"""Evaluation of answers on a question set: run (resumable), deterministic scores, LLM judge,
reports and side-by-side comparison, also of answer files in the paper's schema.

Importing the package is cheap (settings.py imports EvalSettings from here); the rest loads on
first use.
"""
from __future__ import annotations

from importlib import import_module

from ..contracts.settings.evaluation import EvalSettings

_LAZY = {
    "run_eval": "runner", "judge_answers": "runner", "compare_runs": "scoring",
    "score_run": "scoring", "load_questions": "io", "load_references": "io",
    "load_answers": "io", "reference_coverage": "metrics", "gold_files": "metrics",
    "recall_at_k": "metrics", "evidence_items": "metrics", "content_words": "metrics",
    "parse_verdict": "judge", "Judge": "judge", "register": "cli",
}

__all__ = ["EvalSettings", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(name)
