"""Explanation stage with the packaged GGUF model: levels, caching, invalidation, sharding."""
from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from codeteacher.contracts.errors import UserError
from codeteacher.contracts.models import (
    Chunk,
    Edge,
    Entity,
    GraphNode,
    ProjectStructure,
)
from codeteacher.contracts.settings import Settings, load_settings
from codeteacher.generation import make_generator
from codeteacher.ingest.explain import (
    apply_explanations,
    explain_stage,
    load_explanations,
    merge_explanations,
    shard_of,
)

ROOT = Path(__file__).resolve().parent.parent
MINIPIC = ROOT / "src" / "codeteacher" / "demo" / "minipic"

# Used when the sample app is absent or has changed: same shapes, inline.
FALLBACK = {
    ("src/deposit.cpp", "inBounds"): """bool inBounds(const Grid& g, int i, int j) {
    // true when the 2x2 stencil anchored at (i, j) lies inside the grid with ghosts
    const int gh = g.ghosts();
    return i >= -gh && i + 1 < g.nx() + gh && j >= -gh && j + 1 < g.ny() + gh;
}""",
    ("src/deposit.cpp", "depositCharge"): """double depositCharge(const Particles& p, Grid& rho) {
    double total = 0;
    for (std::size_t n = 0; n < p.size(); ++n) {
        const int i = int(p.x[n] / rho.dx()), j = int(p.y[n] / rho.dy());
        assert(inBounds(rho, i, j));
        const double wx = p.x[n] / rho.dx() - i, wy = p.y[n] / rho.dy() - j;
        rho(i, j) += p.q * (1 - wx) * (1 - wy);
        rho(i + 1, j) += p.q * wx * (1 - wy);
        rho(i, j + 1) += p.q * (1 - wx) * wy;
        rho(i + 1, j + 1) += p.q * wx * wy;
        total += p.q;
    }
    return total;
}""",
    ("src/gather.cpp", "gatherField"): """void gatherField(const Grid& E, Particles& p) {
    for (std::size_t n = 0; n < p.size(); ++n) {
        const int i = int(p.x[n] / E.dx()), j = int(p.y[n] / E.dy());
        const double wx = p.x[n] / E.dx() - i, wy = p.y[n] / E.dy() - j;
        p.E[n] = E(i, j) * (1 - wx) * (1 - wy) + E(i + 1, j) * wx * (1 - wy) +
                 E(i, j + 1) * (1 - wx) * wy + E(i + 1, j + 1) * wx * wy;
    }
}""",
}
SAMPLE = {("src/deposit.cpp", "inBounds"): ("src/deposit.cpp", "stencilInBounds"),
          ("src/deposit.cpp", "depositCharge"): ("src/deposit.cpp", "depositChargeCIC"),
          ("src/gather.cpp", "gatherField"): ("src/gather.cpp", "gatherCIC")}


def extract_function(path: Path, name: str) -> tuple[str, int, int] | None:
    """A function's text by brace matching (test data only; the real parser is not needed)."""
    if not path.is_file():
        return None
    lines = path.read_text().splitlines()
    start = next((i for i, line in enumerate(lines) if f" {name}(" in line and
                  not line.rstrip().endswith(";")), None)
    if start is None:
        return None
    depth, seen = 0, False
    for end in range(start, len(lines)):
        depth += lines[end].count("{") - lines[end].count("}")
        seen = seen or "{" in lines[end]
        if seen and depth <= 0:
            text = "\n".join(lines[start:end + 1])
            return (text, start + 1, end + 1) if len(text) < 2600 else None
    return None


def make_chunks() -> list[Chunk]:
    chunks = []
    for (path, name), fallback in FALLBACK.items():
        spath, sname = SAMPLE[(path, name)]
        found = extract_function(MINIPIC / spath, sname)
        text, start, end = found if found else (fallback, 10, 10 + fallback.count("\n"))
        chunks.append(Chunk(id=f"{path}#{name}", path=path, kind="function", name=name,
                            qualified_name=name, start_line=start, end_line=end, text=text,
                            language="cpp", scope="src"))
    chunks.append(Chunk(id="src/gather.cpp#decl", path="src/gather.cpp", kind="declaration",
                        name="kOrder", start_line=3, end_line=3, text="constexpr int kOrder = 1;"))
    return chunks


