// interpolation.hpp -- particle <-> mesh transfer with cloud-in-cell weights.
//
// Scatter (deposit) and gather use the *same* weights. This symmetry is what
// removes the self-force on a particle and gives momentum conservation in a
// periodic system (Hockney & Eastwood 1988).
#pragma once

#include <cmath>

#include "minipic/config.hpp"
#include "minipic/field.hpp"
#include "minipic/particles.hpp"

namespace minipic {

namespace detail {

/// Cloud-in-cell weights, see Birdsall & Fuss (1969),
/// doi:10.1016/0021-9991(69)90058-8.
///
/// Given a logical coordinate s (position in units of the mesh spacing,
/// measured from local node 0), returns the lower node index in @p i and the
/// linear weights of nodes i and i+1 in @p w. The weights sum to one and vary
/// continuously with s, which is what distinguishes CIC from nearest-grid-point
/// assignment.
MINIPIC_FORCEINLINE void cicWeights(real_t s, index_t& i, real_t w[2]) {
    const real_t fl = std::floor(s);
    i = static_cast<index_t>(fl);
    const real_t f = s - fl;
    w[0] = real_t(1) - f;
    w[1] = f;
}

/// Weights and lower corner for all three axes of one particle.
struct CICStencil {
    index_t i, j, k;
    real_t wx[2], wy[2], wz[2];
};

MINIPIC_FORCEINLINE CICStencil makeStencil(const UniformMesh& mesh, const Vec3& x) {
    const Vec3 s = mesh.toLogical(x);
    CICStencil st;
    cicWeights(s.x, st.i, st.wx);
    cicWeights(s.y, st.j, st.wy);
    cicWeights(s.z, st.k, st.wz);
    return st;
}

}  // namespace detail

/// Adds @p value, shared among the eight nodes surrounding @p x with trilinear
/// cloud-in-cell weights, to @p field. Contributions may land in the upper
/// ghost layer; HaloExchange::accumulate() folds them back onto their owners.
template <typename T>
MINIPIC_INLINE void scatterCIC(Field<T>& field, const Vec3& x, const T& value) {
    const detail::CICStencil st = detail::makeStencil(field.mesh(), x);
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b)
            for (int c = 0; c < 2; ++c) {
                const real_t w = st.wx[a] * st.wy[b] * st.wz[c];
                field(st.i + a, st.j + b, st.k + c) += value * w;
            }
}

/// Trilinear cloud-in-cell interpolation of @p field at position @p x.
/// Requires the ghost layer of @p field to be up to date.
template <typename T>
MINIPIC_INLINE T interpolateCIC(const Field<T>& field, const Vec3& x) {
    const detail::CICStencil st = detail::makeStencil(field.mesh(), x);
    T result{};
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b)
            for (int c = 0; c < 2; ++c) {
                const real_t w = st.wx[a] * st.wy[b] * st.wz[c];
                result += field(st.i + a, st.j + b, st.k + c) * w;
            }
    return result;
}

/// Deposits the charge density of @p bunch onto @p rho (adds to it; the
/// caller zeroes rho first). Returns the total charge deposited locally.
real_t depositChargeCIC(const ParticleBunch& bunch, ScalarField& rho);

/// Gathers the electric field @p E to every particle of @p bunch, storing the
/// result in bunch.Ex/Ey/Ez. E's ghosts must have been exchanged.
void gatherCIC(const VectorField& E, ParticleBunch& bunch);

}  // namespace minipic
