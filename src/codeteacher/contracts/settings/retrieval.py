"""Settings of the online retrieval stage: intent routing, metadata rerank, structural
expansion, the final-context filter and the optional cross-encoder.

Every weight is named and explained here; none is hidden in code. Cue lists are generic
English about code (never words of a particular codebase), matched on the lower-cased question.
"""
from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError


def _compiles(pattern: str) -> str:
    """A cue is compiled at the first question; a bad one must fail when settings load, with
    the field's path, not inside a query."""
    try:
        re.compile(pattern)
    except re.error as e:
        raise PydanticCustomError("bad_regex", "not a valid regular expression ({err}): {pattern}",
                                  {"err": str(e), "pattern": pattern}) from None
    return pattern


Regex = Annotated[str, AfterValidator(_compiles)]


class _S(BaseModel):
    model_config = ConfigDict(extra="forbid")


class IntentRule(_S):
    cues: list[Regex] = Field(description="Regular expressions on the lower-cased question.")
    profile: str = Field(description="Expansion profile used for this intent.")
    prefer_kinds: list[str] = Field(default_factory=list,
                                    description="Chunk kinds the answer is usually made of.")
    allow_scopes: list[str] = Field(default_factory=list,
                                    description="Scopes (test, build, example) NOT penalised.")
    flow_cue: bool = Field(default=False, description="Reward call chains and functions with "
                           "several calls (questions about how data or control moves).")
    api_cue: bool = Field(default=False, description="Reward commented declarations in headers "
                          "(questions about how to use an interface).")
    max_per_file: int | None = Field(default=None, ge=1, description=(
        "Evidence items per file for this intent (unset: retrieval.max_per_file). A location "
        "answer is a list of places: one item per file leaves room for the other places."))
    file_channel_weight: float | None = Field(default=None, ge=0, description=(
        "Scale of the whole-file BM25 list for this intent (unset: retrieval.file_channel."
        "weight). A lookup of one named place is answered by a chunk, not by the file whose "
        "words overlap most with the question."))
    scope_channel: list[Literal["src", "test", "example", "build", "docs"]] = Field(
        default_factory=list, description=(
            "Scopes ranked on their own for this intent (retrieval.scope_channel): the files "
            "that answer a build question are build files, whatever words they use."))


def _default_intents() -> dict[str, IntentRule]:
    # Order matters: the first intent with a matching cue wins; the fallbacks come after.
    R = IntentRule
    return {
        "build_install": R(cues=[r"\b(install\w*|compil(e|ing|er|ation)|cmake\w*|toolchain|"
                                 r"linker|linking|dependenc(y|ies))\b",
                                 r"\b(build (system|options?|flags?|type|with|the (code|library|"
                                 r"project|docs))|to build|building (the )?(code|library|project))",
                                 r"\bconfigur\w+ (the )?(build|project)\b"],
                           profile="minimal", prefer_kinds=["doc_section", "build", "file"],
                           allow_scopes=["build", "docs"], scope_channel=["build"]),
        "testing": R(cues=[r"\b(unit ?tests?|tests?\b|tested|testing|ctest|gtest|regression|"
                           r"benchmark|profil(e|ing)|validat|verif(y|ies|ied|ication)|"
                           r"check (that|whether|if)|correctness|continuous[- ]integration|ci\b)"],
                     profile="minimal", prefer_kinds=["function", "file", "doc_section"],
                     allow_scopes=["test", "example", "docs", "build"]),
        "comparison": R(cues=[r"\b(differ|difference|compare|comparison|versus|vs\.?|"
                              r"tradeoffs?|trade-offs?|instead of|rather than)\b"],
                        profile="balanced", prefer_kinds=["class", "file", "function"]),
        "location_lookup": R(cues=[r"^(where|in which|which (file|header|source|class|function)"
                                   r")\b", r"\b(defined|declared|located|implemented in|"
                                   r"lives?|find the (code|file))\b"],
                             profile="minimal", prefer_kinds=["function", "method", "class",
                                                              "struct", "file"],
                             max_per_file=1, file_channel_weight=0.5),
        "data_flow": R(cues=[r"\b(flows?|passed|propagat|from the .* to|back to|into the|"
                             r"transfer|data ?flow|moves? .* (to|between))\b"],
                       profile="broad", prefer_kinds=["call_chain", "function", "method"],
                       flow_cue=True),
        "workflow": R(cues=[r"\b(workflow|steps?|sequence|pipeline|order of|lifecycle|"
                            r"time ?step|main loop|what happens when|run[s]? through)\b"],
                      profile="broad", prefer_kinds=["call_chain", "function", "method"],
                      flow_cue=True),
        "api_usage": R(cues=[r"^how (do|can|should|would) (i|you|we|one)\b",
                             r"\b(usage|how to (use|call|create|construct|set ?up)|example of|"
                             r"api\b|interface to)"],
                       profile="balanced", prefer_kinds=["class", "function", "method",
                                                         "constructor", "doc_section"],
                       allow_scopes=["example", "docs"], api_cue=True),
        "module_overview": R(cues=[r"\b(module|folder|directory|subsystem|package|component|"
                                   r"library layout|overview)\b"],
                             profile="balanced", prefer_kinds=["module", "file"]),
        "file_purpose": R(cues=[r"\b(purpose of|what (does|is) \S+\.\w+|role .* file|"
                                r"file .*(do|for|responsib))"],
                          profile="minimal", prefer_kinds=["file"]),
        "algorithm": R(cues=[r"\b(algorithm|how does .* (work|compute|solve|approximat)|"
                             r"method|scheme|numeric|formula|equation|discreti[sz]|"
                             r"interpolat|converge|stencil|transform)"],
                       profile="balanced", prefer_kinds=["function", "method", "class"]),
        "symbol_explanation": R(cues=[r"\b(what (does|is)|role of|responsib|what .* for\b|"
                                      r"explain|describe|meaning of)"],
                                profile="minimal", prefer_kinds=["class", "struct", "function",
                                                                 "method"]),
    }