def write_index(d: Path, chunks: list[Chunk]) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "chunks.jsonl").write_text("".join(c.model_dump_json() + "\n" for c in chunks))
    ents = [Entity(id=f"file:{p}", level="file", path=p, title=p, text=f"source file {p}",
                   source_hash=p) for p in ("src/deposit.cpp", "src/gather.cpp")]
    ents.append(Entity(id="module:src", level="module", path="src", title="src", text="src"))
    ents.append(Entity(id="chain:src/deposit.cpp#depositCharge", level="call_chain",
                       path="src/deposit.cpp", title="depositCharge", text="chain"))
    (d / "entities.jsonl").write_text("".join(e.model_dump_json() + "\n" for e in ents))
    graph = ProjectStructure(
        nodes=[GraphNode(id=f"sym:{c.id}", type="symbol", name=c.name) for c in chunks],
        edges=[Edge(source="sym:src/deposit.cpp#depositCharge",
                    target="sym:src/deposit.cpp#inBounds", type="call")])
    (d / "project_structure.json").write_text(graph.model_dump_json())


def files(d: Path) -> tuple[Path, Path, Path]:
    return d / "chunks.jsonl", d / "entities.jsonl", d / "project_structure.json"


def llm_settings(**explain) -> Settings:
    s = Settings()
    s.generation.explanations = s.generation.explanations.model_copy(update={
        "backend": "llama-cpp", "context_size": 2048, "max_tokens": 32})
    s.generation.explain = s.generation.explain.model_copy(
        update={"max_code_chars": 500, **explain})
    return s


@pytest.fixture(scope="module")
def generator():
    gen = make_generator(llm_settings().generation.explanations)
    yield gen
    gen.close()


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, generator):
    d = tmp_path_factory.mktemp("ix")
    write_index(d, make_chunks())
    report = explain_stage(*files(d), d / "explanations.jsonl", llm_settings(),
                           generator=generator)
    return d, report


ALL_IDS = {"src/deposit.cpp#inBounds", "src/deposit.cpp#depositCharge",
           "src/gather.cpp#gatherField", "file:src/deposit.cpp", "file:src/gather.cpp",
           "module:src", "chain:src/deposit.cpp#depositCharge"}


@pytest.mark.llm
def test_all_levels_explained(first_run):
    d, report = first_run
    rows = load_explanations(d / "explanations.jsonl")
    assert {r.target_id for r in rows} == ALL_IDS  # the small declaration is skipped
    assert all(r.text.strip() and r.model.startswith("llama-cpp:") for r in rows)
    modes = {r.target_id: r.mode for r in rows}
    assert modes["module:src"] == "module_level"
    assert modes["chain:src/deposit.cpp#depositCharge"] == "call_chain"
    assert modes["file:src/gather.cpp"] in ("file_level", "file_level_fallback")
    assert report.generated == 7 and report.cached == 0 and report.failed == 0
    assert report.tokens_in > 0 and report.tokens_out > 0


@pytest.mark.llm
def test_rerun_is_fully_cached(first_run, tmp_path, generator):
    d, _ = first_run
    out = tmp_path / "again.jsonl"
    report = explain_stage(*files(d), out, llm_settings(), cache=d / "explanations.jsonl",
                           generator=generator)
    assert report.generated == 0 and report.cached == 7
    assert out.read_text() == (d / "explanations.jsonl").read_text()
    # Moving code (an edit above it) changes line numbers only: nothing is regenerated.
    moved = tmp_path / "moved"
    write_index(moved, [c.model_copy(update={"start_line": c.start_line + 7,
                                             "end_line": c.end_line + 7}) for c in make_chunks()])
    report = explain_stage(*files(moved), moved / "e.jsonl", llm_settings(),
                           cache=d / "explanations.jsonl", generator=generator)
    assert report.generated == 0 and report.cached == 7


