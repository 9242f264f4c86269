// deposit.cpp -- charge deposition (particle -> mesh scatter).
#include <cassert>

#include "minipic/interpolation.hpp"

namespace minipic {

namespace {

#ifndef NDEBUG
// Checks, in debug builds only, that a particle's stencil lies inside the
// allocated field including one ghost layer. A violation means a particle
// escaped its slab without being migrated.
MINIPIC_INLINE bool stencilInBounds(const ScalarField& rho, const detail::CICStencil& st) {
    const index_t g = rho.ghosts();
    return st.i >= -g && st.i + 1 < rho.extent(0) + g && st.j >= -g && st.j + 1 < rho.extent(1) + g &&
           st.k >= -g && st.k + 1 < rho.extent(2) + g;
}
#endif

}  // namespace

/**
 * Cloud-in-cell charge deposition.
 *
 * Each macro-particle is a uniformly charged cube of the size of one mesh
 * cell (Birdsall & Fuss 1969; Hockney & Eastwood 1988). The fraction of
 * the cube overlapping the cell centred on a node is the product of the 1D
 * linear weights, so a particle contributes q * wx * wy * wz / V_cell to each
 * of the eight nodes surrounding it.
 *
 * The loop is written against the raw struct-of-arrays pointers rather than
 * scatterCIC() so the compiler sees unit-stride loads; both produce identical
 * results (tests/test_cic.cpp checks this).
 *
 * @param bunch particles to deposit; positions must lie in rho's local region
 * @param rho   charge density, accumulated into (not cleared)
 * @return      total charge added on this rank, for conservation checks
 */
real_t depositChargeCIC(const ParticleBunch& bunch, ScalarField& rho) {
    const UniformMesh& mesh = rho.mesh();
    const real_t qOverV = bunch.charge() / mesh.cellVolume();
    const std::size_t np = bunch.size();

    const real_t* px = bunch.x.data();
    const real_t* py = bunch.y.data();
    const real_t* pz = bunch.z.data();

    real_t deposited = 0;
    for (std::size_t n = 0; n < np; ++n) {
        const detail::CICStencil st = detail::makeStencil(mesh, Vec3{px[n], py[n], pz[n]});
        assert(stencilInBounds(rho, st));

        // Unrolled 2x2x2 stencil; the x-y weight products are hoisted.
        const real_t w00 = st.wx[0] * st.wy[0];
        const real_t w01 = st.wx[0] * st.wy[1];
        const real_t w10 = st.wx[1] * st.wy[0];
        const real_t w11 = st.wx[1] * st.wy[1];

        rho(st.i, st.j, st.k) += qOverV * w00 * st.wz[0];
        rho(st.i, st.j, st.k + 1) += qOverV * w00 * st.wz[1];
        rho(st.i, st.j + 1, st.k) += qOverV * w01 * st.wz[0];
        rho(st.i, st.j + 1, st.k + 1) += qOverV * w01 * st.wz[1];
        rho(st.i + 1, st.j, st.k) += qOverV * w10 * st.wz[0];
        rho(st.i + 1, st.j, st.k + 1) += qOverV * w10 * st.wz[1];
        rho(st.i + 1, st.j + 1, st.k) += qOverV * w11 * st.wz[0];
        rho(st.i + 1, st.j + 1, st.k + 1) += qOverV * w11 * st.wz[1];

        deposited += bunch.charge();
    }
    return deposited;
}

}  // namespace minipic
