"""LLM judge: grades an answer against the reference as Correct / Partial / Incorrect
(1 / 0.5 / 0) with a one-line reason, using the prompt template `judge.txt` (the paper's
rubric). Any generator backend can judge (settings.generation.judge); 'none' turns judging off.

A reply is parsed only where the label is unambiguous ("Verdict: X ..." or a reply that starts
with the label); anything else is recorded as 'unparseable' with the raw reply, never guessed.
"""
from __future__ import annotations

import hashlib
import re

from ..contracts.errors import UserError
from ..contracts.settings.evaluation import EvalSettings

SCORES = {"Correct": 1.0, "Partial": 0.5, "Incorrect": 0.0}
UNPARSEABLE = "unparseable"
_LABEL = r"(incorrect|partially(?:[ \t]+correct)?|partial|correct)\b"
_AFTER_KEYWORD = re.compile(r"verdict[ \t]*[:=\-][ \t*_\"'`]*" + _LABEL + r"(.*)", re.I)
_AT_START = re.compile(r"^[ \t*_\"'`#>]*" + _LABEL + r"(.*)", re.I)
_ANSWER_IS = re.compile(r"\banswer is[ \t*_\"'`]*" + _LABEL + r"(.*)", re.I)
_ANY_LABEL = re.compile(r"\b" + _LABEL, re.I)
_ECHO = re.compile(r"^[ \t*_]*[|/][ \t*_]*" + _LABEL, re.I)  # "Correct|Partial|..." echoed


def _label(word: str) -> str:
    word = word.lower()
    return "Incorrect" if word == "incorrect" else "Correct" if word == "correct" else "Partial"


def parse_verdict(text: str) -> tuple[str, str]:
    """(label, reason) with label in Correct / Partial / Incorrect / 'unparseable'.

    Accepted: "Verdict: <label> ...", a reply starting with the label, or "... answer is
    <label> ..." in a reply that names no other label. An echoed label list is unparseable.
    """
    text = (text or "").strip()
    match = _AFTER_KEYWORD.search(text) or _AT_START.match(text)
    if match is None:
        match = _ANSWER_IS.search(text)
        if match and len({_label(w) for w in _ANY_LABEL.findall(text)}) != 1:
            match = None
    if match is None or _ECHO.match(match.group(2)):
        return UNPARSEABLE, ""
    reason = match.group(2).strip().lstrip("*_\"'`:;,.-\u2013\u2014 \t").strip()
    if not reason:  # the reason may sit on the next line
        rest = text[match.end():].strip().splitlines()
        reason = rest[0].strip().lstrip("-\u2013\u2014:* ") if rest else ""
    return _label(match.group(1)), reason[:300]


def _template_path(name: str):
    from ..generation.prompts import template_path
    return template_path(name)


def judge_template(cfg: EvalSettings) -> str:
    path = _template_path(cfg.judge_prompt)
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        raise UserError(f"judge prompt template not found: {path}") from None


def prompt_signature(cfg: EvalSettings) -> str:
    data = f"{judge_template(cfg)}\x00{cfg.judge_prompt_version}\x00judge".encode()
    return hashlib.sha256(data).hexdigest()


def judge_backend(settings):
    """The judge's BackendSettings ('none' = judging off)."""
    return settings.generation.judge


class Judge:
    """Grades batches of {question, reference, answer}; the model loads on the first grade()."""

    def __init__(self, backend, cfg: EvalSettings):
        from ..generation.prompts import split_sections

        self.backend, self.cfg = backend, cfg
        self.system, self.user = split_sections(judge_template(cfg))
        self.signature = prompt_signature(cfg)
        self._gen = None

    @property
    def enabled(self) -> bool:
        return self.backend.backend != "none"

    def info(self) -> dict:
        return {"enabled": self.enabled, "backend": self.backend.backend,
                "model": self.backend.model if self.enabled else "",
                "prompt": self.cfg.judge_prompt, "prompt_version": self.cfg.judge_prompt_version,
                "prompt_signature": self.signature}

    def key(self, item: dict) -> str:
        """Cache key of one verdict: same judge, prompt, question, reference and answer."""
        parts = [self.backend.backend, self.backend.model, self.signature,
                 item["question"], item["reference"], item["answer"]]
        return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:20]

    def _generator(self):
        if self._gen is None:
            from ..generation import make_generator
            self._gen = make_generator(self.backend)
        return self._gen

    def _messages(self, item: dict, words: int) -> list[dict[str, str]]:
        ends = [m.end() for m in re.finditer(r"\S+", item["answer"])]
        cut = item["answer"] if len(ends) <= words else item["answer"][:ends[words - 1]] + " [...]"
        values = {"question": item["question"], "reference": item["reference"], "answer": cut}
        try:
            messages = [{"role": "user", "content": self.user.format_map(values)}]
            if self.system:
                messages.insert(0, {"role": "system",
                                    "content": self.system.format_map(values)})
        except (KeyError, IndexError, ValueError) as exc:
            raise UserError(f"judge prompt {self.cfg.judge_prompt}: bad placeholder {exc}") \
                from None
        return messages

    def _fitted(self, item: dict) -> list[dict[str, str]]:
        """The prompt with the answer cut until it fits the judge's context window."""
        from ..generation.base import messages_tokens

        gen = self._generator()
        budget = max(gen.context_size - self.backend.max_tokens - 16, 0)
        words = self.cfg.judge_max_answer_words
        messages = self._messages(item, words)
        while budget and words > 20 and messages_tokens(gen, messages) > budget:
            words //= 2
            messages = self._messages(item, words)
        return messages

    def grade(self, items: list[dict]) -> list[dict]:
        """One verdict per item: {verdict, score, reason, raw, error}; verdict is None when the
        backend failed on that item (not cached, retried on the next run)."""
        from ..generation import ChatRequest

        requests = [ChatRequest(messages=self._fitted(it), max_tokens=self.backend.max_tokens,
                                temperature=self.backend.temperature) for it in items]
        out = []
        for gen in self._generator().generate(requests):
            if gen.error or gen.finish_reason in ("error", "context_overflow"):
                out.append({"verdict": None, "score": None, "reason": "", "raw": gen.text,
                            "error": gen.error or gen.finish_reason})
                continue
            label, reason = parse_verdict(gen.text)
            out.append({"verdict": label, "score": SCORES.get(label), "reason": reason,
                        "raw": gen.text.strip()[:1000], "error": None})
        return out

    def close(self) -> None:
        if self._gen is not None:
            self._gen.close()
            self._gen = None
