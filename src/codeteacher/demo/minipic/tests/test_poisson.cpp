// test_poisson.cpp -- FFT, FFT Poisson solver and CG solver.
#undef NDEBUG
#include <cassert>
#include <cmath>
#include <cstdio>
#include <vector>

#include "minipic/halo.hpp"  // also pulls in mpi.h when MINIPIC_HAVE_MPI is set
#include "minipic/particles.hpp"
#include "minipic/poisson.hpp"

using namespace minipic;
using detail::complex_t;

namespace {

real_t maxAbsDiff(const ScalarField& a, const ScalarField& b) {
    real_t m = 0;
    a.forEachInterior([&](index_t i, index_t j, index_t k) { m = std::max(m, std::abs(a(i, j, k) - b(i, j, k))); });
    return m;
}

UniformMesh periodicMesh() { return UniformMesh({{16, 8, 8}}, Vec3{0, 0, 0}, Vec3{2 * kPi, kPi, kPi}); }

void testFFTRoundTrip() {
    Rng rng(3);
    const std::size_t nx = 8, ny = 4, nz = 16;
    std::vector<complex_t> data(nx * ny * nz), orig;
    for (auto& c : data) c = complex_t(rng.uniform() - 0.5, rng.uniform() - 0.5);
    orig = data;
    detail::fft3d(data, nx, ny, nz, -1);
    detail::fft3d(data, nx, ny, nz, +1);
    for (std::size_t n = 0; n < data.size(); ++n)
        assert(std::abs(data[n] / static_cast<real_t>(data.size()) - orig[n]) < 1e-13);
}

void testFFTOfPureMode() {
    // exp(2 pi i m x / n) transforms to n * delta_{m} under the inverse sign.
    const std::size_t n = 32, m = 5;
    std::vector<complex_t> a(n);
    for (std::size_t j = 0; j < n; ++j) a[j] = std::polar(real_t(1), 2 * kPi * m * j / real_t(n));
    detail::fft1d(a.data(), n, 1, -1);
    for (std::size_t j = 0; j < n; ++j) assert(std::abs(a[j] - complex_t(j == m ? n : 0, 0)) < 1e-11);
}

void testSpectralSolverOnSingleMode() {
    // rho = cos(x) sin(2y) has -laplace(phi) = rho for phi = rho / (1 + 4).
    const UniformMesh mesh = periodicMesh();
    ScalarField rho(mesh), phi(mesh), exact(mesh);
    rho.forEachInterior([&](index_t i, index_t j, index_t k) {
        const Vec3 x = mesh.nodePosition(i, j, k);
        rho(i, j, k) = std::cos(x.x) * std::sin(2 * x.y);
        exact(i, j, k) = rho(i, j, k) / 5;
    });
    FFTPoissonSolver solver(mesh, FFTOptions{true});
    solver.solve(rho, phi);
    assert(maxAbsDiff(phi, exact) < 1e-12);
}

void testDiscreteGreensInvertsStencil() {
    // With the discrete Green's function, applyLaplacian(phi) reproduces the
    // mean-free part of rho to round-off.
    const UniformMesh mesh = periodicMesh();
    Communicator comm;
    HaloExchange halo(mesh, comm);
    ScalarField rho(mesh), phi(mesh), lap(mesh);
    Rng rng(11);
    rho.forEachInterior([&](index_t i, index_t j, index_t k) { rho(i, j, k) = rng.uniform(); });
    const real_t mean = rho.sumInterior() / static_cast<real_t>(mesh.numCells());
    rho.forEachInterior([&](index_t i, index_t j, index_t k) { rho(i, j, k) -= mean; });

    FFTPoissonSolver fft(mesh, FFTOptions{false});
    fft.solve(rho, phi);
    CGSolver cg(mesh, halo, comm, CGOptions{1e-10, 10, false});
    cg.applyLaplacian(phi, lap);
    assert(maxAbsDiff(lap, rho) < 1e-10);
}

void testCGAgreesWithFFT() {
    const UniformMesh mesh = periodicMesh();
    Communicator comm;
    HaloExchange halo(mesh, comm);
    ScalarField rho(mesh), phiFFT(mesh), phiCG(mesh);
    rho.forEachInterior([&](index_t i, index_t j, index_t k) {
        const Vec3 x = mesh.nodePosition(i, j, k);
        rho(i, j, k) = std::exp(-((x.x - 3) * (x.x - 3) + (x.y - 1.5) * (x.y - 1.5) + (x.z - 1.5) * (x.z - 1.5)));
    });
    FFTPoissonSolver fft(mesh, FFTOptions{false}, real_t(2));
    CGSolver cg(mesh, halo, comm, CGOptions{1e-12, 2000, false}, real_t(2));
    fft.solve(rho, phiFFT);
    cg.solve(rho, phiCG);
    assert(cg.lastIterations() > 0 && cg.lastResidual() <= 1e-12);
    assert(maxAbsDiff(phiCG, phiFFT) < 1e-9);
}

void testCGDirichletResidual() {
    const UniformMesh mesh({{10, 7, 9}}, Vec3{0, 0, 0}, Vec3{1, 1, 1}, BoundaryKind::Dirichlet);
    Communicator comm;
    HaloExchange halo(mesh, comm);
    ScalarField rho(mesh), phi(mesh), lap(mesh);
    rho = real_t(1);
    CGSolver cg(mesh, halo, comm, CGOptions{1e-11, 2000, false});
    cg.solve(rho, phi);
    cg.applyLaplacian(phi, lap);
    assert(maxAbsDiff(lap, rho) < 1e-8);
    // Potential of a uniform positive charge between grounded walls is positive.
    assert(phi(5, 3, 4) > 0);
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
    testFFTRoundTrip();
    testFFTOfPureMode();
    testSpectralSolverOnSingleMode();
    testDiscreteGreensInvertsStencil();
    testCGAgreesWithFFT();
    testCGDirichletResidual();
    std::puts("test_poisson: all tests passed");
#ifdef MINIPIC_HAVE_MPI
    MPI_Finalize();
#endif
    return 0;
}
