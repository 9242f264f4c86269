"""Settings presets and the shipped runtime_settings.json agree with the settings model."""
import json
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from codeteacher.contracts.settings import Settings, load_settings

ROOT = Path(__file__).resolve().parents[1]
PRESETS = sorted((ROOT / "config" / "settings").glob("*.json"))


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.name)
def test_preset_validates(preset):
    s = load_settings(preset)
    assert isinstance(s, Settings)


def test_presets_exist():
    names = {p.name for p in PRESETS}
    assert {"local-llm.json", "cluster-vllm.json"} <= names


def test_runtime_settings_lists_every_section():
    data = json.loads((ROOT / "runtime_settings.json").read_text())
    assert set(Settings.model_fields) <= set(data), "a settings section is missing from the file"


def test_intent_table_in_runtime_settings_matches_model_defaults():
    """The intent -> expansion profile table users read is the one the code uses."""
    data = json.loads((ROOT / "runtime_settings.json").read_text())
    shipped = {k: v["profile"] for k, v in data["routing"]["intents"].items()}
    defaults = {k: v.profile for k, v in Settings().routing.intents.items()}
    assert shipped == defaults
    profiles = set(data["expansion"]["profiles"])
    assert set(shipped.values()) <= profiles


def _models_in(annotation):
    """The settings models an annotation holds: X, X | None, dict[str, X], list[X]."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    for arg in typing.get_args(annotation):
        yield from _models_in(arg)


def _fields(model, prefix=""):
    """Every field of the whole settings tree, as (dotted name, field, model)."""
    for name, field in model.model_fields.items():
        yield f"{prefix}{name}", field
        for sub in _models_in(field.annotation):
            yield from _fields(sub, f"{prefix}{name}.")


def test_the_field_walk_reaches_every_section():
    names = {n for n, _ in _fields(Settings)}
    assert {"rerank.weights.name_match", "routing.intents.cues", "expansion.profiles.total",
            "generation.prompts.final_answer.template", "papers.online.mailto",
            "evaluation.judge_prompt"} <= names


def test_every_field_is_described():
    """Each tunable says what it does (the settings are the documentation)."""
    undocumented = sorted({n for n, f in _fields(Settings) if not f.description})
    assert not undocumented, undocumented


def _missing(model, data, prefix=""):
    """Dotted names of the fields of `model` that `data` (a JSON object) does not carry."""
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key not in data:
            yield prefix + name
            continue
        value, origin = data[key], typing.get_origin(field.annotation)
        for sub in _models_in(field.annotation):
            if origin is dict and isinstance(value, dict):
                for k, item in value.items():
                    yield from _missing(sub, item, f"{prefix}{name}.{k}.")
            elif origin is list and isinstance(value, list):
                for i, item in enumerate(value):
                    yield from _missing(sub, item, f"{prefix}{name}[{i}].")
            elif isinstance(value, dict):
                yield from _missing(sub, value, f"{prefix}{name}.")


def test_runtime_settings_file_carries_every_field():
    """The shipped file lists every tunable (in every intent and profile), so users see them all."""
    data = json.loads((ROOT / "runtime_settings.json").read_text())
    missing = list(_missing(Settings, data))
    assert not missing, missing
