// fft_poisson.cpp -- radix-2 FFT and the periodic FFT Poisson solver.
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "minipic/poisson.hpp"

#ifdef MINIPIC_HAVE_FFTW
#include <fftw3.h>
#endif

namespace minipic {

// ---------------------------------------------------------------------------
// PoissonSolver base
// ---------------------------------------------------------------------------

PoissonSolver::PoissonSolver(const UniformMesh& mesh, real_t epsilon0) : mesh_(mesh), epsilon0_(epsilon0) {
    if (!(epsilon0_ > 0)) throw std::invalid_argument("PoissonSolver: epsilon0 must be positive");
}

PoissonSolver::~PoissonSolver() = default;

// ---------------------------------------------------------------------------
// Built-in FFT
// ---------------------------------------------------------------------------

namespace {

unsigned log2Exact(std::size_t n) {
    unsigned bits = 0;
    while ((std::size_t(1) << bits) < n) ++bits;
    return bits;
}

// Reverses the lowest `bits` bits of x: the input permutation of an
// in-place decimation-in-time FFT.
std::size_t reverseBits(std::size_t x, unsigned bits) {
    std::size_t r = 0;
    for (unsigned b = 0; b < bits; ++b) {
        r = (r << 1) | (x & 1u);
        x >>= 1;
    }
    return r;
}

// Signed wavenumber index of FFT bin m on an axis of n points.
MINIPIC_INLINE index_t signedMode(index_t m, index_t n) { return m <= n / 2 ? m : m - n; }

}  // namespace

}  // namespace minipic

namespace minipic::detail {

/*
 * Iterative radix-2 decimation-in-time FFT (Cooley & Tukey 1965,
 * doi:10.1090/S0025-5718-1965-0178586-1).
 *
 * After the bit-reversal permutation, log2(n) passes of butterflies combine
 * transforms of length len/2 into transforms of length len:
 *     X[m]         = E[m] + w^m O[m]
 *     X[m + len/2] = E[m] - w^m O[m],   w = exp(sign * 2 pi i / len).
 * Twiddle factors are taken from a table of exp(sign * 2 pi i m / n) rather
 * than by repeated multiplication, which keeps the round-off at O(log n).
 */
void fft1d(complex_t* data, std::size_t n, std::size_t stride, int sign) {
    if (!isPowerOfTwo(n)) throw std::invalid_argument("fft1d: length must be a power of two");
    if (n == 1) return;
    const unsigned bits = log2Exact(n);

    for (std::size_t m = 0; m < n; ++m) {
        const std::size_t r = reverseBits(m, bits);
        if (r > m) std::swap(data[m * stride], data[r * stride]);
    }

    std::vector<complex_t> twiddle(n / 2);
    for (std::size_t m = 0; m < n / 2; ++m) {
        const real_t theta = static_cast<real_t>(sign) * 2 * kPi * static_cast<real_t>(m) / static_cast<real_t>(n);
        twiddle[m] = complex_t(std::cos(theta), std::sin(theta));
    }

    for (std::size_t len = 2; len <= n; len <<= 1) {
        const std::size_t half = len / 2;
        const std::size_t step = n / len;  // twiddle table stride for this stage
        for (std::size_t start = 0; start < n; start += len) {
            for (std::size_t m = 0; m < half; ++m) {
                complex_t& even = data[(start + m) * stride];
                complex_t& odd = data[(start + m + half) * stride];
                const complex_t t = twiddle[m * step] * odd;
                odd = even - t;
                even += t;
            }
        }
    }
}

void fft3d(std::vector<complex_t>& data, std::size_t nx, std::size_t ny, std::size_t nz, int sign) {
    if (data.size() != nx * ny * nz) throw std::invalid_argument("fft3d: size mismatch");
    // z: contiguous lines
    for (std::size_t i = 0; i < nx; ++i)
        for (std::size_t j = 0; j < ny; ++j) fft1d(&data[(i * ny + j) * nz], nz, 1, sign);
    // y: stride nz
    for (std::size_t i = 0; i < nx; ++i)
        for (std::size_t k = 0; k < nz; ++k) fft1d(&data[i * ny * nz + k], ny, nz, sign);
    // x: stride ny * nz
    for (std::size_t j = 0; j < ny; ++j)
        for (std::size_t k = 0; k < nz; ++k) fft1d(&data[j * nz + k], nx, ny * nz, sign);
}

}  // namespace minipic::detail

