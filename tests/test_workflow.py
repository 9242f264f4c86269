"""The Snakemake workflow (Snakefile, workflow/, config/, profiles/local) run for real.

Each test runs Snakemake in a subprocess on copies of the sample app in a temporary folder;
which jobs a run would do is read from the dry run's job table (`snakemake -n`).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "src" / "codeteacher" / "demo" / "minipic"
CHAIN = ["collect", "parse", "graph", "entities", "explain", "merge_explanations", "embed",
         "index"]


def snakemake(workdir: Path, *args: str, config: Path | None = None, timeout: int = 1200
              ) -> subprocess.CompletedProcess:
    """Snakemake from the repository root on a workdir of its own (outputs land there)."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
           "--directory", str(workdir), "--configfile", str(config or workdir / "config.yaml"),
           *args]
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)


def planned(result: subprocess.CompletedProcess) -> dict[str, int]:
    """rule -> job count from the job table of a dry run; {} when nothing is to be done."""
    assert result.returncode == 0, result.stdout + result.stderr
    text = result.stdout + result.stderr
    if "Nothing to be done" in text:
        return {}
    table = re.search(r"^job\s+count\s*\n-+\s+-+\s*\n(.*?)^total\s+\d+", text, re.M | re.S)
    assert table, text
    return {name: int(n) for name, n in re.findall(r"^(\w+)\s+(\d+)\s*$", table.group(1), re.M)}


def corpora_of(result: subprocess.CompletedProcess, rule: str) -> set[str]:
    """The corpus wildcards of the planned jobs of one rule."""
    text = result.stdout + result.stderr
    blocks = re.findall(rf"^rule {rule}:\n(.*?)(?=^\S|\Z)", text, re.M | re.S)
    return {m for b in blocks for m in re.findall(r"corpus=([\w.-]+)", b)}


def write_config(workdir: Path, corpora: dict[str, Path], settings: Path, shards: int = 2,
                 name: str = "config.yaml") -> Path:
    config = {"corpora": [{"name": n, "path": str(p)} for n, p in corpora.items()],
              "settings": str(settings), "explain_shards": shards, "gpu": False}
    path = workdir / name
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