class RoutingSettings(_S):
    enabled: bool = Field(default=True, description="Classify intent; off = 'general' intent.")
    intents: dict[str, IntentRule] = Field(
        default_factory=_default_intents,
        description="Intent name -> rule; the first intent with a matching cue wins.")
    default_intent: str = Field(default="general",
                                description="Intent of a question no cue matches.")
    default_profile: str = Field(default="balanced", description="Expansion profile of the "
                                 "default intent (a name in expansion.profiles).")
    named_file_intent: str = Field(default="file_purpose", description="Intent of a question "
                                   "that names a file and no symbol when no cue matches, or when "
                                   "the cue matched is one of named_file_overrides (a named file "
                                   "with a generic 'what does ... do' asks for its purpose).")
    named_file_overrides: list[str] = Field(default_factory=lambda: ["symbol_explanation"],
                                            description="Intents a named file (and no symbol) "
                                            "turns into named_file_intent.")
    entity_cues: dict[str, Regex] = Field(
        default_factory=lambda: {
            "function": r"\b(function|routine|method|kernel|procedure)s?\b",
            # "the data layout", "which data structure owns": a question about types.
            "class": r"\b(class|struct|type|template)(es|s)?\b|\b(data|memory) "
                     r"(structure|layout)s?\b",
            "file": r"\b(file|header|source)s?\b|\.\w{1,4}\b",
            "module": r"\b(module|folder|directory|subsystem|package)s?\b",
            "call_chain": r"\b(call(s|ed|er|ers)?|call ?chain|invok\w*)\b",
            "documentation": r"\b(doc(s|umentation)?|readme|manual|guide)\b",
            "build": r"\b(build|cmake|compil\w*|install\w*)\b",
            "test": r"\b(tests?|tested|testing)\b",
        },
        description="Requested entity types: regex per type on the lower-cased question.")
    naming_cue: Regex = Field(
        default=r"\bwhat\s+(?:is|are|was|were)\b[^?.!;]*?\bcalled(?=\s*(?:[?.!,;:]|$))|"
                r"\b(?:file|script|function|routine|method|class|variable|macro|option|flag|"
                r"folder|directory|binary|executable|program|tool|library|module|header|"
                r"target|parameter|field|struct|type)s?\s+called\b(?!\s+(?:by|from|in|inside|"
                r"within|during|when|whenever|before|after|at|on|once|twice|each|every|per|"
                r"for|again|only|first|last|directly|indirectly|here|there)\b)",
        description="'called' that names rather than calls ('what is the executable called?', "
                    "'a script called X'; not 'a function called from X'): the word is left "
                    "out before entity_cues are matched, so the question asks for no call "
                    "chain (a trailing 'called' of each match is removed).")


class RerankWeights(_S):
    """Added to the fused retrieval score (reciprocal-rank fusion gives ~0.01-0.03 per list,
    exact lookups ~0.5-1.0), so these weights nudge order among similar candidates."""

    name_match: float = Field(default=0.03, description="Share of the chunk name's identifier "
                              "parts that occur in the question: names are the strongest cue.")
    path_match: float = Field(default=0.012, description="Share of question words found in the "
                              "chunk's path (folder and file names describe the code).")
    level_match: float = Field(default=0.012, description="The chunk kind is one the intent or "
                               "the question asks for (file, class, function, ...).")
    documented: float = Field(default=0.004, description="Has a doc comment or explanation: "
                              "better evidence for a reader.")
    file_support: float = Field(default=0.004, description="Per other candidate from the same "
                                "file in the top list (capped at 3): files with several hits are "
                                "likelier to be the answer.")
    flow_cue: float = Field(default=0.01, description="Call-chain entities and functions with "
                            "several calls, for intents with flow_cue set (data flow, workflow).")
    api_cue: float = Field(default=0.008, description="Declarations/definitions in headers with a "
                           "comment, for intents with api_cue set (API usage).")
    low_signal: float = Field(default=-0.025, description="Trivial declarations, forward "
                              "declarations, one-line accessors, include lists.")
    off_scope: float = Field(default=-0.02, description="Chunks of an off_scopes scope (test, "
                             "build) when the question is not about them.")
    generated: float = Field(default=-0.02, description="Files a tool says it wrote (scope "
                             "'generated', collect.generated_marker: configure, Makefile.in): "
                             "they repeat their source (configure.ac, Makefile.am) at length, "
                             "so BM25 ranks them above it; as off_scope.")
    option_code: float = Field(default=0.03, description="Code that reads run options (the "
                               "command line, an input deck's keywords: option_constructs) when "
                               "the question asks how a run is set up (option_cue): recall@5 up on "
                               "both dev corpora and one held-aside corpus, level on the rest "
                               "(0.01 moved one question, 0.02 two).")
    project_metadata: float = Field(default=-0.02, description="Licence, changelog, authors "
                                    "and similar files when the question is not about them: "
                                    "they describe the project, not its code (recall@5 up on "
                                    "two held-aside corpora, unchanged on the rest).")
    third_party: float = Field(default=-0.02, description="Files under a folder that carries "
                               "its own licence (`third_party_markers`): a copy of another "
                               "project kept inside this one (a vendored library, a packaging "
                               "tool), which answers questions about that project, not this one; "
                               "not when the question names the folder.")
    output_code: float = Field(default=-0.02, description="Files whose name says they write "
                               "results (output_words: output.cpp, visualization.h) when the "
                               "question does not ask about output (output_cue): a dump or "
                               "visualisation writer names every field of the run, so it matches "
                               "questions about them by vocabulary (recall@5 up on two held-aside "
                               "corpora, level on the rest, @10 too).")
    other_build_tool: float = Field(default=-0.02, description="Build files of another build "
                                    "tool than the one the question names (build_tool_cues): "
                                    "a question about the CMake build is not answered by a "
                                    "Makefile.")


