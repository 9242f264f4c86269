"""Doc and build chunkers: Markdown, reStructuredText, LaTeX, plain text, CMake and Makefiles."""
from __future__ import annotations

import textwrap

from codeteacher.contracts.models import ParsedFile
from codeteacher.contracts.settings import ChunkSettings
from codeteacher.ingest.parse.text import chunk_build, chunk_doc


def src(s: str) -> str:
    return textwrap.dedent(s).lstrip("\n")


def line_of(text: str, marker: str) -> int:
    return next(i for i, line in enumerate(text.split("\n"), 1) if marker in line)


def exact(pf: ParsedFile, text: str) -> None:
    """Every chunk's text is exactly its line range of the source."""
    lines = text.split("\n")
    for c in pf.chunks:
        assert c.text == "\n".join(lines[c.start_line - 1: c.end_line]), c.id


README = src("""
    Project badges and a one-line pitch.

    # Gyro

    Gyro simulates plasmas.

    ## Install

    ```bash
    # this is a shell comment, not a heading
    cmake -B build
    ```

    Then build it.

    Usage Guide
    -----------

    Run `gyro input.yaml`.

    ### Options ###

    The --fast flag trades accuracy for speed.

    ## Empty parent

    ### Child

    Child text is here.
""")


def test_markdown_headings_paths_and_preamble():
    pf = chunk_doc("docs/README.md", README, fmt="markdown", file_sha="s1")
    exact(pf, README)
    by = {c.name: c for c in pf.chunks}
    assert list(by) == ["README.md", "Gyro", "Install", "Usage Guide", "Options", "Child"]
    assert by["README.md"].heading_path == ["README.md"]
    assert (by["README.md"].start_line, by["README.md"].end_line) == (1, 1)
    assert by["Install"].heading_path == ["Gyro", "Install"]
    assert by["Install"].qualified_name == "Gyro > Install"
    assert (by["Install"].start_line, by["Install"].end_line) == (
        line_of(README, "## Install"), line_of(README, "Then build it."))
    assert "cmake -B build" in by["Install"].text  # the fenced # line stayed in its section
    assert by["Usage Guide"].heading_path == ["Gyro", "Usage Guide"]  # setext level 2
    assert by["Usage Guide"].start_line == line_of(README, "Usage Guide")
    assert by["Options"].heading_path == ["Gyro", "Usage Guide", "Options"]
    assert by["Child"].heading_path == ["Gyro", "Empty parent", "Child"]
    assert by["Child"].end_line == line_of(README, "Child text is here.")
    c = by["Gyro"]
    assert c.kind == "doc_section" and c.scope == "docs" and c.file_sha == "s1"
    assert c.language == "markdown" and c.id == f"docs/README.md#doc_section:Gyro@{c.start_line}"


def test_markdown_tilde_fence_and_no_heading_file():
    text = "~~~\n# inside\n~~~\n\nplain words only here\n"
    pf = chunk_doc("notes.md", text, fmt="markdown")
    assert [c.name for c in pf.chunks] == ["notes.md"]
    assert (pf.chunks[0].start_line, pf.chunks[0].end_line) == (1, 5)


def test_oversized_section_split_into_titled_parts():
    paras = [f"Paragraph {i} " + "word " * 12 for i in range(6)]  # ~75 chars each
    text = "# Big\n\n" + "\n\n".join(p.strip() for p in paras) + "\n"
    pf = chunk_doc("big.md", text, fmt="markdown", settings=ChunkSettings(max_doc_chars=200))
    exact(pf, text)
    names = [c.name for c in pf.chunks]
    n = len(names)
    assert n == 3 and names == [f"Big (part {i}/3)" for i in (1, 2, 3)]
    assert [(c.part, c.parts) for c in pf.chunks] == [(1, 3), (2, 3), (3, 3)]
    assert all(c.heading_path == ["Big"] and len(c.text) <= 200 for c in pf.chunks)
    assert pf.chunks[0].start_line == 1 and pf.chunks[-1].end_line == text.count("\n")
    assert [(c.start_line, c.end_line) for c in pf.chunks] == [(1, 5), (7, 9), (11, 13)]
    assert len({c.id for c in pf.chunks}) == 3


RST = src("""
    =====
    Gyro
    =====

    Intro paragraph.

    Building
    ========

    Use cmake.

    Options
    -------

    Flags go here::

        not a heading
        -------------

    Testing
    =======

    Run ctest.
""")


def test_rst_heading_levels_by_first_appearance():
    pf = chunk_doc("docs/index.rst", RST, fmt="rst")
    exact(pf, RST)
    by = {c.name: c for c in pf.chunks}
    assert list(by) == ["Gyro", "Building", "Options", "Testing"]
    assert by["Gyro"].start_line == 1  # the overline is part of the section
    assert by["Building"].heading_path == ["Gyro", "Building"]
    assert by["Options"].heading_path == ["Gyro", "Building", "Options"]
    assert by["Testing"].heading_path == ["Gyro", "Testing"]
    assert "not a heading" in by["Options"].text
    assert by["Options"].end_line == line_of(RST, "-------------")


LATEX = src(r"""
    \documentclass{article}
    \title{Gyro manual}
    \begin{document}
    \maketitle
    \section{Building and running}
    \subsection{Building}
    Type make in the src folder.
    % \section{commented out, not a heading}
    \subsection*[Tests]{Running the \emph{regression} tests}
    Run the script in test/.
    \section{Physics}
    The CFL~number limits the time step.
    \end{document}
""")