def settings_copy(workdir: Path, name: str, base: Path | None = None, **changes) -> Path:
    """A settings file with dotted keys changed (embedding__max_seq_length=...; a callable gets
    the old value). `base` defaults to the repository's runtime_settings.json."""
    data = json.loads((base or REPO / "runtime_settings.json").read_text())
    for dotted, value in changes.items():
        node, *path = data, *dotted.split("__")
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = value(node.get(path[-1])) if callable(value) else value
    out = workdir / name
    out.write_text(json.dumps(data))
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Two corpora (the sample app and a two-file corpus) built once with the local profile."""
    if not SAMPLE.is_dir():
        pytest.skip("src/codeteacher/demo/minipic is not there")
    work = tmp_path_factory.mktemp("wf")
    shutil.copytree(SAMPLE, work / "minipic")
    tiny = work / "tiny"
    (tiny / "src").mkdir(parents=True)
    shutil.copy(SAMPLE / "src" / "gather.cpp", tiny / "src" / "gather.cpp")
    (tiny / "README.md").write_text("# tiny\n\nGathers fields to particles.\n")
    settings = settings_copy(work, "settings.json")
    write_config(work, {"minipic": work / "minipic", "tiny": tiny}, settings)
    run = snakemake(work, "--profile", "profiles/local", "--cores", "2")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    return work


def test_lint_passes():
    run = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


def test_dry_run_lists_the_chain_per_corpus(tmp_path):
    config = write_config(tmp_path, {"minipic": SAMPLE}, REPO / "runtime_settings.json", shards=3)
    run = snakemake(tmp_path, "-n", "--cores", "2", config=config)
    assert planned(run) == {**{r: 1 for r in CHAIN}, "explain": 3, "all": 1}
    no_explain = snakemake(tmp_path, "-n", "--cores", "2", "--config", "explain_shards=0",
                           config=config)
    assert planned(no_explain) == {r: 1 for r in ("collect", "parse", "graph", "entities",
                                                  "embed", "index", "all")}
    assert not (tmp_path / "embeddings").exists()


@pytest.mark.parametrize("problem, expected", [
    ("missing_path", "corpus 'minipic': path '{tmp}/nope' is not a directory"),
    ("bad_shards", "config: explain_shards: -1 is less than the minimum of 0"),
    ("unknown_key", "config: corpora.0: Additional properties are not allowed"),
    ("unset_env", "uses the unset environment variable CT_TEST_UNSET_VAR"),
    ("bad_settings", "unknown setting 'embedding.modle'"),
], ids=["missing_path", "bad_shards", "unknown_key", "unset_env", "bad_settings"])
def test_bad_config_is_one_line_before_any_job(tmp_path, problem, expected):
    config = {"corpora": [{"name": "minipic", "path": str(SAMPLE)}],
              "settings": str(REPO / "runtime_settings.json")}
    if problem == "missing_path":
        config["corpora"][0]["path"] = str(tmp_path / "nope")
    elif problem == "bad_shards":
        config["explain_shards"] = -1
    elif problem == "unknown_key":
        config["corpora"][0]["globs"] = ["*.cpp"]
    elif problem == "unset_env":
        config["corpora"][0]["path"] = "$CT_TEST_UNSET_VAR/ippl"
    elif problem == "bad_settings":
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({"embedding": {"modle": "x"}}))
        config["settings"] = str(bad)
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    env_unset = os.environ.pop("CT_TEST_UNSET_VAR", None)
    run = snakemake(tmp_path, "--cores", "1")
    assert env_unset is None
    assert run.returncode != 0
    err = run.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), run.stderr
    assert expected.format(tmp=tmp_path) in err[0]
    assert not (tmp_path / "embeddings").exists()


def test_local_run_builds_an_index_per_corpus(built):
    for name in ("minipic", "tiny"):
        manifest = json.loads((built / "embeddings" / name / "index" / "manifest.json").read_text())
        assert manifest["name"] == name and manifest["counts"]["records"] > 0
        stamp = json.loads((built / "embeddings" / name / "work" / "index_manifest.json")
                           .read_text())
        assert stamp == manifest
        assert (built / "embeddings" / name / "logs" / "embed.log").is_file()
    assert "src/gather.cpp" in manifest["files"]


def test_second_run_does_nothing(built):
    assert planned(snakemake(built, "-n", "--cores", "2")) == {}


def test_touch_without_change_reruns_nothing(built):
    source = built / "minipic" / "src" / "deposit.cpp"
    st = source.stat()
    os.utime(source, (st.st_atime + 100, st.st_mtime + 100))
    assert planned(snakemake(built, "-n", "--cores", "2")) == {}


@pytest.mark.parametrize("changes, expected", [
    ({"embedding__max_seq_length": lambda n: n + 32}, {"embed": 2, "index": 2, "all": 1}),
    ({"chunking__max_chunk_lines": lambda n: n + 10},
     {**{r: 2 for r in CHAIN if r != "collect"}, "explain": 4, "all": 1}),
    ({"generation__prompts__file_level__version": lambda v: v + 1},
     {"explain": 4, "merge_explanations": 2, "embed": 2, "index": 2, "all": 1}),
    ({"retrieval__k": lambda k: k + 1}, {}),  # query time only: nothing to rebuild
], ids=["embedding-model", "chunking", "prompt-mode", "retrieval"])
def test_a_settings_section_reruns_only_its_rules(built, changes, expected):
    # from the settings the index was built with (the repository's file may change meanwhile)
    changed = settings_copy(built, "changed.json", base=built / "settings.json", **changes)
    run = snakemake(built, "-n", "--cores", "2", "--config", f"settings={changed}")
    assert planned(run) == expected


def extras_config(built: Path) -> Path:
    """The built corpora plus a paper library and a two-question benchmark for minipic."""
    config = json.loads((built / "config.yaml").read_text())
    questions = built / "questions.json"
    questions.write_text(json.dumps({"questions": [
        {"id": "q1", "category": "location",
         "question": "Where is the cloud-in-cell charge deposition implemented?"},
        {"id": "q2", "category": "algorithm",
         "question": "How does the conjugate gradient solver iterate?"}]}))
    references = built / "references.json"
    references.write_text(json.dumps({"answers": [
        {"id": "q1", "answer": "In src/deposit.cpp, which scatters particle charge to the grid."},
        {"id": "q2", "answer": "src/cg_solver.cpp applies the Laplacian and updates the "
                               "residual and search direction each iteration."}]}))
    config["benchmarks"] = {"minipic": {"questions": str(questions),
                                        "references": str(references)}}
    config["papers"] = {"sources": [str(SAMPLE / "docs" / "references.bib")]}
    path = built / "extras.yaml"
    path.write_text(json.dumps(config))
    return path


def test_papers_rule_imports_the_library_and_links_every_index(built):
    config = extras_config(built)
    dry = snakemake(built, "-n", "--cores", "2", "papers_all", config=config)
    assert planned(dry) == {"papers_library": 1, "papers": 2, "papers_all": 1}
    run = snakemake(built, "--profile", "profiles/local", "--cores", "2", "papers_all",
                    config=config)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert (built / "embeddings" / "papers" / "library.sqlite").is_file()
    links = json.loads((built / "embeddings" / "minipic" / "index" / "paper_links.json")
                       .read_text())
    linked = json.dumps(links)
    assert "birdsall" in linked.lower() or "hockney" in linked.lower(), linked[:2000]
    assert (built / "embeddings" / "tiny" / "index" / "paper_links.json").is_file()
    assert planned(snakemake(built, "-n", "--cores", "2", "papers_all", config=config)) == {}
    # the index itself is untouched by linking: the main target has nothing to do
    assert planned(snakemake(built, "-n", "--cores", "2", config=config)) == {}


def test_eval_rule_scores_the_benchmark_and_resumes(built):
    config = extras_config(built)
    run = snakemake(built, "--profile", "profiles/local", "--cores", "2", "eval_all",
                    config=config)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    folder = built / "embeddings" / "minipic" / "eval"
    scores = json.loads((folder / "scores.json").read_text())
    answers = json.loads((folder / "answers.json").read_text())
    assert [a["id"] for a in answers["answers"]] == ["q1", "q2"]
    assert "src/deposit.cpp" in answers["answers"][0]["context_files"][:3]
    assert json.dumps(scores).count("recall") > 0
    assert planned(snakemake(built, "-n", "--cores", "2", "eval_all", config=config)) == {}


def test_editing_one_file_reruns_only_its_corpus(built):
    before_tiny = (built / "embeddings" / "tiny" / "index" / "manifest.json").read_bytes()
    source = built / "minipic" / "src" / "gather.cpp"
    source.write_text(source.read_text() + "\n// one more comment line\n")
    dry = snakemake(built, "-n", "--cores", "2")
    assert planned(dry) == {**{r: 1 for r in CHAIN}, "explain": 2, "all": 1}
    assert corpora_of(dry, "collect") == corpora_of(dry, "embed") == {"minipic"}
    run = snakemake(built, "--profile", "profiles/local", "--cores", "2")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    manifest = json.loads((built / "embeddings" / "minipic" / "index" / "manifest.json")
                          .read_text())
    assert manifest["files"]["src/gather.cpp"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert (built / "embeddings" / "tiny" / "index" / "manifest.json").read_bytes() == before_tiny
    assert planned(snakemake(built, "-n", "--cores", "2")) == {}


def test_a_deleted_index_is_rebuilt(built):
    shutil.rmtree(built / "embeddings" / "tiny" / "index")
    assert planned(snakemake(built, "-n", "--cores", "2")) == {"index": 1, "all": 1}
    run = snakemake(built, "--profile", "profiles/local", "--cores", "2")
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    assert (built / "embeddings" / "tiny" / "index" / "manifest.json").is_file()


def test_a_failed_job_names_rule_and_log_and_keeps_the_index(built):
    index = built / "embeddings" / "tiny" / "index"
    before = {p.name: p.read_bytes() for p in index.iterdir() if p.is_file()}
    broken = settings_copy(built, "broken.json", base=built / "settings.json",
                           embedding__model="no-such-embedding-model")
    run = snakemake(built, "--profile", "profiles/local", "--cores", "2", "--config",
                    f"settings={broken}")
    assert run.returncode != 0
    err = run.stdout + run.stderr
    assert "Error in rule embed" in err
    assert "embeddings/tiny/logs/embed.log" in err or "embeddings/minipic/logs/embed.log" in err
    # the log, shown by --show-failed-logs, names the model (torch load or ONNX export)
    assert "no-such-embedding-model" in err
    assert "cannot load embedding model" in err or "cannot export" in err
    assert {p.name: p.read_bytes() for p in index.iterdir() if p.is_file()} == before
    # with the settings restored, only embedding and indexing are left to do
    redo = planned(snakemake(built, "-n", "--cores", "2"))
    assert set(redo) <= {"embed", "index", "all"} and redo
