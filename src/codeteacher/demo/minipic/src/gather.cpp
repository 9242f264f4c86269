// gather.cpp -- field interpolation to particle positions (mesh -> particle).
#include "minipic/interpolation.hpp"

namespace minipic {

// Gather is the adjoint of the CIC deposit in depositChargeCIC(): the field at
// a particle is the weighted average of the eight surrounding nodes, with the
// same trilinear weights used to scatter that particle's charge. Using
// matching weights is what makes the scheme free of self-forces
// (Hockney & Eastwood 1988; Birdsall & Langdon 1991).
//
// Unlike the deposit, gather has no write conflicts, so the particle loop is
// trivially parallel and is threaded when built with MINIPIC_ENABLE_OPENMP.
void gatherCIC(const VectorField& E, ParticleBunch& bunch) {
    const std::size_t np = bunch.size();
    const UniformMesh& mesh = E.mesh();

#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (std::size_t n = 0; n < np; ++n) {
        const Vec3 x{bunch.x[n], bunch.y[n], bunch.z[n]};
        const detail::CICStencil st = detail::makeStencil(mesh, x);

        Vec3 e{};
        for (int a = 0; a < 2; ++a)
            for (int b = 0; b < 2; ++b) {
                const real_t wab = st.wx[a] * st.wy[b];
                e += E(st.i + a, st.j + b, st.k) * (wab * st.wz[0]);
                e += E(st.i + a, st.j + b, st.k + 1) * (wab * st.wz[1]);
            }

        bunch.Ex[n] = e.x;
        bunch.Ey[n] = e.y;
        bunch.Ez[n] = e.z;
    }
}

}  // namespace minipic
