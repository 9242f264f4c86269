// test_cic.cpp -- cloud-in-cell deposit and gather.
//
// Plain assert-based checks; NDEBUG is undefined so they also run in
// Release builds. Exit code 0 means all tests passed.
#undef NDEBUG
#include <cassert>
#include <cmath>
#include <cstdio>

#include "minipic/halo.hpp"  // also pulls in mpi.h when MINIPIC_HAVE_MPI is set
#include "minipic/interpolation.hpp"
#include "minipic/mesh.hpp"
#include "minipic/particles.hpp"
#include "minipic/pusher.hpp"

using namespace minipic;

namespace {

bool near(real_t a, real_t b, real_t tol) { return std::abs(a - b) <= tol * std::max<real_t>(1, std::abs(b)); }

UniformMesh makeMesh(BoundaryKind bc = BoundaryKind::Periodic) {
    return UniformMesh({{8, 6, 4}}, Vec3{-1, 0, 2}, Vec3{4, 3, 2}, bc);
}

void testWeightsPartitionUnity() {
    for (real_t s : {0.0, 0.25, 0.5, 0.999, 3.7, -0.3}) {
        index_t i;
        real_t w[2];
        detail::cicWeights(s, i, w);
        assert(near(w[0] + w[1], 1, 1e-14));
        assert(w[0] >= 0 && w[1] >= 0);
        assert(near(static_cast<real_t>(i) + w[1], s, 1e-14));  // first moment reproduces s
    }
}

void testDepositConservesCharge() {
    const UniformMesh mesh = makeMesh();
    Communicator comm;
    HaloExchange halo(mesh, comm);
    ScalarField rho(mesh);

    ParticleBunch bunch("test", real_t(-0.75), 1);
    Rng rng(42);
    const Vec3 lo = mesh.localLower(), hi = mesh.localUpper();
    for (int n = 0; n < 1000; ++n) {
        Particle p;
        for (int d = 0; d < 3; ++d) p.x[d] = lo[d] + (hi[d] - lo[d]) * rng.uniform();
        bunch.push_back(p);
    }
    const real_t deposited = depositChargeCIC(bunch, rho);
    halo.accumulate(rho);

    assert(near(deposited, -750, 1e-12));
    assert(near(rho.sumInterior() * mesh.cellVolume(), deposited, 1e-10));
}

void testDepositMatchesScatterTemplate() {
    const UniformMesh mesh = makeMesh();
    ScalarField a(mesh), b(mesh);
    ParticleBunch bunch("test", 2, 1);
    bunch.push_back(Particle{Vec3{0.3, 1.2, 2.9}, Vec3{}, 0});
    bunch.push_back(Particle{Vec3{2.6, 2.9, 3.1}, Vec3{}, 1});
    depositChargeCIC(bunch, a);
    for (std::size_t n = 0; n < bunch.size(); ++n)
        scatterCIC(b, bunch.position(n), bunch.charge() / mesh.cellVolume());
    for (std::size_t n = 0; n < a.size(); ++n) assert(near(a.data()[n], b.data()[n], 1e-14));
}

void testPeriodicWrapOfDeposit() {
    // A particle just below the upper x face shares its charge between the
    // last node and node 0 of the periodic image.
    const UniformMesh mesh = makeMesh();
    Communicator comm;
    HaloExchange halo(mesh, comm);
    ScalarField rho(mesh);
    ParticleBunch bunch("test", 1, 1);
    const Vec3 h = mesh.spacing();
    const Vec3 x = mesh.nodePosition(7, 2, 1) + Vec3{real_t(0.75) * h.x, 0, 0};
    bunch.push_back(Particle{x, Vec3{}, 0});
    depositChargeCIC(bunch, rho);
    halo.accumulate(rho);
    const real_t unit = 1 / mesh.cellVolume();
    assert(near(rho(7, 2, 1), real_t(0.25) * unit, 1e-12));
    assert(near(rho(0, 2, 1), real_t(0.75) * unit, 1e-12));
}

void testGatherIsExactForLinearFields() {
    // CIC interpolation reproduces linear functions exactly.
    const UniformMesh mesh = makeMesh(BoundaryKind::Dirichlet);
    VectorField E(mesh);
    auto linear = [](const Vec3& x) { return Vec3{2 * x.x - 1, real_t(0.5) * x.y + x.z, -3 * x.z + x.x}; };
    const index_t g = E.ghosts();
    for (index_t i = -g; i < mesh.cells(0) + g; ++i)
        for (index_t j = -g; j < mesh.cells(1) + g; ++j)
            for (index_t k = -g; k < mesh.cells(2) + g; ++k) E(i, j, k) = linear(mesh.nodePosition(i, j, k));

    ParticleBunch bunch("test", 1, 1);
    Rng rng(7);
    const Vec3 lo = mesh.localLower(), hi = mesh.localUpper();
    for (int n = 0; n < 200; ++n) {
        Particle p;
        for (int d = 0; d < 3; ++d) p.x[d] = lo[d] + (hi[d] - lo[d]) * rng.uniform();
        bunch.push_back(p);
    }
    gatherCIC(E, bunch);
    for (std::size_t n = 0; n < bunch.size(); ++n) {
        const Vec3 exact = linear(bunch.position(n));
        assert(near(bunch.Ex[n], exact.x, 1e-12));
        assert(near(bunch.Ey[n], exact.y, 1e-12));
        assert(near(bunch.Ez[n], exact.z, 1e-12));
        const Vec3 viaTemplate = interpolateCIC(E, bunch.position(n));
        assert(near(viaTemplate.x, exact.x, 1e-12));
    }
}

void testBorisConservesSpeedInMagneticField() {
    ParticleBunch bunch("test", -1, 1);
    bunch.push_back(Particle{Vec3{0, 0, 0}, Vec3{1, 0, 0.5}, 0});
    const real_t speed = std::sqrt(norm2(bunch.velocity(0)));
    for (int s = 0; s < 1000; ++s) borisPush(bunch, Vec3{0, 0, 2}, real_t(0.3));
    assert(near(std::sqrt(norm2(bunch.velocity(0))), speed, 1e-12));
    assert(near(bunch.vz[0], 0.5, 1e-14));  // parallel velocity untouched
}

}  // namespace

int main(int argc, char** argv) {
#ifdef MINIPIC_HAVE_MPI
    // The tests are serial, but Communicator queries MPI_COMM_WORLD.
    MPI_Init(&argc, &argv);
#else
    (void)argc;
    (void)argv;
#endif
    testWeightsPartitionUnity();
    testDepositConservesCharge();
    testDepositMatchesScatterTemplate();
    testPeriodicWrapOfDeposit();
    testGatherIsExactForLinearFields();
    testBorisConservesSpeedInMagneticField();
    std::puts("test_cic: all tests passed");
#ifdef MINIPIC_HAVE_MPI
    MPI_Finalize();
#endif
    return 0;
}
