"""C/C++/CUDA parser: real tree-sitter on inline sources."""
from __future__ import annotations

import textwrap

from codeteacher.contracts.models import Chunk, ParsedFile
from codeteacher.contracts.settings import ChunkSettings
from codeteacher.ingest.parse.cpp import parse_cpp


def src(s: str) -> str:
    return textwrap.dedent(s).lstrip("\n")


def line_of(text: str, marker: str, nth: int = 1) -> int:
    """1-based line of the nth line containing marker."""
    hits = [i for i, line in enumerate(text.split("\n"), 1) if marker in line]
    return hits[nth - 1]


def get(pf: ParsedFile, name: str, kind: str | None = None) -> Chunk:
    found = [c for c in pf.chunks if c.name == name and (kind is None or c.kind == kind)]
    assert len(found) == 1, (name, kind, [(c.kind, c.name) for c in pf.chunks])
    return found[0]


def names(pf: ParsedFile, kind: str | None = None) -> list[str]:
    return [c.name for c in pf.chunks if kind is None or c.kind == kind]


FIELD = src("""
    // Copyright (c) 2024 Example Lab. All rights reserved.
    // SPDX-License-Identifier: GPL-3.0

    /**
     * @file Field.h
     * Grid fields and their operations.
     */
    #pragma once
    #include "mesh/Mesh.h"
    #include <vector>

    namespace sim {

    /// A field on a grid.
    /// Holds values.
    template <typename T>
    class Field : public FieldBase<T>, private detail::Counted {
    public:
        Field() : data_(0) {}
        ~Field() { release(); }
        void fill(T v);
        void solve(Field<double>& rho);
        Field& operator+=(const Field& other) { add(other); return *this; }
        T& operator[](int i) { return data_[i]; }
        T operator()(int i, int j) const { return data_[i + j]; }
        explicit operator bool() const { return !data_.empty(); }
        Field(const Field&) = delete;
        friend bool operator==(const Field& a, const Field& b) { return a.same(b); }
    private:
        double dx_;
        std::vector<T> data_;
    };

    /* Fill every cell with v. */
    template <typename T>
    void Field<T>::fill(T v) {
        auto f = [&](int i) { data_[i] = v; };
        for (int i = 0; i < n(); ++i) {
            f(i);
        }
        detail::touch(*this);
        this->mesh().update<T>(v);
        Kernel<T>::launch(v);
    }

    enum class Centering : int { Cell, Vertex };

    union Cell {
        double d;
        long l;
    };

    /// Norm of a field.
    double norm(const Field<double>& f);

    }  // namespace sim
""")


def parse_field(**kw) -> ParsedFile:
    return parse_cpp("include/sim/Field.h", FIELD, scope="src", file_sha="abc", **kw)


def test_class_template_with_bases_members_and_comment():
    pf = parse_field()
    cls = get(pf, "Field", "class")
    assert cls.qualified_name == "sim::Field" and cls.namespace == "sim"
    assert cls.template == "<typename T>"
    assert cls.bases == ["FieldBase", "detail::Counted"]
    assert "void solve(Field<double>& rho)" in cls.members
    assert "double dx_" in cls.members
    assert "void fill(T v)" in cls.members
    assert cls.comment == "A field on a grid.\nHolds values."
    # the chunk spans the template line through the closing brace, text is exactly those lines
    assert cls.start_line == line_of(FIELD, "template <typename T>")
    assert cls.end_line == line_of(FIELD, "};")
    assert cls.text == "\n".join(FIELD.split("\n")[cls.start_line - 1: cls.end_line])
    assert cls.text.startswith("template <typename T>\nclass Field")
    assert cls.id == f"include/sim/Field.h#class:sim::Field@{cls.start_line}"
    assert all(c.language == "cpp" and c.scope == "src" and c.file_sha == "abc" for c in pf.chunks)


def test_out_of_line_member_of_class_template():
    pf = parse_field()
    fill = get(pf, "fill", "method")
    assert (fill.class_name, fill.namespace) == ("Field", "sim")
    assert fill.qualified_name == "sim::Field::fill"
    assert fill.template == "<typename T>"
    assert fill.signature == "void Field<T>::fill(T v)"
    assert fill.comment == "Fill every cell with v."
    assert fill.start_line == line_of(FIELD, "template <typename T>", 2)
    assert fill.end_line == line_of(FIELD, "Kernel<T>::launch(v);") + 1
    assert fill.calls == ["n", "f", "detail::touch", "mesh", "update", "Kernel::launch"]
    assert "operator bool" in names(pf)


