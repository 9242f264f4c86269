"""Fortran parsing with the real tree-sitter-fortran grammar: fixed and free form, program
units with their comments and calls, oversized units cut into parts, and call edges from C/C++
to Fortran through the routine's linker name."""
from __future__ import annotations

from codeteacher.contracts.settings import ChunkSettings
from codeteacher.ingest.parse.fortran import free_form, is_fixed_form, parse_fortran

from test_graph_entities import _edges, _graph_of, _sym

FIXED = """\
c  Copyright (c) 2013, Some Laboratory. All rights reserved.
c  This program is free software; you can redistribute it under the GPL.
c-----------------------------------------------------------------------
c Adds fourth order damping in the sponge layers
c-----------------------------------------------------------------------
      subroutine addsgd4( dt, h, up, u,
     *                    um, rho )
      implicit none
      real*8 dt, h, up(*), u(*), um(*), rho(*)
      integer i
      do i=1,10
         up(i) = up(i) - dt*rho(i)*(u(i)-um(i))
      enddo
      call smooth( up, h )
      end

      subroutine smooth( a, h )
      real*8 a(*), h
      a(1) = h*sqrt(a(1))
      end
"""

FREE = """\
module stream_kernels
  use iso_fortran_env
  implicit none
  real(kind=REAL64), allocatable :: A(:), B(:)
contains
  ! Copies A into B, element by element.
  subroutine copy_kernel()
    integer :: i
    do i = 1, size(A)
      B(i) = A(i)
    end do
  end subroutine copy_kernel

  function triad_value(x) result(y)
    real(kind=REAL64) :: x, y
    y = scale_of(x) * 2
  end function triad_value
end module stream_kernels

program driver
  use stream_kernels
  call copy_kernel()
  call report()
contains
  subroutine report()
    call print_summary()
  end subroutine report
end program driver
"""


def _by_name(pf):
    return {c.qualified_name: c for c in pf.chunks if c.kind != "function_part"}


def test_fixed_form_is_read_line_for_line_and_units_keep_their_own_comment():
    assert is_fixed_form("src/addsgd.f", FIXED)
    assert not is_fixed_form("src/kernels.f90", FIXED)
    # A .f file whose statements start in column 1 is free form despite its extension.
    assert not is_fixed_form("src/x.f", "subroutine s()\nend subroutine s\n")
    rewritten = free_form(FIXED)
    assert len(rewritten.split("\n")) == len(FIXED.split("\n"))
    assert rewritten.split("\n")[5].endswith("&") and rewritten.split("\n")[0].startswith("!")

    pf = parse_fortran("src/addsgd.f", FIXED, scope="src")
    assert pf.failures == 0 and pf.parse_errors == 0
    units = _by_name(pf)
    assert set(units) == {"addsgd4", "smooth"}
    add = units["addsgd4"]
    assert add.kind == "function" and add.language == "fortran" and add.scope == "src"
    # The licence banner is not the unit's description; the text after its last rule line is.
    assert add.comment == "Adds fourth order damping in the sponge layers"
    assert add.start_line == 4 and add.end_line == 15
    assert add.signature == "subroutine addsgd4( dt, h, up, u, um, rho )"
    # `call smooth` is a call; `up(i)`, `rho(i)` index declared arrays and are not.
    assert add.calls == ["smooth"]
    assert units["smooth"].calls == ["sqrt"]


def test_free_form_modules_name_their_procedures_and_hold_their_declarations():
    pf = parse_fortran("src/kernels.F90", FREE)
    assert pf.failures == 0 and pf.parse_errors == 0
    units = _by_name(pf)
    assert set(units) == {"stream_kernels", "stream_kernels::copy_kernel",
                          "stream_kernels::triad_value", "driver", "report"}
    head = units["stream_kernels"]
    assert head.kind == "namespace_block" and "allocatable :: A(:), B(:)" in head.text
    assert "subroutine copy_kernel" not in head.text
    copy = units["stream_kernels::copy_kernel"]
    assert copy.namespace == "stream_kernels"
    assert copy.comment == "Copies A into B, element by element."
    # A and B are the module's arrays (host association), so only `size` is called.
    assert copy.calls == ["size"]
    assert units["stream_kernels::triad_value"].calls == ["scale_of"]
    # A program's calls are its own statements', not those of the procedures it contains.
    assert units["driver"].calls == ["copy_kernel", "report"]
    assert units["report"].calls == ["print_summary"]