@pytest.mark.llm
def test_edit_one_chunk_regenerates_only_it_and_its_parents(first_run, tmp_path, generator):
    d0, _ = first_run
    d = tmp_path / "ix"
    shutil.copytree(d0, d)
    chunks = make_chunks()
    chunks[2].text = chunks[2].text.replace("{", "{\n    // edited", 1)
    write_index(d, chunks)
    report = explain_stage(*files(d), d / "explanations.jsonl", llm_settings(),
                           generator=generator)
    assert set(report.generated_ids) == {"src/gather.cpp#gatherField", "file:src/gather.cpp",
                                         "module:src"}
    assert report.cached == 4
    assert {r.target_id for r in load_explanations(d / "explanations.jsonl")} == ALL_IDS


@pytest.mark.llm
def test_prompt_version_bump_regenerates_only_that_mode(first_run, tmp_path, generator):
    d, _ = first_run
    s = llm_settings()
    s.generation.prompts.call_chain = s.generation.prompts.call_chain.model_copy(
        update={"version": 2})
    report = explain_stage(*files(d), tmp_path / "e.jsonl", s, cache=d / "explanations.jsonl",
                           generator=generator)
    assert report.generated_ids == ["chain:src/deposit.cpp#depositCharge"]
    assert report.by_mode["call_chain"]["generated"] == 1
    assert "generated" not in report.by_mode["chunk_explanation"]
    assert report.cached == 6


@pytest.mark.llm
def test_two_shards_and_merge_equal_one_run(first_run, tmp_path, generator):
    d, _ = first_run
    ids = {c.id for c in make_chunks()[:3]}
    assert {shard_of(i, 2) for i in ids} == {0, 1}  # both shards get work
    # The earlier one-shard output serves as cache (generation itself is covered above): the
    # shards must partition the chunks, and the merge must rebuild every entity with the same
    # cache keys as the one-shard run, so that nothing new is generated.
    shards, seen = [], []
    for i in range(2):
        shards.append(tmp_path / f"s{i}.jsonl")
        r = explain_stage(*files(d), shards[-1], llm_settings(), shard=i, of=2,
                          cache=d / "explanations.jsonl", generator=generator)
        assert r.generated == 0 and r.failed == 0
        seen.append({e.target_id for e in load_explanations(shards[-1])})
    assert seen[0] | seen[1] == ids and not seen[0] & seen[1]
    report = merge_explanations(shards, tmp_path / "merged.jsonl", llm_settings(), *files(d),
                                cache=d / "explanations.jsonl", generator=generator)
    merged = load_explanations(tmp_path / "merged.jsonl")
    one = load_explanations(d / "explanations.jsonl")
    assert {e.target_id for e in merged} == {e.target_id for e in one} == ALL_IDS
    assert {e.cache_key for e in merged} == {e.cache_key for e in one}
    assert report.missing_children == 0 and report.generated == 0 and report.cached == 4
    # A missing shard shows up as missing children, not as a silent gap.
    partial = merge_explanations(shards[:1], tmp_path / "partial.jsonl",
                                 llm_settings(levels=[]), *files(d), generator=generator)
    assert partial.missing_children == len(seen[1])


@pytest.mark.llm
def test_small_context_truncates_and_counts(tmp_path):
    s = Settings()
    s.generation.explanations = s.generation.explanations.model_copy(update={
        "backend": "llama-cpp", "context_size": 256, "max_tokens": 24})
    s.generation.explain = s.generation.explain.model_copy(update={"levels": []})
    chunk = Chunk(id="big", path="src/big.cpp", kind="function", name="big", start_line=1,
                  end_line=60, text="int big() {\n" + "    x = x * 3 + 1;\n" * 60 + "}")
    write_index(tmp_path, [chunk])
    report = explain_stage(tmp_path, None, None, tmp_path / "e.jsonl", s)
    rows = load_explanations(tmp_path / "e.jsonl")
    assert report.truncated == 1 and report.generated == 1
    assert rows[0].truncated and rows[0].text