def test_latex_sections_by_sectioning_command():
    pf = chunk_doc("doc/manual.tex", LATEX, fmt="latex")
    exact(pf, LATEX)
    by = {c.name: c for c in pf.chunks}
    # the preamble is titled by the file name; a heading with no body of its own gives no
    # chunk but heads its subsections
    assert list(by) == ["manual.tex", "Building", "Running the regression tests", "Physics"]
    assert by["manual.tex"].end_line == line_of(LATEX, "\\maketitle")
    assert by["Building"].heading_path == ["Building and running", "Building"]
    assert "commented out" in by["Building"].text  # a comment line is not a heading
    assert by["Running the regression tests"].heading_path == [
        "Building and running", "Running the regression tests"]
    assert by["Physics"].heading_path == ["Physics"] and "CFL~number" in by["Physics"].text


def test_latex_without_sections_is_chunked_as_plain_text():
    text = "A short note.\n\nWith two paragraphs.\n"
    assert [c.name for c in chunk_doc("n.tex", text, fmt="latex").chunks] == \
        [c.name for c in chunk_doc("n.tex", text, fmt="text").chunks]


def test_plain_text_headings_and_paragraph_sections():
    text = src("""
        Gyro release notes for the spring version.

        Second paragraph of the preamble.

        INSTALLATION

        Unpack the archive and run make.

        Known issues
        ============

        None so far, but watch this space.
    """)
    pf = chunk_doc("NOTES", text, fmt="text")
    exact(pf, text)
    assert [c.name for c in pf.chunks] == [
        "Gyro release notes for the spring version.", "INSTALLATION", "Known issues"]
    assert pf.chunks[0].end_line == 3
    assert pf.chunks[1].heading_path == ["INSTALLATION"]
    assert (pf.chunks[2].start_line, pf.chunks[2].end_line) == (9, 12)

    small = ChunkSettings(max_doc_chars=60)
    plain = "first line of one\nmore words here\n\nsecond block line\nand more\n\nthird block\n"
    pf = chunk_doc("NOTES", plain, fmt="text", settings=small)
    assert [(c.name, c.start_line, c.end_line) for c in pf.chunks] == [
        ("first line of one", 1, 2), ("second block line", 4, 7)]


def test_chunkers_never_raise():
    for text in ["", "\n\n", "#", "===\n", "```\nunclosed", "\x00\xff", "a" * 5000,
                 "\\section{", "\\section{}\n", "\\chapter*[x]{a {b} c"]:
        for fmt in ("markdown", "rst", "latex", "text", "other"):
            assert isinstance(chunk_doc("x", text, fmt=fmt), ParsedFile)
        assert isinstance(chunk_build("CMakeLists.txt", text), ParsedFile)
        assert isinstance(chunk_build("Makefile", text), ParsedFile)


CMAKE = "\n".join(
    ["# Gyro: top-level build.", "# Builds the library and tests.", "",
     "cmake_minimum_required(VERSION 3.20)", "project(Gyro LANGUAGES CXX)", "",
     "find_package(Kokkos REQUIRED)", ""]
    + [f"option(GYRO_OPT{i} \"option {i}\" OFF)" for i in range(6)] + [""]
    + ["if(GYRO_OPT1)", "  add_definitions(", "    -DGYRO_ONE", "  )", "endif()", ""]
    + ["add_library(gyro", "  src/a.cpp", "  src/b.cpp", ")", ""]
    + ["add_subdirectory(tests)", "install(TARGETS gyro)", ""]
)


def test_cmake_windows_cut_at_command_boundaries():
    pf = chunk_build("CMakeLists.txt", CMAKE, settings=ChunkSettings(build_window_lines=12))
    exact(pf, CMAKE)
    spans = [(c.start_line, c.end_line) for c in pf.chunks]
    assert spans[0][0] == 1 and spans[-1][1] == CMAKE.rstrip("\n").count("\n") + 1
    lines = CMAKE.split("\n")
    for c in pf.chunks:
        assert c.end_line - c.start_line + 1 <= 12 and c.kind == "build" and c.scope == "build"
        assert not lines[c.start_line - 1].startswith((" ", ")"))  # never inside a command
        assert c.comment == "Gyro: top-level build.\nBuilds the library and tests."
    first = pf.chunks[0]
    assert first.name == "CMakeLists.txt: cmake_minimum_required, project, find_package"
    assert any(c.text.startswith("if(GYRO_OPT1)") for c in pf.chunks)  # the block is kept whole
    assert pf.leading_comment == "Gyro: top-level build.\nBuilds the library and tests."


def test_makefile_windows_named_by_targets():
    text = ("CXX ?= g++\n\nall: gyro\n\ngyro: main.o\n\t$(CXX) -o gyro main.o\n\n"
            "clean:\n\trm -f gyro\n")
    pf = chunk_build("Makefile", text, settings=ChunkSettings(build_window_lines=40))
    exact(pf, text)
    assert len(pf.chunks) == 1 and pf.chunks[0].name == "Makefile: all, gyro, clean"
    assert (pf.chunks[0].start_line, pf.chunks[0].end_line) == (1, 9)