def test_lambdas_are_not_functions():
    pf = parse_field()
    assert "f" not in names(pf)
    assert not [c for c in pf.chunks if c.kind == "function" and c.name.startswith("<")]


def test_constructors_destructors_operators():
    pf = parse_field()
    ctor = get(pf, "Field", "constructor")
    assert ctor.qualified_name == "sim::Field::Field" and ctor.class_name == "Field"
    assert ctor.start_line == ctor.end_line == line_of(FIELD, "Field() : data_(0) {}")
    assert get(pf, "~Field", "destructor").qualified_name == "sim::Field::~Field"
    plus = get(pf, "operator+=", "operator")
    assert plus.qualified_name == "sim::Field::operator+=" and plus.calls == ["add"]
    assert get(pf, "operator[]", "operator").signature == "T& operator[](int i)"
    assert get(pf, "operator()", "operator").class_name == "Field"
    conv = get(pf, "operator bool", "operator")
    assert conv.signature == "explicit operator bool() const"
    eq = get(pf, "operator==", "operator")
    assert eq.signature.startswith("friend bool operator==")
    deleted = [c for c in pf.chunks if c.kind == "declaration" and c.name == "Field"]
    assert deleted and deleted[0].is_declaration
    assert deleted[0].signature == "Field(const Field&) = delete"


def test_enum_class_and_union():
    pf = parse_field()
    enum = get(pf, "Centering", "enum")
    assert enum.members == ["Cell", "Vertex"] and enum.qualified_name == "sim::Centering"
    union = get(pf, "Cell", "union")
    assert union.members == ["double d", "long l"]
    assert union.start_line == line_of(FIELD, "union Cell {")
    assert union.end_line == union.start_line + 3


def test_header_declarations_and_settings():
    pf = parse_field()
    decl = get(pf, "solve", "declaration")
    assert decl.is_declaration and decl.class_name == "Field"
    assert decl.qualified_name == "sim::Field::solve"
    assert decl.signature == "void solve(Field<double>& rho)"
    norm = get(pf, "norm", "declaration")
    assert norm.qualified_name == "sim::norm" and norm.class_name == "" and norm.is_declaration
    assert norm.comment == "Norm of a field." and norm.start_line == norm.end_line
    off = parse_field(settings=ChunkSettings(header_declarations=False))
    assert not [c for c in off.chunks if c.kind == "declaration"]
    as_source = parse_cpp("src/Field.cpp", FIELD)  # prototypes are not chunks outside headers
    assert not [c for c in as_source.chunks if c.kind == "declaration"]
    tiny = parse_field(settings=ChunkSettings(min_chunk_chars=200))
    assert "solve" not in names(tiny) and "Field" in names(tiny, "class")


NESTED_INCLUDES = r"""#include "a.h"
// #include "in_comment.h"
/* #include "in_block_comment.h" */
namespace sim {
#include <b.h>
void register_all() {
  const char* s = "#include \"in_string.h\"";
  #ifdef WITH_LIST
     #include<modules_list.h>
  #endif
}
}
#include "a.h"
"""


def test_includes_inside_bodies_count_and_comments_and_strings_do_not():
    # An include inside a function body expands a list there (the X-macro idiom): the file
    # depends on it as much as on a top-level include.
    pf = parse_cpp("src/registry.cpp", NESTED_INCLUDES)
    assert pf.includes == ["a.h", "b.h", "modules_list.h"]


def test_includes_and_leading_comment_skips_licence():
    pf = parse_field()
    assert pf.includes == ["mesh/Mesh.h", "vector"]
    assert pf.leading_comment == "@file Field.h\nGrid fields and their operations."
    plain = parse_cpp("a.cpp", "// Solves the heat equation.\n#include <cmath>\nint main() {}\n")
    assert plain.leading_comment == "Solves the heat equation."
    banner_only = parse_cpp("b.cpp", "/* Copyright 2020 X. MIT License. */\nint f() { return 1; }")
    assert banner_only.leading_comment == ""
    banner_then_code_doc = parse_cpp("c.cpp", "// (c) Copyright X\n\n// Entry point.\nint main();")
    assert banner_then_code_doc.leading_comment == "Entry point."


