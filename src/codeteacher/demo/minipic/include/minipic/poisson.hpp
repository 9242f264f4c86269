// poisson.hpp -- electrostatic field solvers.
//
// Both solvers compute the potential phi from
//
//     -laplace(phi) = rho / epsilon0
//
// on the node-centred mesh; the electric field E = -grad(phi) is formed by
// the caller (Simulation::step) with centred differences.
#pragma once

#include <complex>
#include <cstddef>
#include <memory>
#include <vector>

#include "minipic/config.hpp"
#include "minipic/field.hpp"
#include "minipic/mesh.hpp"

namespace minipic {

class HaloExchange;
class Communicator;

/// Options for FFTPoissonSolver.
struct FFTOptions {
    /// false: discrete Green's function of the 7-point Laplacian (consistent
    /// with CGSolver, exact for the discrete problem); true: continuous
    /// 1/|k|^2 kernel (spectrally accurate for smooth rho).
    bool spectralGreens;
};

/// Options for CGSolver.
struct CGOptions {
    real_t tolerance;   ///< relative residual ||r|| / ||b|| at which to stop
    int maxIterations;  ///< hard cap on CG iterations
    bool warmStart;     ///< start from the phi passed in instead of zero
};

enum class SolverKind { FFT, CG };

/// Tagged union selecting a field solver and carrying its options.
struct FieldSolverOptions {
    SolverKind kind = SolverKind::FFT;
    union {
        FFTOptions fft;
        CGOptions cg;
    };

    FieldSolverOptions() : fft{false} {}

    static FieldSolverOptions makeFFT(bool spectralGreens = false) {
        FieldSolverOptions o;
        o.kind = SolverKind::FFT;
        o.fft = FFTOptions{spectralGreens};
        return o;
    }
    static FieldSolverOptions makeCG(real_t tolerance = 1e-8, int maxIterations = 500, bool warmStart = true) {
        FieldSolverOptions o;
        o.kind = SolverKind::CG;
        o.cg = CGOptions{tolerance, maxIterations, warmStart};
        return o;
    }
};

/**
 * Abstract interface of a Poisson solver.
 *
 * solve() reads only the interior nodes of rho (after
 * HaloExchange::accumulate) and writes the interior nodes of phi; ghost
 * values of phi are left for the caller to exchange.
 */
class PoissonSolver {
public:
    explicit PoissonSolver(const UniformMesh& mesh, real_t epsilon0 = 1);
    virtual ~PoissonSolver();

    virtual void solve(const ScalarField& rho, ScalarField& phi) = 0;
    virtual const char* name() const = 0;
    /// Iterations used by the last solve (0 for direct solvers).
    virtual int lastIterations() const { return 0; }

    real_t epsilon0() const { return epsilon0_; }
    const UniformMesh& mesh() const { return mesh_; }

protected:
    UniformMesh mesh_;
    real_t epsilon0_;
};

namespace detail {

using complex_t = std::complex<real_t>;

MINIPIC_INLINE bool isPowerOfTwo(std::size_t n) { return n != 0 && (n & (n - 1)) == 0; }

/// In-place, unnormalised radix-2 FFT of length @p n (a power of two) on
/// elements data[0], data[stride], ..., data[(n-1)*stride].
/// sign = -1 is the forward transform, +1 the inverse.
void fft1d(complex_t* data, std::size_t n, std::size_t stride, int sign);

/// 3D transform of a row-major nx*ny*nz array (z fastest) by successive 1D
/// transforms along each axis. Unnormalised.
void fft3d(std::vector<complex_t>& data, std::size_t nx, std::size_t ny, std::size_t nz, int sign);

}  // namespace detail

/**
 * Direct solver for periodic boundaries using the fast Fourier transform.
 *
 * rho is transformed, multiplied by a precomputed Green's function G(k) and
 * transformed back. The k = 0 mode is set to zero, which fixes the gauge and
 * implicitly assumes a neutral system (a neutralising background is added by
 * the caller). Requires a power-of-two node count on every axis and a single
 * rank owning the whole mesh.
 */
class FFTPoissonSolver : public PoissonSolver {
public:
    FFTPoissonSolver(const UniformMesh& mesh, FFTOptions options, real_t epsilon0 = 1);
    ~FFTPoissonSolver() override;

    void solve(const ScalarField& rho, ScalarField& phi) override;
    const char* name() const override { return "fft"; }

    /// G(k) in FFT storage order, one value per mode.
    const std::vector<real_t>& greensFunction() const { return green_; }

private:
    void buildGreensFunction();

    FFTOptions options_;
    std::vector<real_t> green_;
    std::vector<detail::complex_t> work_;

    struct FFTWPlans;  // defined only when MINIPIC_HAVE_FFTW is set
    std::unique_ptr<FFTWPlans> plans_;
};

/**
 * Conjugate gradient solver for the 7-point discretisation of -laplace.
 *
 * Works for both periodic and Dirichlet boundaries and for any slab
 * decomposition, since all it needs are halo exchanges and global dot
 * products. For periodic boundaries the operator is singular (constants are
 * in its null space); the right-hand side is projected onto the mean-free
 * subspace, where the operator is positive definite and CG converges.
 */
class CGSolver : public PoissonSolver {
public:
    CGSolver(const UniformMesh& mesh, HaloExchange& halo, const Communicator& comm, CGOptions options,
             real_t epsilon0 = 1);
    ~CGSolver() override;

    void solve(const ScalarField& rho, ScalarField& phi) override;
    const char* name() const override { return "cg"; }
    int lastIterations() const override { return iterations_; }
    real_t lastResidual() const { return residual_; }

    /// out = -laplace(in) with the standard 7-point stencil. Fills the ghost
    /// layer of @p in first, hence the non-const reference.
    void applyLaplacian(ScalarField& in, ScalarField& out);

private:
    HaloExchange& halo_;
    const Communicator& comm_;
    CGOptions options_;
    ScalarField b_, r_, p_, Ap_;  ///< right-hand side and CG work vectors
    int iterations_ = 0;
    real_t residual_ = 0;
};

}  // namespace minipic
