"""Settings presets and the shipped runtime_settings.json agree with the settings model."""
import json
from pathlib import Path

import pytest

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


def test_every_field_is_described():
    """Each tunable says what it does (the settings are the documentation)."""
    def walk(model, prefix=""):
        for name, field in model.model_fields.items():
            ann = field.annotation
            if isinstance(ann, type) and hasattr(ann, "model_fields"):
                yield from walk(ann, f"{prefix}{name}.")
            else:
                yield f"{prefix}{name}", field
    undocumented = [n for n, f in walk(Settings().rerank.weights.__class__) if not f.description]
    assert not undocumented, undocumented