def test_namespaces_nested_and_anonymous_and_qualified_split():
    code = src("""
        namespace a::b {
        void inner() { work(); }
        }
        namespace outer { namespace mid {
        struct S { void m(); };
        } }
        namespace {
        int hidden(int x) { return x; }
        }
        namespace ns { template <class T> struct Cls { void f(); }; }
        template <class T>
        void ns::Cls<T>::f() { g(); }
        extern "C" {
        int c_entry(int n) { return n; }
        }
    """)
    pf = parse_cpp("src/n.cpp", code)
    inner = get(pf, "inner", "function")
    assert inner.namespace == "a::b" and inner.qualified_name == "a::b::inner"
    assert get(pf, "S", "struct").qualified_name == "outer::mid::S"
    hidden = get(pf, "hidden", "function")
    assert hidden.qualified_name == "(anonymous)::hidden" and hidden.namespace == "(anonymous)"
    f = get(pf, "f", "method")
    assert (f.namespace, f.class_name, f.qualified_name) == ("ns", "Cls", "ns::Cls::f")
    assert f.template == "<class T>" and f.calls == ["g"]
    assert get(pf, "c_entry", "function").qualified_name == "c_entry"


def test_out_of_line_constructor_destructor_and_operators():
    code = src("""
        #include "A.h"
        A::A() : x_(0) { init(); }
        A::~A() { release(); }
        A& A::operator+=(const A& o) { x_ += o.x_; return *this; }
        A::operator double() const { return x_; }
        double A::value() const { return x_; }
    """)
    pf = parse_cpp("src/A.cpp", code)
    ctor = get(pf, "A", "constructor")
    assert ctor.qualified_name == "A::A" and ctor.class_name == "A" and ctor.calls == ["init"]
    assert ctor.start_line == 2
    dtor = get(pf, "~A", "destructor")
    assert dtor.qualified_name == "A::~A" and dtor.start_line == dtor.end_line == 3
    assert get(pf, "operator+=", "operator").qualified_name == "A::operator+="
    assert get(pf, "operator double", "operator").class_name == "A"
    assert get(pf, "value", "method").qualified_name == "A::value"


def test_function_macros_kokkos_export_cuda():
    code = src("""
        namespace k {
        KOKKOS_INLINE_FUNCTION double axpy(double a, double x) { return a * x; }

        KOKKOS_FUNCTION
        int twice(int v) { return 2 * v; }

        MYLIB_EXPORT int exported(int v) { return v; }

        template <typename T, unsigned Dim>
        KOKKOS_INLINE_FUNCTION Vec<T, Dim> operator+(const Vec<T, Dim>& a, const Vec<T, Dim>& b) {
            return a;
        }

        class MYLIB_EXPORT Solver : public Base {
        public:
            KOKKOS_FUNCTION Solver() : n_(0) {}
            KOKKOS_INLINE_FUNCTION ~Solver() { }
            KOKKOS_INLINE_FUNCTION double& operator()(int i) { return buf_[i]; }
        };
        }
        __global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }
        __host__ __device__ inline float sq(float v) { return v * v; }
        void run(float* x, int n) {
            scale<<<n / 128, 128>>>(x, 2.0f);
            Kokkos::parallel_for("fill", n, KOKKOS_LAMBDA(const int i) { x[i] = sq(x[i]); });
        }
    """)
    pf = parse_cpp("src/k.cu", code, language="cuda")
    axpy = get(pf, "axpy", "function")
    assert axpy.qualified_name == "k::axpy" and axpy.signature == "double axpy(double a, double x)"
    twice = get(pf, "twice", "function")
    assert twice.start_line == line_of(code, "KOKKOS_FUNCTION")  # the macro line is included
    assert twice.end_line == twice.start_line + 1
    assert get(pf, "exported", "function").qualified_name == "k::exported"
    plus = get(pf, "operator+", "operator")
    assert plus.class_name == "" and plus.qualified_name == "k::operator+"
    assert plus.template == "<typename T, unsigned Dim>"
    solver = get(pf, "Solver", "class")
    assert solver.bases == ["Base"] and solver.qualified_name == "k::Solver"
    assert solver.signature == "class Solver : public Base"  # the export macro is left out
    assert solver.text.startswith("class MYLIB_EXPORT Solver")  # but the text is exact
    assert get(pf, "Solver", "constructor").class_name == "Solver"
    assert get(pf, "~Solver", "destructor").qualified_name == "k::Solver::~Solver"
    assert get(pf, "operator()", "operator").class_name == "Solver"
    assert get(pf, "scale", "function").language == "cuda"
    assert get(pf, "sq", "function").signature.endswith("float sq(float v)")
    assert get(pf, "run", "function").calls == ["scale", "Kokkos::parallel_for", "sq"]
    assert not [n for n in names(pf) if "LAMBDA" in n]


