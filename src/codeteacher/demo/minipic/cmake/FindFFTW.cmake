# FindFFTW.cmake -- locate the double-precision FFTW3 library.
#
# Result variables:
#   FFTW_FOUND          true if headers and library were found
#   FFTW_INCLUDE_DIRS   directory containing fftw3.h
#   FFTW_LIBRARIES      libraries to link
#   FFTW_VERSION        version string, when it can be read from pkg-config
#
# Imported target:
#   FFTW::FFTW
#
# Hints: set FFTW_ROOT (CMake variable or environment variable) to the
# installation prefix, e.g. -DFFTW_ROOT=/opt/fftw-3.3.10.

find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
    pkg_check_modules(PC_FFTW QUIET fftw3)
endif()

find_path(FFTW_INCLUDE_DIR
    NAMES fftw3.h
    HINTS ${FFTW_ROOT} ENV FFTW_ROOT ${PC_FFTW_INCLUDE_DIRS}
    PATH_SUFFIXES include)

find_library(FFTW_LIBRARY
    NAMES fftw3 libfftw3-3
    HINTS ${FFTW_ROOT} ENV FFTW_ROOT ${PC_FFTW_LIBRARY_DIRS}
    PATH_SUFFIXES lib lib64)

set(FFTW_VERSION ${PC_FFTW_VERSION})

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(FFTW
    REQUIRED_VARS FFTW_LIBRARY FFTW_INCLUDE_DIR
    VERSION_VAR FFTW_VERSION)

if(FFTW_FOUND)
    set(FFTW_INCLUDE_DIRS ${FFTW_INCLUDE_DIR})
    set(FFTW_LIBRARIES ${FFTW_LIBRARY})
    if(NOT TARGET FFTW::FFTW)
        add_library(FFTW::FFTW UNKNOWN IMPORTED)
        set_target_properties(FFTW::FFTW PROPERTIES
            IMPORTED_LOCATION "${FFTW_LIBRARY}"
            INTERFACE_INCLUDE_DIRECTORIES "${FFTW_INCLUDE_DIR}")
    endif()
endif()

mark_as_advanced(FFTW_INCLUDE_DIR FFTW_LIBRARY)