class RerankSettings(_S):
    enabled: bool = Field(default=True, description="Rerank by metadata; off = fused order.")
    weights: RerankWeights = Field(default_factory=RerankWeights,
                                   description="Feature weights added to the fused score.")
    top_n: int = Field(default=80, description="Candidates reranked.")
    metadata_files: list[str] = Field(
        default=["license", "licence", "copying", "copyright", "notice", "changelog", "changes",
                 "news", "history", "authors", "contributors", "contributing",
                 "code_of_conduct", "citation"],
        description="File names (lower case, before the first dot) that hold project metadata.")
    off_scopes: list[Literal["test", "build", "example"]] = Field(
        default=["test", "build", "example"], description="Scopes whose chunks take the "
        "off_scope weight when the question is not about them (routing allow_scopes, wanted). "
        "An example's driver is exempt (driver_scopes): an example folder often holds the "
        "program's own main, and ranking it down cost one held-aside corpus two questions; "
        "example decks and sample outputs took answer slots (two corpora up, the rest level).")
    driver_scopes: list[Literal["test", "build", "example"]] = Field(
        default=["example"], description="Of these off_scopes, a file that holds the "
        "program's entry point (a C-family main, a Fortran main program) takes no off_scope "
        "weight: an example folder often holds the program's own driver.")
    third_party_notice: bool = Field(default=True, description="A folder most of whose code "
                                     "files open with a licence notice of a holder that no code "
                                     "file outside it names is another project's copy too "
                                     "(API headers vendored without their licence file).")
    third_party_own_parts: bool = Field(default=True, description="A licensed folder is "
                                        "still this project's own part when it holds most of "
                                        "the code, carries the root's licence word for word, or "
                                        "most of its code file names recur outside the licensed "
                                        "folders (separately released ports): recall@5 up on "
                                        "one held-aside corpus, level on the rest, @10 too.")
    third_party_markers: list[str] = Field(
        default=["license", "licence", "copying"],
        description="File names (lower case, before the first dot) whose presence in a folder "
                    "below the root marks that folder as another project's copy.")
    build_tool_cues: dict[str, Regex] = Field(
        default_factory=lambda: {"cmake": r"\bcmake\w*", "make": r"\b(makefiles?|gnu make|gmake)\b"},
        description="Build-file language -> question words (regex over the question's "
                    "lower-case tokens) that name that build tool (other_build_tool).")
    metadata_cue: Regex = Field(
        default=r"\b(licen[cs]\w*|copyright|copying|changelog|changes|release|history|"
                r"news|versions?|authors?|contribut\w*|cite|citation)\b",
        description="Question words (regex over the question's lower-case tokens) that ask "
                    "about project metadata.")
    output_words: list[str] = Field(
        default=["output", "write", "writer", "dump", "visualization", "visualisation",
                 "visualize", "plot", "print", "vtk"],
        description="Identifier parts (stemmed) of a file name that say the file writes "
                    "results (output_code). Not symbol names: a print_help or write_restart sits "
                    "in a driver that answers other questions (that cost a held-aside corpus).")
    output_cue: Regex = Field(
        default=r"\b(outputs?|writ(e|es|ing|ten|er|ers)|dump\w*|visuali[sz]\w*|plot\w*|"
                r"print\w*|vtk|hdf5?|i/o|io|checkpoint\w*|restart\w*|snapshots?)\b",
        description="Question words that ask about output: then output code is not ranked down.")
    option_cue: Regex = Field(
        default=r"\b(command[- ]?line|input (deck|file)s?|options?|keywords?|settings?|"
                r"parameters?|defaults?|run[- ]?time|arguments?|flags?)\b",
        description="Question words that ask how a run is set up: the code that reads the "
                    "options answers it.")
    option_skip_intents: list[str] = Field(
        default=["build_install"],
        description="Intents whose options are build settings, answered by build files.")
    option_constructs: Regex = Field(
        default=r"\bargv\s*\[|\bgetopt\w*\s*\(|\bif\s*\(.*\"-{0,2}[A-Za-z][\w.-]*\"",
        description="A line of code that reads the command line, or a condition on a literal "
                    "word (an option or keyword name: `strcmp(arg, \"--steps\")`, "
                    "`starts_with(\"end_time\", line)`).")
    option_min_lines: int = Field(default=3, ge=1, description="Matches of option_constructs "
                                  "(about one per line that reads or tests an option) that make "
                                  "a chunk an option reader (one check is not).")
    trivial_lines: int = Field(default=2, description="Code chunks this short without a comment "
                               "count as low-signal.")
    flow_min_calls: int = Field(default=3, description="Calls that make a function a flow "
                                "(flow_cue).")
    file_support_cap: int = Field(default=3, description="Other candidates of the same file "
                                  "counted for file_support.")


class ExpansionProfile(_S):
    call: int = Field(description="Callees and callers of a seed.")
    owner: int = Field(description="The class owning a seed method.")
    file_symbols: int = Field(description="Symbols of a seed file entity.")
    module_files: int = Field(description="File entities of a seed module.")
    include: int = Field(description="Files a seed file includes (supplementary class).")
    total: int = Field(description="Cap on all expansions.")
    twin: int = Field(default=0, description="Declaration/definition twin files of a seed "
                      "(X.h <-> X.cpp): a header and its implementation answer together (1 in "
                      "every profile, for the top seed at twin_decay: recall@5 up on a held-"
                      "aside C corpus, level on the rest; eval/README.md).")
    build: int = Field(default=0, description="Build files (CMake, Makefile) that name a seed's "
                       "file, since they say when and how it is compiled.")
    callers: int = Field(default=0, description="Callers of a seed function in OTHER files "
                         "(the driver that runs it), at other_file_decay (1 in every profile: "
                         "dev-set recall@5 up on both corpora, v2 unchanged; eval/README.md).")
    callees: int = Field(default=0, description="Callees of the top seed (callee_seeds) in "
                         "OTHER files that the question's own channels found too, at "
                         "other_file_decay (1 in every profile: dev recall@5 up on two "
                         "corpora, level on six; eval/README.md).")
    bases: int = Field(default=0, description="Base classes of a seed class (another file, the "
                       "interface the class implements).")
    build_links: int = Field(default=0, description="Build files a seed build file hands work "
                             "to or gets it from (add_subdirectory, include, make -C), at "
                             "other_file_decay: a build is read from the top file down to the "
                             "one that does the work (2 in every profile: recall@5 up on three "
                             "of nine dev corpora, level on the rest; eval/README.md).")
    macro_builds: int = Field(default=0, description="Build files that mention a macro the "
                              "seed's file tests (#ifdef M, #if defined(M); -DM, "
                              "target_compile_definitions), when the question asks how to "
                              "switch something at build time (expansion.macro_cue): a "
                              "compile-time switch is tested in the code and set by the build "
                              "(1 in every profile: recall@5 up on three of eleven seen "
                              "corpora, level on the rest and v2; eval/README.md).")
    includers: int = Field(default=0, description="Files that include a seed file the "
                           "question names (another file, at other_file_decay), when few do "
                           "(includers_max_files): what a header is for is seen where it is "
                           "included; the question's own channels choose among them (2 in "
                           "every profile: recall@5 up on two of nine dev corpora, level on "
                           "the rest; for any header found, not only named ones, it cost "
                           "three).")


