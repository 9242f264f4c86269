"""Settings: validation of runtime_settings.json (unknown keys named, wrong types, defaults)."""
from __future__ import annotations

import json

import pytest

from codeteacher.contracts.errors import UserError
from codeteacher.contracts.settings import Settings, find_settings_file, load_settings


def _write(tmp_path, data, name="settings.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _error(path) -> str:
    with pytest.raises(UserError) as info:
        load_settings(path)
    msg = str(info.value)
    assert "\n" not in msg, "errors for users are one line"
    return msg


def test_defaults_are_valid_and_round_trip():
    s = Settings()
    again = Settings.model_validate(json.loads(s.model_dump_json()))
    assert again == s
    assert s.retrieval.k > 0 and s.embedding.model


def test_repository_runtime_settings_file_validates(repo_root):
    path = repo_root / "runtime_settings.json"
    assert path.is_file()
    s = load_settings(path)
    raw = json.loads(path.read_text())
    # Every value written in the file is what the loaded settings hold.
    for section, values in raw.items():
        if section.startswith("$") or not isinstance(values, dict):
            continue
        loaded = getattr(s, section).model_dump(mode="json")
        for key, value in values.items():
            if (section, key) == ("papers", "library"):  # relative to the file's folder
                assert loaded[key] == str((path.parent / value).resolve())
            elif not isinstance(value, dict):
                assert loaded[key] == value, f"{section}.{key}"


@pytest.mark.parametrize("data, key", [
    ({"bogus": 1}, "bogus"),
    ({"collect": {"max_file_byte": 10}}, "collect.max_file_byte"),
    ({"retrieval": {"k": 3, "kk": 4}}, "retrieval.kk"),
    ({"papers": {"online": {"enabled": False, "mail_to": "x"}}}, "papers.online.mail_to"),
    ({"papers": {"weights": {"semantics": 0.2}}}, "papers.weights.semantics"),
    # removed: they did nothing (the answer context is fitted in answer/llm.build_context)
    ({"context_filter": {"token_budget": 1800}}, "context_filter.token_budget"),
    ({"context_filter": {"chars_per_token": 3.6}}, "context_filter.chars_per_token"),
    ({"context_filter": {"max_chunk_chars": 1400}}, "context_filter.max_chunk_chars"),
])
def test_unknown_key_is_named(tmp_path, data, key):
    msg = _error(_write(tmp_path, data))
    assert f"unknown setting '{key}'" in msg
    assert str(tmp_path / "settings.json") in msg


@pytest.mark.parametrize("data, key", [
    ({"retrieval": {"k": "eight"}}, "retrieval.k"),
    ({"collect": {"exclude": "build/"}}, "collect.exclude"),
    ({"collect": {"respect_gitignore": "maybe"}}, "collect.respect_gitignore"),
    ({"embedding": 5}, "embedding"),
])
def test_wrong_type_is_named(tmp_path, data, key):
    msg = _error(_write(tmp_path, data))
    assert f"invalid setting '{key}'" in msg


@pytest.mark.parametrize("data, key", [
    ({"routing": {"default_profile": "tiny"}}, "routing.default_profile"),
    ({"routing": {"intents": {"testing": {"cues": ["x"], "profile": "wide"}}}},
     "routing.intents.testing.profile"),
    ({"expansion": {"profiles": {"minimal": {"call": 1, "owner": 1, "file_symbols": 1,
                                             "module_files": 1, "include": 0, "total": 2}}}},
     "routing.default_profile"),  # 'balanced' dropped while routing still names it
])
def test_unknown_expansion_profile_is_a_settings_error(tmp_path, data, key):
    """Never a silent fallback to another profile at query time."""
    msg = _error(_write(tmp_path, data))
    assert f"invalid setting '{key}': unknown expansion profile" in msg, msg
    assert "expansion.profiles has" in msg


@pytest.mark.parametrize("data, key", [
    ({"rerank": {"metadata_cue": "(licen"}}, "rerank.metadata_cue"),
    ({"retrieval": {"data_cue": "decks?["}}, "retrieval.data_cue"),
    ({"routing": {"entity_cues": {"file": "*.h"}}}, "routing.entity_cues.file"),
    ({"routing": {"intents": {"testing": {"cues": [r"\btests?\b", "(unit"],
                                          "profile": "wide"}}}}, "routing.intents.testing.cues.1"),
])
def test_bad_cue_pattern_is_a_settings_error(tmp_path, data, key):
    """Cues compile at the first question; a broken one is named when settings load."""
    msg = _error(_write(tmp_path, data))
    assert f"invalid setting '{key}': not a valid regular expression" in msg, msg


def test_bad_files(tmp_path):
    assert "not valid JSON" in _error(_write(tmp_path, "{retrieval: 1"))
    assert "JSON object" in _error(_write(tmp_path, "[1, 2]"))
    assert "not found" in _error(tmp_path / "absent.json")


def test_comment_and_partial_sections_keep_defaults(tmp_path):
    s = load_settings(_write(tmp_path, {"$comment": "x", "retrieval": {"k": 3}}))
    assert s.retrieval.k == 3
    assert s.retrieval.dense_k == Settings().retrieval.dense_k
    assert s.collect == Settings().collect


def test_settings_file_lookup_order(tmp_path, monkeypatch):
    explicit = _write(tmp_path, {}, "explicit.json")
    env = _write(tmp_path, {"retrieval": {"k": 5}}, "env.json")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    _write(cwd, {"retrieval": {"k": 7}}, "runtime_settings.json")
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("CODETEACHER_SETTINGS", raising=False)
    assert load_settings().retrieval.k == 7
    monkeypatch.setenv("CODETEACHER_SETTINGS", str(env))
    assert load_settings().retrieval.k == 5
    assert find_settings_file(explicit) == explicit
    monkeypatch.delenv("CODETEACHER_SETTINGS")
    monkeypatch.chdir(tmp_path)
    assert find_settings_file() is None
    assert load_settings() == Settings()


def test_index_signature_tracks_only_index_settings():
    base = Settings()
    assert base.index_signature() == Settings().index_signature()
    retrieval = Settings.model_validate({"retrieval": {"k": 3}})
    assert retrieval.index_signature() == base.index_signature()
    for change in ({"chunking": {"max_chunk_lines": 50}}, {"collect": {"max_file_bytes": 10}},
                   {"embedding": {"max_seq_length": 96}}):
        assert Settings.model_validate(change).index_signature() != base.index_signature()
