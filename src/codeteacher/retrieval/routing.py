"""Intent routing: which kind of question this is, which entity types it asks for, and so which
expansion profile and reranking preferences apply. Rules live in settings (`routing`)."""
from __future__ import annotations

import re
from functools import lru_cache

from ..contracts.settings.retrieval import RoutingSettings
from .query import QueryAnalysis


_CALLED = re.compile(r"called$")


@lru_cache(maxsize=256)
def cue_pattern(pattern: str) -> re.Pattern:
    """A cue regex from settings, compiled once (routing, rerank and select all ask per query)."""
    return re.compile(pattern)


def classify(qa: QueryAnalysis, settings: RoutingSettings) -> tuple[str, str, list[str]]:
    """(intent, expansion profile, requested entity types)."""
    text = qa.question.lower().strip()
    # "What is the binary called?" names a thing; it asks for no call chain.
    unnamed = cue_pattern(settings.naming_cue).sub(lambda m: _CALLED.sub("", m.group(0)), text) \
        if settings.naming_cue else text
    wanted = [t for t, pat in settings.entity_cues.items() if cue_pattern(pat).search(unnamed)]
    if not settings.enabled:
        return settings.default_intent, settings.default_profile, wanted
    file_only = bool(qa.named_files) and not qa.symbols
    for name, rule in settings.intents.items():
        if any(cue_pattern(c).search(text) for c in rule.cues):
            # A named file with a generic "what does ... do" asks for the file's purpose.
            if file_only and name in settings.named_file_overrides \
                    and settings.named_file_intent in settings.intents:
                name = settings.named_file_intent
                rule = settings.intents[name]
            return name, rule.profile, wanted
    if qa.named_files and settings.named_file_intent in settings.intents:
        name = settings.named_file_intent
        return name, settings.intents[name].profile, wanted
    return settings.default_intent, settings.default_profile, wanted
