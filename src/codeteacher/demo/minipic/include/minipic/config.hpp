// minipic: a compact electrostatic particle-in-cell mini-app.
//
// config.hpp -- build configuration, portability macros and the small value
// types (scalar aliases, Vec3) shared by every other header.
//
// The build system may define:
//   MINIPIC_HAVE_MPI    compile the distributed-memory code paths (mpi.h)
//   MINIPIC_HAVE_FFTW   use FFTW3 instead of the built-in radix-2 FFT
//   MINIPIC_SINGLE_PRECISION  use float instead of double for field data
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#define MINIPIC_VERSION_MAJOR 0
#define MINIPIC_VERSION_MINOR 3
#define MINIPIC_VERSION_PATCH 1
#define MINIPIC_VERSION_STRING "0.3.1"

/// Marks small functions that are called from inner particle and stencil
/// loops. It plays the role of KOKKOS_INLINE_FUNCTION in Kokkos-based codes:
/// a single place to add device annotations (e.g. __host__ __device__) if the
/// kernels are ever ported to an accelerator back end.
#define MINIPIC_INLINE inline

/// Stronger hint for the handful of helpers on the very hottest path
/// (CIC weights, Boris rotation). Falls back to plain inline elsewhere.
#if defined(__GNUC__) || defined(__clang__)
#define MINIPIC_FORCEINLINE inline __attribute__((always_inline))
#else
#define MINIPIC_FORCEINLINE inline
#endif

namespace minipic {

#ifdef MINIPIC_SINGLE_PRECISION
using real_t = float;
#else
using real_t = double;
#endif

/// Signed index type for mesh loops; ghost cells have negative indices.
using index_t = std::ptrdiff_t;

/// Number of spatial dimensions. The code is written for 3D throughout.
constexpr int kDim = 3;

/// Default ghost-layer width. One layer suffices for cloud-in-cell
/// interpolation and the 7-point Laplacian.
constexpr index_t kDefaultGhosts = 1;

constexpr real_t kPi = static_cast<real_t>(3.14159265358979323846);

/// A plain three-component vector used for positions, velocities and the
/// electric field. Kept as an aggregate so it can live in std::vector and be
/// memcpy'd into MPI buffers.
struct Vec3 {
    real_t x = 0;
    real_t y = 0;
    real_t z = 0;

    MINIPIC_INLINE real_t& operator[](int d) { return d == 0 ? x : (d == 1 ? y : z); }
    MINIPIC_INLINE real_t operator[](int d) const { return d == 0 ? x : (d == 1 ? y : z); }

    MINIPIC_INLINE Vec3& operator+=(const Vec3& o) {
        x += o.x;
        y += o.y;
        z += o.z;
        return *this;
    }
    MINIPIC_INLINE Vec3& operator-=(const Vec3& o) {
        x -= o.x;
        y -= o.y;
        z -= o.z;
        return *this;
    }
    MINIPIC_INLINE Vec3& operator*=(real_t s) {
        x *= s;
        y *= s;
        z *= s;
        return *this;
    }
};

MINIPIC_INLINE Vec3 operator+(Vec3 a, const Vec3& b) { return a += b; }
MINIPIC_INLINE Vec3 operator-(Vec3 a, const Vec3& b) { return a -= b; }
MINIPIC_INLINE Vec3 operator*(Vec3 a, real_t s) { return a *= s; }
MINIPIC_INLINE Vec3 operator*(real_t s, Vec3 a) { return a *= s; }

MINIPIC_INLINE real_t dot(const Vec3& a, const Vec3& b) { return a.x * b.x + a.y * b.y + a.z * b.z; }

MINIPIC_INLINE Vec3 cross(const Vec3& a, const Vec3& b) {
    return Vec3{a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}

MINIPIC_INLINE real_t norm2(const Vec3& a) { return dot(a, a); }

}  // namespace minipic