class ExpansionSettings(_S):
    enabled: bool = Field(default=True, description="Add graph neighbours of the top results.")
    seeds: int = Field(default=5, description="Top primary results expanded (5 over 4: "
                       "recall@5 up on three of twelve seen corpora, level on the rest; 6 and "
                       "8 cost two sets a file).")
    decay: float = Field(default=0.45, description="Expansion score = seed score × decay; keeps "
                         "neighbours below strong primary hits.")
    callee_seeds: int = Field(default=2, ge=0, description="Top seeds whose callees in other "
                              "files may join (profile.callees): from every seed, a driver's "
                              "many callees push out better primary hits (2 over 1 with five "
                              "seeds: one corpus up, none down; 3 cost two).")
    callee_min_statements: int = Field(default=2, ge=0, description="Statements (semicolons) "
                                       "a callee needs to join (profile.callees): an accessor "
                                       "that returns a member does no work worth showing (a "
                                       "first look at a held-aside corpus lost one file to one).")
    neighbour_order: Literal["similarity", "found_first"] = Field(
        default="found_first", description="How a caller or callee in another file is "
        "chosen: the one the question also found, by its score (then by similarity to the "
        "question), or by similarity alone. Of a helper's callers, the one the words of the "
        "question also hit says more than the one nearest in embedding space.")
    twin_seeds: int = Field(default=1, ge=0, description="Top seeds whose declaration/"
                            "definition twin (X.c <-> X.h) may join (profile.twin): the twin "
                            "of every seed pushed out other files of the answer (eval/README).")
    twin_decay: float = Field(default=0.7, description="Decay for the best match's twin file: "
                              "below other_file_decay, so that it joins the first five only "
                              "when the primary hits after the seed are weak (0.8 cost one "
                              "dev file, 0.6 lost the gain).")
    other_file_decay: float = Field(default=0.93, description="Decay for neighbours in OTHER "
                                    "files (caller, callee, build file, includer, base class; "
                                    "a twin has twin_decay): a multi-file answer needs them "
                                    "next to the seed, not after more of its chunks (0.93-0.95 "
                                    "over 0.9: one file more on two of nine dev corpora, level "
                                    "on the rest; 1.0 cost one; eval/README.md).")
    includers_max_files: int = Field(default=4, ge=0, description="A file included by more "
                                     "files than this is shared plumbing (a types or config "
                                     "header): its includers say nothing about it "
                                     "(profile.includers).")
    macro_cue: Regex = Field(
        default=r"\bhow (do|can|would|should) (i|you|we|one) (switch|toggle|enable|disable|"
                r"turn)\b|\b(compile|build)[- ]time\b|\bat (compile|build)\b|"
                r"\bpreprocessor\b|\bmacros?\b",
        description="Question words (regex, lower case) that ask how to switch something at "
                    "build time (profile.macro_builds). 'Switch to Chebyshev iterations' or "
                    "'when X is enabled' ask about the code, not about a build switch.")
    macro_seed_files: int = Field(default=5, ge=1, description="First files found whose "
                                  "tested macros are looked up (profile.macro_builds).")
    macro_max_files: int = Field(default=3, ge=1, description="A macro mentioned by more "
                                 "build files than this is a general one (MPI, DEBUG) and "
                                 "links no particular build file (profile.macro_builds).")
    profiles: dict[str, ExpansionProfile] = Field(description=(
        "Profile name -> caps per relation; routing picks one per intent."),
        default_factory=lambda: {
        "minimal": ExpansionProfile(call=1, owner=1, file_symbols=2, module_files=2, include=0,
                                    total=3, callers=1, callees=1, twin=1, includers=2,
                                    build_links=2, macro_builds=1),
        "balanced": ExpansionProfile(call=2, owner=1, file_symbols=3, module_files=4, include=1,
                                     total=6, callers=1, callees=1, twin=1, includers=2,
                                     build_links=2, macro_builds=1),
        "broad": ExpansionProfile(call=4, owner=1, file_symbols=4, module_files=6, include=2,
                                  total=10, callers=1, callees=1, twin=1, includers=2,
                                  build_links=2, macro_builds=1),
    })


class InformationWeights(_S):
    """How much a chunk tells a reader (0..1, the sum clipped): what the context filter weighs
    before dropping a weak chunk that a stronger one carries."""

    explanation: float = Field(default=0.3, description="It has an LLM explanation.")
    comment: float = Field(default=0.2, description="It has its own comment (intent in words).")
    references: float = Field(default=0.15, description="It calls, derives from or lists other "
                              "symbols (full at references_full of them): it links the code.")
    references_full: int = Field(default=3, ge=1, description="References for the full share.")
    entity: float = Field(default=0.35, description="A file, folder or call-chain entity: a "
                          "summary of many chunks.")
    text: float = Field(default=0.3, description="A doc section or build file: written for "
                        "readers, or the build's facts.")
    code: float = Field(default=0.3, description="Substantive code (code_lines non-comment lines "
                        "or more, not a declaration).")
    code_lines: int = Field(default=4, ge=1, description="Lines of code that count as substance.")
    low_signal: float = Field(default=-0.3, description="A trivial declaration, forward "
                              "declaration or include list (rerank.low_signal).")


class ContextFilterSettings(_S):
    enabled: bool = Field(default=True, description="Drop carried weak chunks from the result.")
    min_info: float = Field(default=0.25, description="Chunks below this information score are "
                            "dropped when a stronger chunk from the same place carries them.")
    keep_files: bool = Field(default=True, description="A chunk carried from ANOTHER file (a "
                             "method whose class, or a declaration whose definition, is shown "
                             "elsewhere) stays when it is its file's only item and not a "
                             "stub (rerank.low_signal): dropping it took the file out of the "
                             "evidence (an implementation file whose class is shown from the "
                             "header; one corpus up, the rest level).")
    keep_declaring_files: bool = Field(default=True, description="With keep_files, a bare "
                                       "declaration whose definition is shown from another "
                                       "file stays too when it is its file's only item: the "
                                       "header that declares it is part of the answer (on the "
                                       "43 seen sets CoEVP, Comb, Kernels, PathFinder and VPFFT "
                                       "rose, six questions; none fell).")
    declaring_within: int = Field(default=5, ge=1, description="...when that definition is "
                                  "among the first this many items: a late definition's header "
                                  "would only push other files out (without the limit one set "
                                  "lost a file at @10; 3 and 8 as 5).")
    information: InformationWeights = Field(default_factory=lambda: InformationWeights(),
                                            description=InformationWeights.__doc__)


class CrossEncoderSettings(_S):
    model: str | None = Field(default=None, description="Local path of a sentence-transformers "
                              "CrossEncoder (e.g. a bge-reranker); null = off.")
    top_n: int = Field(default=30, description="Candidates the cross-encoder scores.")
    weight: float = Field(default=0.05, description="Scale of the cross-encoder's sigmoid score "
                          "added to the reranked score.")
    device: str = Field(default="cpu", description="cpu | cuda (sentence-transformers device).")


class ExactTokenSettings(_S):
    """Identifier-shaped words of the question (ALL_CAPS, snake_case, camelCase, ns::f, --flags,
    file names) matched verbatim in the indexed text, weighted by rarity among the files."""

    enabled: bool = Field(default=True, description="Match identifier-shaped words verbatim.")
    bonus: float = Field(default=0.05, description="Added to a record containing the literal, "
                         "times its rarity (1 = in one file); above one RRF list (~0.016), "
                         "below a named symbol or file (~0.6-1): a verbatim rare name is strong "
                         "evidence but not a lookup.")
    case_insensitive_factor: float = Field(default=0.5, description="Share of the bonus when "
                                           "the literal occurs only in another letter case.")
    acronym_factor: float = Field(default=0.3, description="Share of the bonus for an "
                                  "all-capitals word without underscore (GPU, MPI): prose "
                                  "uses acronyms for concepts, not only as names.")
    max_files: int = Field(default=12, description="Literals found in more files than this "
                           "are common words of the code, not names the user means.")
    max_file_share: float = Field(default=0.05, description="Literals in more than this share "
                                  "of the files (at least 2 files allowed) do not pinpoint "
                                  "anything: boosting all of them only pushes other files out.")
    max_records: int = Field(default=400, description="Records scanned per literal (the "
                             "vocabulary hit count); more means a common word.")
    numbers: bool = Field(default=False, description="Numbers the question quotes (0.95, 26, "
                          "1e-6; not 64-bit) count as literals, matched as values in the code "
                          "(26 = 26.0). Off: on the seen sets it moved one question (one "
                          "held-aside corpus), too little to carry a rule (eval/README.md).")


