"""Prompt templates: files under src/codeteacher/prompts/, named and versioned by settings.

A template file has a `[system]` section and a `[user]` section; `{placeholder}`s are filled
with str.format_map (values may contain braces freely; literal braces in a template are written
`{{`/`}}`). A mode's signature, sha256(template text + version + mode name), goes into cache
keys and the index manifest, so editing a template or bumping its version regenerates exactly
the artifacts made with it.
"""
from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from ..contracts.errors import UserError
from ..contracts.settings.generation import GenerationSettings, PromptMode

PROMPTS_DIR = Path(__file__).resolve().parent.parent / "prompts"
MODES = ("chunk_explanation", "file_level", "file_level_fallback", "module_level", "call_chain",
         "final_answer")


def template_path(name: str) -> Path:
    path = Path(name).expanduser()
    return path if path.is_absolute() or path.exists() else PROMPTS_DIR / name


@lru_cache(maxsize=64)
def _read(path: str, mtime_ns: int) -> str:
    return Path(path).read_text(encoding="utf-8")


def template_text(mode: PromptMode) -> str:
    path = template_path(mode.template)
    try:
        return _read(str(path), path.stat().st_mtime_ns)
    except OSError:
        raise UserError(f"prompt template not found: {path}") from None


def mode_settings(gen: GenerationSettings, mode: str) -> PromptMode:
    if mode not in MODES:
        raise UserError(f"unknown prompt mode: {mode}")
    return getattr(gen.prompts, mode)


def prompt_signature(gen: GenerationSettings, mode: str) -> str:
    cfg = mode_settings(gen, mode)
    data = f"{template_text(cfg)}\x00{cfg.version}\x00{mode}".encode()
    return hashlib.sha256(data).hexdigest()


def prompt_signatures(gen: GenerationSettings) -> dict[str, str]:
    """mode -> signature, for Manifest.explanations."""
    return {mode: prompt_signature(gen, mode) for mode in MODES}


def split_sections(text: str) -> tuple[str, str]:
    """(system, user) parts of a template; without markers the whole text is the user part."""
    if "[user]" not in text:
        return "", text.strip()
    head, user = text.split("[user]", 1)
    return head.replace("[system]", "", 1).strip(), user.strip()


def render(gen: GenerationSettings, mode: str, values: dict[str, object]) -> list[dict[str, str]]:
    """Chat messages of a mode's template filled with values."""
    cfg = mode_settings(gen, mode)
    system, user = split_sections(template_text(cfg))
    try:
        messages = [{"role": "user", "content": user.format_map(values)}]
        if system:
            messages.insert(0, {"role": "system", "content": system.format_map(values)})
    except (KeyError, IndexError, ValueError) as exc:
        raise UserError(f"prompt template {cfg.template}: bad or unknown placeholder "
                        f"{exc}") from None
    return messages