@pytest.mark.llm
def test_file_level_only_is_written_from_the_files_code(tmp_path, generator):
    """The file-only preset (no chunk kinds, levels ["file"], the short prompt): every file
    gets a file_level explanation built from its own code, and editing one file's code
    regenerates that file's explanation alone."""
    preset = load_settings(ROOT / "config" / "settings" / "explain-qwen-0.5b.json")
    assert preset.generation.explain.kinds == [] and preset.generation.explain.levels == ["file"]
    s = llm_settings(kinds=[], levels=["file"])
    s.generation.prompts = preset.generation.prompts  # the preset's file_level_short.txt
    write_index(tmp_path, make_chunks())
    report = explain_stage(*files(tmp_path), tmp_path / "e.jsonl", s, generator=generator)
    rows = load_explanations(tmp_path / "e.jsonl")
    assert {r.target_id: r.mode for r in rows} == {"file:src/deposit.cpp": "file_level",
                                                   "file:src/gather.cpp": "file_level"}
    assert all(r.text.strip() for r in rows)
    assert report.generated == 2 and report.failed == 0 and set(report.by_mode) == {"file_level"}
    chunks = make_chunks()
    chunks[2].text = chunks[2].text.replace("{", "{\n    // edited", 1)  # gather.cpp's code
    write_index(tmp_path, chunks)
    again = explain_stage(*files(tmp_path), tmp_path / "e.jsonl", s, generator=generator)
    assert again.generated_ids == ["file:src/gather.cpp"] and again.cached == 1


@pytest.mark.llm
def test_index_build_with_file_explanations_reports_and_embeds_them(tmp_path):
    """`codeteacher index` with explanations on: the build report carries the stage's report,
    and each file record holds its explanation in the text it is embedded and searched by."""
    from codeteacher.index.layout import embed_text, lexical_text
    from codeteacher.ingest.build import build_index

    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "heat.cpp").write_text(
        "// Explicit heat diffusion step\nvoid step(double* u, int n, double r) {\n"
        "  for (int i = 1; i < n - 1; ++i) u[i] += r * (u[i-1] - 2*u[i] + u[i+1]);\n}\n")
    (repo / "src" / "norm.cpp").write_text(
        "#include <cmath>\ndouble norm2(const double* u, int n) {\n  double s = 0;\n"
        "  for (int i = 0; i < n; ++i) s += u[i] * u[i];\n  return std::sqrt(s);\n}\n")
    s = llm_settings(kinds=[], levels=["file"])
    s.generation.prompts.file_level = s.generation.prompts.file_level.model_copy(
        update={"template": "file_level_short.txt"})
    report = build_index(repo, out=tmp_path / "idx", settings=s)
    assert report.explanations["generated"] == 2 and report.explanations["failed"] == 0
    assert report.explanations["by_mode"] == {"file_level": {"generated": 2}}
    records = [Chunk.model_validate_json(line) for line in
               (tmp_path / "idx" / "records.jsonl").read_text().splitlines()]
    files_ = {r.path: r for r in records if r.kind == "file"}
    assert set(files_) == {"src/heat.cpp", "src/norm.cpp"}
    for r in files_.values():
        assert r.explanation.strip()
        assert r.explanation[:100] in embed_text(r, 1600) and r.explanation in lexical_text(r)
    assert not any(r.explanation for r in records if r.kind != "file")


def test_backend_none_writes_empty_output(tmp_path):
    write_index(tmp_path, make_chunks())
    report = explain_stage(*files(tmp_path), tmp_path / "e.jsonl", Settings())
    assert report.backend == "none" and report.generated == 0
    assert (tmp_path / "e.jsonl").read_text() == ""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_server_down_leaves_no_partial_artifact(tmp_path):
    write_index(tmp_path, make_chunks())
    out = tmp_path / "explanations.jsonl"
    out.write_text("previous\n")
    port = free_port()
    s = Settings()
    s.generation.explanations = s.generation.explanations.model_copy(update={
        "backend": "openai", "base_url": f"http://127.0.0.1:{port}/v1", "retries": 1,
        "timeout_s": 2})
    with pytest.raises(UserError, match=f"127.0.0.1:{port}"):
        explain_stage(*files(tmp_path), out, s, cache=[])
    assert out.read_text() == "previous\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_bad_shard_and_missing_inputs(tmp_path):
    with pytest.raises(UserError, match="shard"):
        explain_stage(*files(tmp_path), tmp_path / "e.jsonl", llm_settings(), shard=2, of=2)
    with pytest.raises(UserError, match="chunks file not found"):
        explain_stage(*files(tmp_path), tmp_path / "e.jsonl", llm_settings())