class FileChannelSettings(_S):
    """Whole-file BM25 (one document per file), fused as a third ranked list: a file's words
    together say what it is about better than one 128-token window of it."""

    enabled: bool = Field(default=True, description="Fuse the whole-file BM25 ranking.")
    top_files: int = Field(default=30, description="Files taken from the whole-file ranking.")
    weight: float = Field(default=1.0, description="Scale of the file list's reciprocal-rank "
                          "contribution (1 = as much as the dense or chunk-BM25 list).")
    chunks_per_file: int = Field(default=2, description="A ranked file lends its score to its "
                                 "file entity and this many of its own best chunks (two: the "
                                 "file then reaches the pick even when its best chunk by "
                                 "similarity is dropped as a duplicate or low-signal part).")
    found_only: bool = Field(default=False, description="Lend only to chunks the dense or "
                             "chunk-BM25 lists found already (the file list then confirms, "
                             "it does not add chunks of its own).")


class DenseFileChannelSettings(_S):
    """Files ranked by their best chunk's similarity (one entry per file), fused as one more
    list: the chunk-level dense list gives a file whose best chunk is 40th little, though it
    may be the 12th file; ranking files, not windows, asks which files the question is about."""

    enabled: bool = Field(default=False, description="Fuse the per-file dense ranking. Off: "
                          "on, it cost ten of twelve seen corpora at @5 (up to 0.17 on one), at "
                          "weight 0.5 or 1.5, 15 files or best chunk only as well: a whole "
                          "file's nearest window is a vocabulary match, and it outvotes the "
                          "precise lists (eval/README.md).")
    depth: int = Field(default=400, ge=1, description="Nearest chunks read to rank files "
                       "(the same exact search as the dense list, read further).")
    top_files: int = Field(default=30, ge=1, description="Files taken from it, best first.")
    weight: float = Field(default=1.0, ge=0, description="Scale of its reciprocal-rank "
                          "contribution (1 = as much as the dense list).")
    to_file_entity: bool = Field(default=True, description="A ranked file lends to its file "
                                 "entity too, not only to its best chunk.")


class ScopeChannelSettings(_S):
    """For an intent with a scope_channel (a build question), the records of that scope are
    ranked among themselves and fused as one more list: a Makefile says CFLAGS and mpicc,
    not "compiler" or "flags", so the global lists can rank it below every README line."""

    enabled: bool = Field(default=False, description="Fuse the in-scope ranking. Off: on the "
                          "seen sets it brought one question's build file (one corpus), and "
                          "on a held-aside corpus it put four build files in the first five "
                          "of a question that asked about build and code, losing the code "
                          "(eval/README.md).")
    top_files: int = Field(default=3, ge=1, description="Files taken from it, best first.")
    weight: float = Field(default=2.0, ge=0, description="Scale of its reciprocal-rank "
                          "contribution (1 = as much as the dense list; at 1 recall@5 rose on "
                          "one of eleven seen corpora, at 2 on two, level on the rest and v2; "
                          "3 as 2; five files instead of three cost one at @10).")


class BaseClassSettings(_S):
    """A question about "the base class" or what "every implementation" must provide is
    answered by a class that several others derive from: such classes join the candidates."""

    enabled: bool = Field(default=True, description="Add base classes for base-class questions.")
    cue: Regex = Field(default=r"\b(base class(es)?|abstract class(es)?|interfaces?|every "
                                r"(implementation|backend|port|model|version)s?)\b",
                       description="Question words that ask about a shared base or interface.")
    min_derived: int = Field(default=2, ge=1, description="Other files deriving from a class "
                             "that make it a base.")
    top: int = Field(default=2, ge=1, description="Base classes taken, closest to the "
                     "question first.")
    weight: float = Field(default=2.0, description="Scale of their reciprocal-rank "
                          "contribution (1 = as much as the dense list); at 2 recall@5 rose on "
                          "one dev and one held-aside corpus, level on the rest (at 1 only the "
                          "held-aside one).")


class FeedbackSettings(_S):
    """Pseudo-relevance feedback over BM25 with the repository's own words (see search.py)."""

    enabled: bool = Field(default=False, description="Off: on every corpus it added noise "
                          "(see eval/README.md).")
    docs: int = Field(default=6, description="Best first-round candidates read for words.")
    min_docs: int = Field(default=2, description="A word must occur in this many of them: one "
                          "chunk's words are its own topic, shared words are the question's.")
    terms: int = Field(default=8, description="Feedback words kept (rarest shared first).")
    chars: int = Field(default=1500, description="Characters of each chunk's code read.")
    weight: float = Field(default=0.5, description="Scale of the feedback list's reciprocal-"
                          "rank contribution: a guess from the first round, below the "
                          "question's own lists.")


class SiblingWordsSettings(_S):
    """Files of one folder among the first ranked: one passes the siblings above it when it
    clearly holds more of the question's words that tell the folder's files apart (BM25 with
    document frequencies counted inside the folder, `retrieval/siblings.py`). The folder's
    shared vocabulary ranks its files close together, often the wrong one first."""

    enabled: bool = Field(default=True, description="Let a sibling that clearly holds the "
                          "question's distinguishing words pass. On: on the 40 seen sets "
                          "Comb, Kernels, SNAP and npbench rose (five questions), none fell "
                          "(eval/README.md, twenty-ninth stop).")
    top_files: int = Field(default=40, ge=2, description="Distinct files read from the top of "
                           "the ranking (the ones that compete for the first places; 10, 20 and "
                           "30 moved fewer questions, none the other way).")
    margin: float = Field(default=3.0, gt=1, description="A file passes a sibling only when its "
                          "in-folder score is this many times the sibling's: a clear win, not "
                          "a reshuffle of near ties (at 2 two sets fell, at 2.5 one; a blend of "
                          "the two orders instead, Borda counts, fell on two of ten sets).")
    max_folder_share: float = Field(default=0.25, gt=0, le=1, description="Only folders that "
                                    "hold at most this share of the repository's files compete "
                                    "(in a flat code the folder's words are the whole code's, "
                                    "and the contest would only repeat whole-file BM25; at 0.5 "
                                    "three sets fell).")
    scopes: list[str] = Field(default_factory=lambda: ["src", "test", "example"],
                              description="Scopes whose files compete (code: a document or "
                              "build file beside the code answers a different question; with "
                              "every scope, at 40 files, three sets fell).")