TYPES = """\
module angle_sets
  implicit none
  private
  ! One angle set: the directions swept together and their fluxes.
  type, public :: AngleSet
    integer :: NumAngles
    real(8), pointer, contiguous :: psi(:,:,:) => null()
  end type AngleSet
#ifdef USE_GPU
  type :: DeviceBuffers
    real(8), allocatable :: work(:)
  end type DeviceBuffers
#endif
contains
  subroutine AngleSet_ctor(self, n)
    type(AngleSet), intent(inout) :: self
    integer :: n
    self%NumAngles = n
  end subroutine AngleSet_ctor
end module angle_sets
"""


def test_a_modules_derived_types_are_structs_of_their_own():
    pf = parse_fortran("src/mods/AngleSet_mod.F90", TYPES)
    assert pf.failures == 0
    units = _by_name(pf)
    assert {"angle_sets::AngleSet", "angle_sets::DeviceBuffers"} <= set(units)
    t = units["angle_sets::AngleSet"]
    assert t.kind == "struct" and t.name == "AngleSet" and t.namespace == "angle_sets"
    assert (t.start_line, t.end_line) == (4, 8)  # its comment, then type ... end type
    assert t.comment == "One angle set: the directions swept together and their fluxes."
    assert t.signature == "type, public :: AngleSet" and "psi(:,:,:)" in t.text
    assert t.members == ["NumAngles", "psi"]  # (psi through its pointer initialiser)
    assert units["angle_sets::DeviceBuffers"].kind == "struct"  # inside an #ifdef block
    assert units["angle_sets::AngleSet_ctor"].kind == "function"


def test_an_oversized_unit_is_cut_into_parts_at_statement_boundaries():
    body = "".join(f"      x({i}) = {i}\n" for i in range(1, 61))
    text = f"      subroutine fill( x )\n      real*8 x(*)\n{body}      call done()\n      end\n"
    pf = parse_fortran("fill.f", text, settings=ChunkSettings(max_chunk_lines=20))
    whole = [c for c in pf.chunks if c.kind == "function"]
    parts = [c for c in pf.chunks if c.kind == "function_part"]
    assert len(whole) == 1 and len(parts) >= 3
    assert all(p.parent_id == whole[0].id and p.end_line - p.start_line + 1 <= 20 for p in parts)
    assert parts[0].start_line == whole[0].start_line and parts[-1].end_line == whole[0].end_line
    assert [p.start_line for p in parts[1:]] == [p.end_line + 1 for p in parts[:-1]]
    assert parts[-1].calls == ["done"] and parts[0].calls == []


def test_cpp_reaches_fortran_routines_by_their_linker_names(tmp_path):
    repo = {
        "src/addsgd.f": FIXED,
        "src/kernels.F90": FREE,
        "src/driver.cpp": """\
extern "C" void addsgd4_(double*, double*, double*, double*, double*, double*);
#define F77_FUNC(name, NAME) name ## _
extern "C" void F77_FUNC(smooth, SMOOTH)(double*, double*);
void step(double* up, double* u, double* um, double* rho, double dt, double h) {
    addsgd4_(&dt, &h, up, u, um, rho);
    F77_FUNC(smooth, SMOOTH)(up, &h);
}
""",
    }
    work, structure = _graph_of(tmp_path, repo)
    from codeteacher.contracts.jsonio import read_jsonl
    from codeteacher.contracts.models import Chunk
    from codeteacher.index import layout as L

    chunks = read_jsonl(work / L.CHUNKS, Chunk)
    files = {c.path: c.language for c in chunks if c.kind == "function"}
    assert files["src/addsgd.f"] == "fortran" and files["src/kernels.F90"] == "fortran"
    calls = _edges(structure, "call")
    step = _sym(chunks, "step")
    assert (step, _sym(chunks, "addsgd4")) in calls
    assert (step, _sym(chunks, "smooth")) in calls
    # Fortran to Fortran, across files and across case.
    assert (_sym(chunks, "addsgd4"), _sym(chunks, "smooth")) in calls
    assert (_sym(chunks, "driver"), _sym(chunks, "stream_kernels::copy_kernel")) in calls
