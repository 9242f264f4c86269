// cg_solver.cpp -- conjugate gradient Poisson solver on the 7-point stencil.
#include <cmath>
#include <stdexcept>

#include "minipic/halo.hpp"
#include "minipic/poisson.hpp"

namespace minipic {

namespace {

// Subtracts the global mean of the interior values, projecting a periodic
// right-hand side (or solution) onto the range of the singular operator.
void removeMean(ScalarField& f, const Communicator& comm) {
    const UniformMesh& m = f.mesh();
    const real_t nGlobal = static_cast<real_t>(m.globalCells(0) * m.globalCells(1) * m.globalCells(2));
    const real_t mean = comm.allreduceSum(f.sumInterior()) / nGlobal;
    f.forEachInterior([&](index_t i, index_t j, index_t k) { f(i, j, k) -= mean; });
}

}  // namespace

CGSolver::CGSolver(const UniformMesh& mesh, HaloExchange& halo, const Communicator& comm, CGOptions options,
                   real_t epsilon0)
    : PoissonSolver(mesh, epsilon0),
      halo_(halo),
      comm_(comm),
      options_(options),
      b_(mesh),
      r_(mesh),
      p_(mesh),
      Ap_(mesh) {
    if (!(options_.tolerance > 0)) throw std::invalid_argument("CGSolver: tolerance must be positive");
    if (options_.maxIterations < 1) throw std::invalid_argument("CGSolver: maxIterations must be >= 1");
}

CGSolver::~CGSolver() = default;

/// Applies the negative 7-point Laplacian,
///     (A u)_ijk = sum_d (2 u_ijk - u_{ijk+e_d} - u_{ijk-e_d}) / h_d^2,
/// which is symmetric positive (semi-)definite and therefore suitable for CG.
/// The halo of @p in is refreshed first so that periodic wrap-around and
/// Dirichlet zeros are seen by the stencil at the slab faces.
void CGSolver::applyLaplacian(ScalarField& in, ScalarField& out) {
    halo_.exchange(in);
    const real_t ihx2 = real_t(1) / (mesh_.spacing(0) * mesh_.spacing(0));
    const real_t ihy2 = real_t(1) / (mesh_.spacing(1) * mesh_.spacing(1));
    const real_t ihz2 = real_t(1) / (mesh_.spacing(2) * mesh_.spacing(2));

    in.forEachInterior([&](index_t i, index_t j, index_t k) {
        const real_t c = 2 * in(i, j, k);
        out(i, j, k) = (c - in(i + 1, j, k) - in(i - 1, j, k)) * ihx2 +
                       (c - in(i, j + 1, k) - in(i, j - 1, k)) * ihy2 +
                       (c - in(i, j, k + 1) - in(i, j, k - 1)) * ihz2;
    });
}

// Conjugate gradients (Hestenes & Stiefel 1952, doi:10.6028/jres.049.044),
// unpreconditioned. Each iteration costs one stencil application (one halo
// exchange) and two global reductions. See Saad (2003) for the
// form used here.
void CGSolver::solve(const ScalarField& rho, ScalarField& phi) {
    const bool periodic = mesh_.boundary() == BoundaryKind::Periodic;
    auto globalDot = [&](const ScalarField& a, const ScalarField& b) {
        return comm_.allreduceSum(dotInterior(a, b));
    };

    // b = rho / eps0, made mean-free for periodic boundaries.
    b_ = rho;
    b_ *= real_t(1) / epsilon0_;
    b_.clearGhosts();
    if (periodic) removeMean(b_, comm_);

    const real_t bnorm = std::sqrt(globalDot(b_, b_));
    iterations_ = 0;
    residual_ = 0;
    if (bnorm == real_t(0)) {
        phi = real_t(0);
        return;
    }
    if (!options_.warmStart) phi = real_t(0);

    // r = b - A phi, p = r
    applyLaplacian(phi, Ap_);
    r_ = b_;
    r_ -= Ap_;
    p_ = r_;
    real_t rr = globalDot(r_, r_);

    while (iterations_ < options_.maxIterations && std::sqrt(rr) > options_.tolerance * bnorm) {
        applyLaplacian(p_, Ap_);
        const real_t pAp = globalDot(p_, Ap_);
        if (!(pAp > 0)) break;  // breakdown: p in the null space or round-off
        const real_t alpha = rr / pAp;
        phi.axpy(alpha, p_);
        r_.axpy(-alpha, Ap_);
        const real_t rrNew = globalDot(r_, r_);
        const real_t beta = rrNew / rr;
        // p = r + beta p
        p_ *= beta;
        p_ += r_;
        rr = rrNew;
        ++iterations_;
    }
    residual_ = std::sqrt(rr) / bnorm;

    // Fix the gauge the same way the FFT solver does (zero mean potential).
    if (periodic) removeMean(phi, comm_);
}

}  // namespace minipic