class RetrievalSettings(_S):
    k: int = Field(default=8, description="Evidence items returned by ask.")
    dense_k: int = Field(default=60, description="Candidates from the vector index.")
    lexical_k: int = Field(default=60, description="Candidates from BM25.")
    rrf_k: int = Field(default=60, description="Reciprocal rank fusion constant.")
    exact_file_bonus: float = Field(default=1.0, description="Added to the fused score of chunks "
                                    "from a file named in the question (RRF scores are ~0.03).")
    sibling_file_factor: float = Field(default=0.6, description="Share of the file bonus for "
                                       "a sibling (X.cpp when X.h is named).")
    stem_file_factor: float = Field(default=0.1, description="Share of the file bonus for a "
                                    "file named by an identifier equal to its stem (runBench).")
    word_file_factor: float = Field(default=0.02, ge=0, description="Share of the file bonus "
                                    "for an extensionless file named by a plain lower-case "
                                    "word ('how do I build' and a script called build; "
                                    "'install' and INSTALL): in prose such a word is usually "
                                    "English. Written in capitals or capitalised (INSTALL, "
                                    "Makefile) it is a name and takes the whole bonus (level "
                                    "on every seen set at 0, 0.02, 0.1 and 1: it fixes what "
                                    "the trace says, and a build script outranking the "
                                    "build files).")
    exact_symbol_bonus: float = Field(default=0.6, description="Added for a symbol named in the "
                                      "question whose definition is this chunk.")
    file_scoped_k: int = Field(default=3, description="Best chunks kept inside each mentioned file.")
    file_scoped_factor: float = Field(default=0.8, description="Share of the file bonus for "
                                      "the best chunks inside a named file (the file entity "
                                      "itself gets all of it).")
    max_symbol_defs: int = Field(default=12, description="Definitions of one named symbol "
                                 "boosted (overloads, per-backend copies).")
    declaration_factor: float = Field(default=0.6, description="Share of the symbol bonus for a "
                                      "declaration: the definition says more.")
    function_part_factor: float = Field(default=0.5, description="Share of the symbol bonus for "
                                        "a part of a long function (the whole one is shown).")
    constructor_factor: float = Field(default=0.3, description="Share of the symbol bonus for "
                                      "a class's constructors/destructor unless the question "
                                      "mentions them: 'the class X' means the class.")
    module_factor: float = Field(default=0.8, description="Share of the file bonus for a folder "
                                 "named in the question.")
    file_scoped_lexical: float = Field(default=0.02, description="Weight of a chunk's BM25 score "
                                       "next to its cosine similarity when picking the best "
                                       "chunks inside one file (BM25 ~1-20, cosine ~0.2-0.7).")
    max_per_file: int = Field(default=1, description="Evidence items per file (diversity): a "
                              "file's last slot goes to its best own chunk, so one item per "
                              "file leaves room for the other files of a multi-file answer.")
    skip_trivial_inner: bool = Field(default=True, description="A file entity shown through "
                                     "its best own chunk never uses a trivial one (a bare "
                                     "declaration, a one-line destructor without comment): the "
                                     "context filter drops those as carried by their class, "
                                     "and the file would leave the answer.")
    filtered_max_per_file: int = Field(default=3, description="Items per file when the search "
                                       "is filtered by kind or path (a listing: several classes "
                                       "of one header are all answers).")
    max_per_name: int | None = Field(default=1, ge=1, description="Code files of one base name in "
                                     "different folders (parallel ports, per-backend copies) "
                                     "shown at most: a second one repeats the first's answer "
                                     "and crowds out the other files (2 -> 1: recall@5 up on the "
                                     "dev corpus with ports, unchanged elsewhere). null = no "
                                     "limit.")
    short_forms: dict[str, list[str]] = Field(default_factory=dict, description="Generic "
                                              "programming abbreviations, a phrase (regular "
                                              "expression) -> the short forms code writes for "
                                              "it ('time step' -> dt): added to the lexical "
                                              "query when the corpus uses them as tokens. "
                                              "Empty = off: eval/data/short_forms.json lifts "
                                              "the mean of 35 sets by 0.004-0.012 @5 but "
                                              "costs 2-10 sets at every weight and ratio.")
    short_form_weight: float = Field(default=1.0, ge=0, description="Weight of the short "
                                     "forms' BM25 scores over chunks beside the question's own "
                                     "words (1 = as if the question had written them).")
    short_form_file_weight: float = Field(default=1.0, ge=0, description="The same for the "
                                          "whole-file list.")
    short_form_ratio: float = Field(default=0.0, ge=0, description="A short form is searched "
                                    "only when this many times as many chunks hold it as hold "
                                    "the words written out (0 = always).")
    name_family_ports: bool = Field(default=False, description="With max_per_name: a code file "
                                    "joins its name's family only when it is a port or copy of "
                                    "a member shown (port_share of the smaller file's functions "
                                    "alike, by port_qualified_names): a driver and the kernel "
                                    "it calls, driver/step.cpp and kernel/step.cpp, are two "
                                    "answers, not one. Off: one seen set up (+0.056), the "
                                    "other 35 level, but a new set lost a question (a "
                                    "command-line tool's file of the library's name took a "
                                    "slot).")
    max_build_variants: int | None = Field(default=1, ge=1, description="Build files of "
                                           "one folder that differ only by a last dotted part "
                                           "(Make.Linux_MPI, Make.Mac_OMP; make.inc.gcc, "
                                           "make.inc.cray) shown at most: a platform's "
                                           "settings each, and a dozen of them filled the "
                                           "answer to a build question. null = no limit.")
    build_variant_head: int | None = Field(default=5, ge=0, description="The first picks "
                                           "that max_build_variants holds for; the other "
                                           "variants follow them, for a question that asks "
                                           "for several platforms. null = all picks.")
    mirror_share: float = Field(default=0.5, ge=0, description="Other files (build scripts, "
                                "decks) of one base name are one family too when their folders "
                                "mirror each other: the folders' file-name sets overlap by at "
                                "least this share (Jaccard), as port folders do; a CMakeLists.txt "
                                "per sub-folder stays one file each. > 1 = off.")
    max_data_files: int | None = Field(default=0, ge=0, description="Data files (input "
                                       "decks, reference outputs, parameter files: text in a "
                                       "format of the repository's own) shown at most unless "
                                       "the question asks about them (data_cue): a question "
                                       "about the code is answered by the code that reads "
                                       "them (0 instead of 1: one held-aside corpus up two "
                                       "questions, seven other sets level). null = no limit.")
    max_data_files_asked: int | None = Field(default=2, ge=0, description="Data files "
                                             "shown at most when the question asks about "
                                             "them (data_cue): a question about the decks "
                                             "still wants the code that reads them, and ten "
                                             "decks of one folder filled two answers (2 "
                                             "instead of no limit: two corpora up a question "
                                             "each, the other 44 sets level; 1 the same). "
                                             "null = no limit.")
    max_doc_files: int | None = Field(default=1, ge=0, description="Document files shown "
                                      "at most unless the question asks for documentation "
                                      "(routing.entity_cues): one leaves room for the code it "
                                      "describes (1 instead of 2: two held-aside corpora up a "
                                      "question each at @5, level elsewhere). null = no limit.")
    named_files_uncapped: bool = Field(default=True, description="A file the question names "
                                       "is not counted by max_data_files or max_doc_files: "
                                       "the name asks for that file, whatever its kind.")
    doc_after: int = Field(default=5, ge=0, description="Documents found among the first "
                           "this many results follow them, unless the question is about "
                           "building, running, the documentation or the project (doc_slot_cue, "
                           "routing.entity_cues, rerank.metadata_cue) or names the document: a README matches every "
                           "question's words, and 62 of 79 documents in the first five of 14 "
                           "corpora were not in the answer (recall@5 up on four corpora, level "
                           "on the rest and v2, @10 level). 0 = off.")
    doc_slot_cue: Regex = Field(default=r"\b(build|builds|built|building|make|makefiles?|"
                                r"cmake\w*|install\w*|compil\w*|configur\w*|usage|"
                                r"document\w*|readme)\b|\bhow (do|can|should) (i|you|we|one) "
                                r"(run|launch)\b",
                                description="Question words (regex, lower case) after which "
                                "documents keep their place (doc_after). Running is asked as "
                                "'how do I run'; 'when running on a GPU' asks about the code.")
    data_cue: Regex = Field(default=r"\b(input (decks?|files?)|decks?|sample (inputs?|outputs?)|"
                          r"reference outputs?|output files?|parameter files?|"
                          r"example (inputs?|files?))\b",
                          description="Question words (regex, lower case) that ask about the "
                          "data files themselves: the cap is lifted.")
    program_languages: list[str] = Field(
        default=["sh", "bash", "zsh", "csh", "tcsh", "ksh", "fish", "python", "py", "perl",
                 "pl", "ruby", "rb", "jl", "julia", "m", "r", "lua", "tcl", "awk", "node", "js",
                 "ts", "java", "scala", "rs", "f90", "f", "f77", "f95", "go", "bat", "cmd",
                 "ps1", "kt", "swift", "cs", "yml", "yaml"],
        description="Languages (as collect names them) of script files that are programs or "
                    "CI configuration, not data files.")
    one_of_identical: bool = Field(default=True, description="Files with identical content "
                                   "(an input deck or header copied into every variant folder) "
                                   "are one answer: the best-ranked copy is shown, not each.")
    plainest_variant: bool = Field(default=True, description="A file picked from a family of "
                                   "parallel ports (same name in sibling folders, same "
                                   "functions in each) is shown in the member with the least "
                                   "code of its own (backend calls, pragmas), unless "
                                   "the question names the picked one's folder: one answer, "
                                   "taught by its plainest version (recall@5 +0.067 on the dev "
                                   "corpus with ports; the others have no such families).")
    plainest_port: bool = Field(default=True, description="The plainest member is taken "
                                "from the plainest port folder (the folder plainest in most of "
                                "the families it is part of), so that one answer stays in one "
                                "port instead of mixing ports file by file. A build script "
                                "or deck of a port folder (same name, mirrored folders) is "
                                "shown in the named port's or the plainest port's copy too.")
    thread_cue: Regex = Field(
        default=r"\b(threads?|threaded|threading|multi-?thread\w*|openmp|omp|pthreads?|tbb|"
                r"race conditions?|data races?)\b",
        description="Question words that ask about CPU threads, the threading models' names "
                    "among them: a port family is then shown in the plainest member that runs "
                    "threads (thread_constructs), not in a serial reference that has none to "
                    "show; in a port the question names, a copy that runs threads comes first.")
    device_cue: Regex = Field(
        default=r"\b(gpus?|devices?|cuda|hip|sycl|opencl|openacc|offload\w*|accelerators?|"
                r"graphics)\b",
        description="Question words that ask about a device: a question about threads that "
                    "names one is about device threads, so thread_cue does not apply.")
    thread_constructs: Regex = Field(
        default=r"#\s*pragma\s+omp\b|\bomp_\w+\s*\(|\bstd::(thread|jthread|async)\b|"
                r"\bpthread_\w+|\btbb::|(?im:^[ \t]*[!*c]\$omp\b)",
        description="Code that runs CPU threads: OpenMP (C pragmas and Fortran directives), "
                    "std::thread, pthreads, TBB.")
    device_constructs: Regex = Field(
        default=r"#\s*pragma\s+(omp\s+(target|declare\s+target)|acc)\b|\b__global__\b|"
                r"\b__device__\b|<<<|\b__syncthreads\b|\bcuda[A-Z]\w+\s*\(|"
                r"\bhip[A-Z]\w+\s*\(|\bcl[A-Z][A-Za-z]+\s*\(|\bsycl::|\bKokkos::|\bRAJA::|"
                r"\bthrust::|(?im:^[ \t]*[!*c]\$(omp\s+(target|declare\s+target)|acc|cuf)\b)|"
                r"(?i:\battributes\s*\(\s*(global|device)\b)",
        description="Device or portability-layer code (offload pragmas and Fortran "
                    "directives, CUDA Fortran attributes, GPU kernels and "
                    "launches, CUDA/HIP/OpenCL calls, SYCL/Kokkos/RAJA/Thrust): with "
                    "plainest_port, the port folders with the fewest such lines per file come "
                    "first. A CPU reference that device ports were stripped from has more "
                    "words of its own than they do, but no device code (recall@5 up on two "
                    "held-aside codes, level on the rest). '' = not counted.")
    enclosing_reference: bool = Field(default=True, description="Of port folders, one that "
                                      "lies above the others' folders (the main code at the "
                                      "top, its variants in sub-folders: amr/, serial/) is the "
                                      "reference, before device code and plainness decide.")
    lone_reference: bool = Field(default=True, description="With enclosing_reference, a port "
                                 "folder that has no sibling port folders (src/ beside docs/ "
                                 "and ports/) leads over ports that sit among sibling ports "
                                 "(ports/a/, ports/b/): those were made from it. Level on 22 "
                                 "sets, one Fortran code with a ports/ folder +0.21 @5.")
    enclosed_variants: bool = Field(default=True, description="A same-named file in a "
                                    "sub-folder of the plainest member's folder is a variant "
                                    "of it (a copy that adds features to the main code above "
                                    "it) even when it adds many functions of its own: a symbol "
                                    "both have is shown in the plainest member, not left as "
                                    "another port's file.")
    named_port_tie_plainest: bool = Field(default=True, description="Of port folders the "
                                          "question names equally well ('the OpenMP code': "
                                          "openmp-threading/, openmp-offload/), the plainest "
                                          "is shown, not whichever scored first.")
    reference_port_cue: Regex = Field(
        default=r"\b(ref|reference|serial|seq|sequential|baseline)\b",
        description="Folder words (regex over a folder path's lower-case words) that name a "
                    "reference port: with plainest_port, of port folders the code cannot tell "
                    "apart (identical copies, equal plainness), that one is shown. '' = none.")
    other_port_share: float = Field(default=0.5, ge=0, description="With plainest_port: a "
                                    "file of another port folder (file stems overlapping the "
                                    "plainest port's by this share, Jaccard) that the question "
                                    "does not name follows the other picks; above 1 = off.")
    other_port_min_shared: int = Field(default=2, ge=1, description="File stems the two "
                                       "folders must share at least for other_port_share: one "
                                       "shared name (util.cpp) does not make folders ports.")
    named_versions: bool = Field(default=True, description="Of sibling folders that hold "
                                 "versions of one program in any languages (c/, cpp/, "
                                 "fortran/ with other_port_min_shared source stems in common: "
                                 "ports.variant_folders), a question that "
                                 "names some is answered from them; the other versions' "
                                 "files follow the rest.")
    named_variants: bool = Field(default=True, description="Of the variants of one file "
                                 "in one folder (stems that differ by a word, texts mostly "
                                 "alike: solver.cc, solver-mpi.cc, solver-cuda.cu), "
                                 "a question naming some variant words is answered from "
                                 "those; the other variants' picks follow the rest. The "
                                 "folder-level rule is named_versions.")
    variant_text_share: float = Field(default=0.75, ge=0, le=1, description="With "
                                      "named_variants: the share of their words (Jaccard) "
                                      "two files' texts must have in common to be variants of "
                                      "one file (0.72-0.97 measured for platform variants; "
                                      "0.59-0.71 for tests or kernels built on one pattern).")
    version_word_share: float = Field(default=0.25, ge=0, le=1, description="With "
                                      "named_versions: a folder word that this share of the "
                                      "other versions' files use names what they all do "
                                      "(\"MPI ranks\" when every version calls MPI), not one "
                                      "version.")
    language_words: dict[Regex, list[str]] = Field(
        default={r"(?<![\w#+])C\+\+": ["cpp", "cxx", "c++"],
                 r"(?<![\w#+/.-])C(?![\w#+/-])": ["c"],
                 r"(?i)\bfortran\b": ["f90", "f77", "ftn"]},
        description="Question text (case-sensitive) -> folder words it names: the languages "
                    "the tokenizer loses (\"C++\", a lone \"C\") and the usual folder names of "
                    "Fortran code; used wherever a question names a port or version folder.")
    other_port_docs_stay: bool = Field(default=True, description="With other_port_share: a "
                                       "document of another port folder keeps its place: it "
                                       "describes that port (what differs, how to run it) and "
                                       "is no copy of the plainest port's code.")
    port_share: float = Field(default=0.5, ge=0, le=1, description="Share of the shortest "
                              "file's functions the picked file must define too for the two to "
                              "be ports of one thing (not unrelated files sharing a name).")
    port_qualified_names: bool = Field(default=True, description="port_share counts "
                                       "qualified names (namespace::f, Class::m): ports "
                                       "implement one interface in one namespace; modules "
                                       "that share a pattern do so in their own.")
    modules_as_files: bool = Field(default=True, description="A folder entity picked as "
                                   "evidence is replaced by its best-ranked file, unless the "
                                   "question asks about folders/modules.")
    select_pool: int = Field(default=40, description="Ranked candidates the final pick looks "
                             "through (at least 4 per evidence item).")
    same_file_penalty: float = Field(default=0.01, description="Subtracted per chunk already "
                                     "chosen from the same file, so that other relevant files "
                                     "surface (fused scores are ~0.03-0.1; exact lookups ~1).")
    weak_symbol_confidence: float = Field(default=0.03, description="Weight of a symbol match "
                                          "on a plain lower-case word (often just English).")
    acronym_symbol_confidence: float = Field(default=0.03, description="Weight of a symbol "
                                             "match on an all-capitals word (FFT, MPI): prose "
                                             "uses acronyms for concepts, not only for names.")
    kind_noun_cue: str = Field(default="class|struct|structure|type|function|method|routine|"
                               "subroutine|macro|enum|namespace", description="Nouns "
                               "that say what kind of code the word beside them is (\"the "
                               "Grid class\", \"struct Params\"): such a word names a symbol "
                               "as surely as CamelCase does, whatever its spelling. Empty: "
                               "off.")
    kind_noun_qualifiers: str = Field(default="base derived parent child abstract new helper "
                                      "own same other whole each every this that which",
                                      description="Words that only qualify the kind noun "
                                      "(\"the base class\"), never taken for its name.")
    kind_noun_confidence: float = Field(default=1.0, ge=0.0, le=1.0, description="Weight of "
                                        "a symbol named beside a kind noun (1: as a "
                                        "CamelCase or called name).")
    weak_symbol_max_defs: int = Field(default=8, ge=1, description="A plain word counts as a "
                                      "(weak) symbol only when at most this many definitions "
                                      "carry its name: a name defined everywhere is a word.")
    weak_symbol_min_chars: int = Field(default=5, ge=1, description="...and only when at least "
                                       "this long (short words are English far more often).")
    filtered_dense_factor: int = Field(default=8, ge=1, description="A kind/path-filtered "
                                       "search reads dense_k times this many neighbours, since "
                                       "most of them fall outside the filter.")
    exact_tokens: ExactTokenSettings = Field(default_factory=lambda: ExactTokenSettings(),
                                             description="The exact-token channel.")
    base_classes: BaseClassSettings = Field(default_factory=lambda: BaseClassSettings(),
                                            description="Base classes for questions about a "
                                                        "shared interface.")
    scope_channel: ScopeChannelSettings = Field(default_factory=lambda: ScopeChannelSettings(),
                                                description="The in-scope list of an intent.")
    file_channel: FileChannelSettings = Field(default_factory=lambda: FileChannelSettings(),
                                              description="The whole-file BM25 list.")
    dense_files: DenseFileChannelSettings = Field(
        default_factory=lambda: DenseFileChannelSettings(),
        description="The per-file dense list.")
    feedback: FeedbackSettings = Field(default_factory=lambda: FeedbackSettings(),
                                       description="BM25 pseudo-relevance feedback (off).")
    sibling_words: SiblingWordsSettings = Field(
        default_factory=lambda: SiblingWordsSettings(),
        description="Sibling files reordered by the words that tell them apart.")