namespace minipic {

// ---------------------------------------------------------------------------
// FFTPoissonSolver
// ---------------------------------------------------------------------------

#ifdef MINIPIC_HAVE_FFTW
static_assert(std::is_same<real_t, double>::value, "the FFTW back end is built for double precision");

struct FFTPoissonSolver::FFTWPlans {
    fftw_plan forward = nullptr;
    fftw_plan backward = nullptr;
    ~FFTWPlans() {
        if (forward) fftw_destroy_plan(forward);
        if (backward) fftw_destroy_plan(backward);
    }
};
#else
struct FFTPoissonSolver::FFTWPlans {};
#endif

FFTPoissonSolver::FFTPoissonSolver(const UniformMesh& mesh, FFTOptions options, real_t epsilon0)
    : PoissonSolver(mesh, epsilon0), options_(options) {
    if (mesh_.boundary() != BoundaryKind::Periodic)
        throw std::invalid_argument("FFTPoissonSolver: only periodic boundaries are supported");
    for (int d = 0; d < kDim; ++d) {
        if (mesh_.cells(d) != mesh_.globalCells(d))
            throw std::invalid_argument("FFTPoissonSolver: the mesh must not be decomposed (use CG with MPI)");
        if (!detail::isPowerOfTwo(static_cast<std::size_t>(mesh_.cells(d))))
            throw std::invalid_argument("FFTPoissonSolver: cells per axis must be a power of two, got " +
                                        std::to_string(mesh_.cells(d)));
    }
    work_.resize(static_cast<std::size_t>(mesh_.numCells()));
    buildGreensFunction();

#ifdef MINIPIC_HAVE_FFTW
    plans_ = std::make_unique<FFTWPlans>();
    auto* buf = reinterpret_cast<fftw_complex*>(work_.data());
    const int nx = static_cast<int>(mesh_.cells(0));
    const int ny = static_cast<int>(mesh_.cells(1));
    const int nz = static_cast<int>(mesh_.cells(2));
    plans_->forward = fftw_plan_dft_3d(nx, ny, nz, buf, buf, FFTW_FORWARD, FFTW_MEASURE);
    plans_->backward = fftw_plan_dft_3d(nx, ny, nz, buf, buf, FFTW_BACKWARD, FFTW_MEASURE);
#endif
}

FFTPoissonSolver::~FFTPoissonSolver() = default;

/**
 * Builds the Green's function G(k) such that phi_k = G(k) rho_k.
 *
 * For the discrete kernel, the symbol of the 7-point operator -laplace_h on
 * mode exp(i k.x) is
 *     K^2 = sum_d (2 / h_d)^2 sin^2(k_d h_d / 2),
 * so G = 1 / (epsilon0 K^2) inverts the finite-difference operator exactly
 * and the FFT and CG solvers agree to round-off. The spectral kernel uses
 * |k|^2 instead (Hockney & Eastwood 1988). G(0) = 0 removes the mean.
 * The 1/N normalisation of the inverse transform is folded into G.
 */
void FFTPoissonSolver::buildGreensFunction() {
    const index_t nx = mesh_.cells(0), ny = mesh_.cells(1), nz = mesh_.cells(2);
    const real_t norm = real_t(1) / static_cast<real_t>(nx * ny * nz);
    green_.assign(static_cast<std::size_t>(nx * ny * nz), real_t(0));

    auto symbol = [&](index_t m, index_t n, int d) {
        const real_t k = 2 * kPi * static_cast<real_t>(signedMode(m, n)) / mesh_.length(d);
        if (options_.spectralGreens) return k * k;
        const real_t h = mesh_.spacing(d);
        const real_t s = std::sin(real_t(0.5) * k * h) * (real_t(2) / h);
        return s * s;
    };

    for (index_t a = 0; a < nx; ++a) {
        const real_t kx2 = symbol(a, nx, 0);
        for (index_t b = 0; b < ny; ++b) {
            const real_t ky2 = symbol(b, ny, 1);
            for (index_t c = 0; c < nz; ++c) {
                const real_t k2 = kx2 + ky2 + symbol(c, nz, 2);
                const std::size_t idx = static_cast<std::size_t>((a * ny + b) * nz + c);
                green_[idx] = (a == 0 && b == 0 && c == 0) ? real_t(0) : norm / (epsilon0_ * k2);
            }
        }
    }
}

void FFTPoissonSolver::solve(const ScalarField& rho, ScalarField& phi) {
    const UniformMesh& m = mesh_;
    rho.forEachInterior([&](index_t i, index_t j, index_t k) {
        work_[static_cast<std::size_t>(m.linearIndex(i, j, k))] = detail::complex_t(rho(i, j, k), 0);
    });

#ifdef MINIPIC_HAVE_FFTW
    fftw_execute(plans_->forward);
#else
    detail::fft3d(work_, m.cells(0), m.cells(1), m.cells(2), -1);
#endif

    for (std::size_t n = 0; n < work_.size(); ++n) work_[n] *= green_[n];

#ifdef MINIPIC_HAVE_FFTW
    fftw_execute(plans_->backward);
#else
    detail::fft3d(work_, m.cells(0), m.cells(1), m.cells(2), +1);
#endif

    phi.forEachInterior([&](index_t i, index_t j, index_t k) {
        phi(i, j, k) = work_[static_cast<std::size_t>(m.linearIndex(i, j, k))].real();
    });
}

}  // namespace minipic