@pytest.mark.parametrize("missing", ["entities.jsonl", "project_structure.json"])
def test_a_missing_entities_or_structure_input_is_an_error(tmp_path, missing):
    """Not a run that quietly explains no entities (both are read before any model loads)."""
    write_index(tmp_path, make_chunks())
    (tmp_path / missing).unlink()
    with pytest.raises(UserError, match=f"file not found: {tmp_path / missing}"):
        explain_stage(*files(tmp_path), tmp_path / "e.jsonl", llm_settings())
    with pytest.raises(UserError, match="file not found"):
        explain_stage(tmp_path, None, None, tmp_path / "e.jsonl", llm_settings())  # index dir
    shard = tmp_path / "shard0.jsonl"
    shard.write_text("")
    with pytest.raises(UserError, match="file not found"):
        merge_explanations([shard], tmp_path / "m.jsonl", llm_settings(), *files(tmp_path))


def test_entity_levels_need_their_inputs_named(tmp_path):
    write_index(tmp_path, make_chunks())
    shard = tmp_path / "shard0.jsonl"
    shard.write_text("")
    with pytest.raises(UserError, match=r"needs the entities file \(--entities\)"):
        merge_explanations([shard], tmp_path / "m.jsonl", llm_settings(),
                           chunks=tmp_path / "chunks.jsonl")
    with pytest.raises(UserError, match=r"call chains needs the structure file \(--structure\)"):
        merge_explanations([shard], tmp_path / "m.jsonl", llm_settings(),
                           chunks=tmp_path / "chunks.jsonl", entities=tmp_path / "entities.jsonl")


def test_apply_explanations_sets_matching_records():
    from codeteacher.contracts.models import Explanation

    chunks = make_chunks()
    records = chunks + [Entity(id="file:src/gather.cpp", level="file", path="src/gather.cpp",
                               title="g", text="t").to_chunk()]
    expl = [Explanation(target_id=chunks[0].id, mode="chunk_explanation", text="A", cache_key="k"),
            Explanation(target_id="file:src/gather.cpp", mode="file_level", text="F",
                        cache_key="k2")]
    out = apply_explanations(records, expl)
    assert [r.explanation for r in out] == ["A", "", "", "", "F"]
    assert records[0].explanation == ""  # inputs are not modified
    assert json.loads(out[0].model_dump_json())["explanation"] == "A"


def test_stage_explain_cli_needs_no_indexing_libraries(tmp_path):
    """GPU nodes run only `codeteacher stage explain|merge-explanations`: that path must not
    import FAISS, bm25s, tree-sitter or sentence-transformers (not installed there)."""
    import subprocess
    import sys

    write_index(tmp_path, make_chunks())
    chunks, entities, structure = files(tmp_path)
    probe = (
        "import runpy, sys\n"
        f"sys.argv = ['codeteacher', 'stage', 'explain', '--chunks', {str(chunks)!r},"
        f" '--entities', {str(entities)!r}, '--structure', {str(structure)!r},"
        f" '--out', {str(tmp_path / 'shard.jsonl')!r}]\n"
        "try:\n    runpy.run_module('codeteacher.shells.cli', run_name='__main__')\n"
        "except SystemExit as e:\n    assert not e.code, e.code\n"
        "heavy = {'faiss', 'bm25s', 'tree_sitter', 'tree_sitter_cpp', 'sentence_transformers'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "shard.jsonl").is_file()


@pytest.mark.llm
def test_the_build_report_carries_the_explain_report(first_run):
    # A build with explanations ends with its report: the explain report's text fields
    # (backend, model) once failed its validation after the whole run had been paid for.
    from codeteacher.ingest.build import BuildReport

    _, report = first_run
    built = BuildReport(name="x", out="x", files=1, explanations=report.model_dump())
    assert built.explanations["backend"] == report.backend
    assert built.explanations["generated"] == report.generated > 0
