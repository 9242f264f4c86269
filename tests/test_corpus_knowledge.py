"""Nothing in src/ or the default settings knows a particular corpus: not the benchmark corpora,
not their files or symbols, and not the bundled sample app (which is shipped as demo data in
codeteacher/demo/ and is the one place allowed to be about itself)."""
from __future__ import annotations

import json
from pathlib import Path

from codeteacher.contracts.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "codeteacher"
DEMO = SRC / "demo"
# Corpus names, then names and topics of their code, the sample app's and the benchmarks'.
WORDS = ("ippl", "tealeaf", "tea_leaf", "examinimd", "minipic", "mpip", "fftpoisson",
         "poisson", "particle", "boris", "cloud-in-cell", "hestenes", "conjugate", "cooley",
         "birdsall", "hockney", "lammps",
         # the held-aside and blind corpora of the retrieval work (eval/README)
         "minimd", "cloverleaf", "laghos", "cabanapic", "miniqmc", "miniaero", "minixyce",
         "minitri", "minibude", "lulesh", "miniamr", "sw4lite", "exasp2", "babelstream",
         "pennant", "quicksilver", "hpccg", "kripke", "xsbench", "simplemoc", "minife",
         "minivite", "comd", "exampm", "spatter")
TEXT_SUFFIXES = {".py", ".txt", ".j2", ".json", ".md"}


def _hits(text: str) -> list[str]:
    low = text.lower()
    return [w for w in WORDS if w in low]


def test_source_knows_no_corpus():
    files = [p for p in SRC.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES
             and DEMO not in p.parents]
    assert any(p.suffix == ".txt" for p in files) and len(files) > 50  # prompts and code
    found = {str(p.relative_to(SRC)): hits for p in files
             if (hits := _hits(p.read_text(encoding="utf-8")))}
    assert not found, found


def test_default_settings_know_no_corpus():
    texts = {"Settings()": Settings().model_dump_json(),
             "runtime_settings.json": (ROOT / "runtime_settings.json").read_text()}
    texts.update({p.name: p.read_text() for p in (ROOT / "config" / "settings").glob("*.json")})
    found = {name: hits for name, text in texts.items() if (hits := _hits(text))}
    assert not found, found


def test_the_guard_sees_what_it_must_refuse():
    """The word list matches the sample app it keeps out (a guard that cannot fail is none)."""
    demo = json.loads((DEMO / "demo.json").read_text())
    assert _hits(json.dumps(demo)) and _hits((DEMO / "minipic" / "README.md").read_text())