def test_comment_styles_attached():
    code = src("""
        // Line comment
        // over two lines.
        int a() { return 1; }

        /** Doc block
         *  with stars.
         */
        int b() { return 2; }

        /* plain block */
        template <typename T>
        T c(T x) { return x; }

        // separated by a blank line: not attached

        int d() { return 4; }

        /// doc before a macro line
        KOKKOS_INLINE_FUNCTION
        int e() { return 5; }
        int g() { return 6; }  // trailing comment of g
        int h() { return 7; }
    """)
    pf = parse_cpp("c.cpp", code)
    assert get(pf, "a").comment == "Line comment\nover two lines."
    assert get(pf, "b").comment == "Doc block\nwith stars."
    c = get(pf, "c")
    assert c.comment == "plain block" and c.start_line == line_of(code, "template <typename T>")
    assert get(pf, "d").comment == ""
    assert get(pf, "e").comment == "doc before a macro line"
    assert get(pf, "h").comment == ""
    assert get(pf, "a").start_line == 3  # the comment is not part of the line range


def test_struct_with_methods_typedef_struct_and_c_file():
    code = src("""
        typedef struct {
            int n;
            double* v;
        } vec_t;

        static double dot(const vec_t* a, const vec_t* b) {
            double s = 0;
            for (int i = 0; i < a->n; i++) s += a->v[i] * b->v[i];
            return sqrt(s);
        }
    """)
    pf = parse_cpp("lib/vec.c", code, language="c")
    vec = get(pf, "vec_t", "struct")
    assert vec.start_line == 1 and vec.end_line == 4 and vec.members == ["int n", "double* v"]
    cpp = parse_cpp("p.cpp", "struct Particle {\n    double x;\n"
                             "    void push(double dt) { x += v() * dt; }\n};\n")
    particle = get(cpp, "Particle", "struct")
    assert particle.members == ["double x", "void push(double dt)"]
    assert get(cpp, "push", "method").qualified_name == "Particle::push"
    dot = get(pf, "dot", "function")
    assert dot.language == "c" and dot.calls == ["sqrt"]
    assert (dot.start_line, dot.end_line) == (6, 10)


def test_syntax_error_keeps_other_functions():
    code = src("""
        int good_one(int x) { return x + 1; }

        void broken( {
            this is not C++ ;;; }}
        }

        int good_two(int y) {
            return y * 2;
        }
    """)
    pf = parse_cpp("bad.cpp", code)
    assert pf.parse_errors > 0
    assert "good_one" in names(pf) and "good_two" in names(pf)
    two = get(pf, "good_two")
    last = len(code.split("\n")) - 1
    assert (two.start_line, two.end_line) == (line_of(code, "int good_two"), last)


def test_never_raises_on_garbage():
    for text in ["", "}}}}", "\x00\x01binary\xff", "template <", "#if 1\nint f() {\n#else\n}",
                 "class { public: ~(); operator; };", "a" * 10000, "\ud800 lone surrogate"]:
        pf = parse_cpp("x.hpp", text)
        assert isinstance(pf, ParsedFile)
    # ... but what it could not do is counted, never hidden
    assert parse_cpp("x.hpp", "\ud800 lone surrogate").failures == 1


def test_oversized_function_split_into_linked_parts():
    body = "\n".join(f"    step{i}(x);" for i in range(25))
    code = f"// Long routine.\nvoid big(int x) {{\n{body}\n}}\n"
    pf = parse_cpp("big.cpp", code, settings=ChunkSettings(max_chunk_lines=10))
    whole = get(pf, "big", "function")
    assert (whole.start_line, whole.end_line) == (2, 28)
    parts = [c for c in pf.chunks if c.kind == "function_part"]
    assert len(parts) == 3
    assert [p.name for p in parts] == ["big (part 1/3)", "big (part 2/3)", "big (part 3/3)"]
    assert all(p.parent_id == whole.id and p.parts == 3 for p in parts)
    assert [p.part for p in parts] == [1, 2, 3]
    assert parts[0].start_line == whole.start_line and parts[-1].end_line == whole.end_line
    for a, b in zip(parts, parts[1:]):
        assert b.start_line == a.end_line + 1
    assert all(p.end_line - p.start_line + 1 <= 10 for p in parts)
    assert parts[0].calls[0] == "step0" and parts[1].calls[0] == f"step{parts[1].start_line - 3}"
    assert len({c.id for c in pf.chunks}) == len(pf.chunks)


def test_chunk_ids_unique_for_overloads_on_one_line():
    pf = parse_cpp("o.cpp", "int f(int a) { return a; } int f(double b) { return 2; }\n")
    ids = [c.id for c in pf.chunks]
    assert len(ids) == 2 and len(set(ids)) == 2 and ids[0] == "o.cpp#function:f@1"


def test_gtest_macro_named_by_its_arguments():
    pf = parse_cpp("test/t.cpp", "TEST(FieldTest, Sum) {\n    EXPECT_EQ(1, 1);\n}\n", scope="test")
    assert names(pf) == ["TEST(FieldTest, Sum)"]


def _nested(depth: int) -> str:
    return ("namespace a {\n" * depth + "int lost() { return 1; }\n" + "}\n" * depth
            + "int kept() { return 2; }\n")


def test_a_construct_lost_to_a_parser_failure_is_counted_and_named():
    # Nesting deeper than Python's recursion limit: a real input our recursive walk fails on.
    pf = parse_cpp("deep.cpp", _nested(600))
    assert set(names(pf)) == {"kept"}
    assert pf.failures >= 1 and pf.failure.startswith("line ") and "RecursionError" in pf.failure
    assert pf.parse_errors == 0  # not a syntax error: the code is fine, our parser is not


def test_a_whole_file_failure_is_counted_not_hidden():
    pf = parse_cpp("deeper.cpp", _nested(1500))
    assert pf.failures >= 1 and "RecursionError" in pf.failure


def test_define_and_typedef_blocks_are_chunks_include_guard_is_not():
    text = src("""
        #ifndef GRID_H
        #define GRID_H

        // Field indices
        #define FIELD_DENSITY 0
        #define FIELD_ENERGY 1

        // Five-point stencil applied to a
        #define STENCIL(a) (4.0 * a[i] - a[i - 1] - a[i + 1])

        typedef double real_t;
        using index_t = long;

        struct Grid { int n; };
        typedef struct { int x; } Point;
        #endif
        """)
    pf = parse_cpp("grid.h", text)
    fields = get(pf, "FIELD_DENSITY", "macro")
    assert fields.members == ["FIELD_ENERGY"] and fields.comment == "Field indices"
    assert (fields.start_line, fields.end_line) == (line_of(text, "FIELD_DENSITY"),
                                                    line_of(text, "FIELD_ENERGY"))
    stencil = get(pf, "STENCIL", "macro")
    assert stencil.signature == "#define STENCIL(a)"
    assert stencil.comment == "Five-point stencil applied to a"
    assert "GRID_H" not in names(pf)  # the include guard
    aliases = get(pf, "real_t", "typedef")
    assert aliases.members == ["index_t"]
    assert get(pf, "Point", "struct") and get(pf, "Grid", "struct")  # not typedef blocks


def test_member_aliases_stay_with_their_class():
    pf = parse_cpp("v.h", src("""
        template <class T>
        class Vec {
          public:
            using value_type = T;
            typedef T* pointer;
            T get() const { return v; }
            T v;
        };
        """))
    assert names(pf, "typedef") == []
