// simulation.cpp -- the PIC time-stepping driver and its diagnostics.
#include "minipic/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "minipic/interpolation.hpp"
#include "minipic/pusher.hpp"

namespace minipic {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::unique_ptr<PoissonSolver> makeSolver(const FieldSolverOptions& opts, const UniformMesh& mesh,
                                          HaloExchange& halo, const Communicator& comm, real_t epsilon0) {
    switch (opts.kind) {
        case SolverKind::FFT:
            if (comm.size() > 1)
                throw std::invalid_argument("the FFT solver runs on one rank only; use --solver cg with MPI");
            return std::make_unique<FFTPoissonSolver>(mesh, opts.fft, epsilon0);
        case SolverKind::CG:
            return std::make_unique<CGSolver>(mesh, halo, comm, opts.cg, epsilon0);
    }
    throw std::invalid_argument("unknown solver kind");
}

// E = -grad(phi) with second-order centred differences on the nodes.
// phi's ghost layer must be current.
void electricFieldFromPotential(const ScalarField& phi, VectorField& E) {
    const UniformMesh& m = phi.mesh();
    const real_t cx = real_t(-0.5) / m.spacing(0);
    const real_t cy = real_t(-0.5) / m.spacing(1);
    const real_t cz = real_t(-0.5) / m.spacing(2);
    phi.forEachInterior([&](index_t i, index_t j, index_t k) {
        E(i, j, k) = Vec3{cx * (phi(i + 1, j, k) - phi(i - 1, j, k)), cy * (phi(i, j + 1, k) - phi(i, j - 1, k)),
                          cz * (phi(i, j, k + 1) - phi(i, j, k - 1))};
    });
}

}  // namespace

// ---------------------------------------------------------------------------
// Diagnostics
// ---------------------------------------------------------------------------

real_t fieldEnergy(const VectorField& E, real_t epsilon0, const Communicator& comm) {
    real_t sum = 0;
    E.forEachInterior([&](index_t i, index_t j, index_t k) { sum += norm2(E(i, j, k)); });
    return comm.allreduceSum(real_t(0.5) * epsilon0 * sum * E.mesh().cellVolume());
}

real_t kineticEnergy(const ParticleBunch& bunch, const Communicator& comm) {
    real_t sum = 0;
    for (std::size_t n = 0; n < bunch.size(); ++n)
        sum += bunch.vx[n] * bunch.vx[n] + bunch.vy[n] * bunch.vy[n] + bunch.vz[n] * bunch.vz[n];
    return comm.allreduceSum(real_t(0.5) * bunch.mass() * sum);
}

// ---------------------------------------------------------------------------
// Simulation
// ---------------------------------------------------------------------------

Simulation::Simulation(const SimulationConfig& config)
    : config_(config),
      comm_(),
      globalMesh_(config.cells, config.origin, config.length, config.boundary),
      mesh_(globalMesh_.slab(comm_.rank(), comm_.size())),
      halo_(mesh_, comm_),
      rho_(mesh_),
      phi_(mesh_),
      E_(mesh_),
      solver_(makeSolver(config.solver, mesh_, halo_, comm_, config.epsilon0)) {
    if (!(config_.dt > 0)) throw std::invalid_argument("Simulation: dt must be positive");
    if (config_.diagnosticsEvery < 1) config_.diagnosticsEvery = 1;

    if (comm_.isRoot() && !config_.diagnosticsFile.empty()) {
        diagOut_.open(config_.diagnosticsFile);
        if (!diagOut_) throw std::runtime_error("cannot open " + config_.diagnosticsFile);
        diagOut_ << "step,time,field_energy,kinetic_energy,total_energy,max_Ex,total_charge,particles,"
                    "solver_iterations\n";
    }
}

Simulation::~Simulation() {
    if (diagOut_.is_open()) diagOut_.flush();
}

ParticleBunch& Simulation::addSpecies(const std::string& name, real_t charge, real_t mass) {
    if (initialized_) throw std::logic_error("addSpecies: species must be added before initialize()");
    return particles_.addSpecies(name, charge, mass);
}

void Simulation::initialize() {
    if (initialized_) return;

    // Apply boundary conditions to the loaded particles, then compute E at
    // t = 0 exactly as step() will.
    for (auto& bunch : particles_) halo_.migrate(bunch);

    rho_ = real_t(0);
    for (const auto& bunch : particles_) depositChargeCIC(bunch, rho_);
    halo_.accumulate(rho_);
    if (config_.backgroundDensity != 0)
        rho_.forEachInterior([&](index_t i, index_t j, index_t k) { rho_(i, j, k) += config_.backgroundDensity; });
    solver_->solve(rho_, phi_);
    halo_.exchange(phi_);
    electricFieldFromPotential(phi_, E_);
    halo_.exchange(E_);

    for (auto& bunch : particles_) {
        gatherCIC(E_, bunch);
        leapfrogHalfStepBack(bunch, config_.dt);
    }
    initialized_ = true;
}

/*
 * One cycle of the electrostatic particle-in-cell method
 * (Birdsall & Langdon 1991; Hockney & Eastwood 1988):
 *
 *   1. deposit   rho^n        <- particles x^n                 (depositChargeCIC)
 *   2. solve     phi^n, E^n   <- rho^n                         (PoissonSolver::solve)
 *   3. gather    E^n(x^n)     <- E^n                           (gatherCIC)
 *   4. push      v^{n+1/2}, x^{n+1}                            (borisPush)
 *   5. migrate   boundary conditions and inter-rank transfer   (HaloExchange::migrate)
 *
 * Energies are reported at integer time level n: the field energy from E^n
 * and the kinetic energy as the mean of the values at n-1/2 and n+1/2, the
 * usual time-centred estimate for a leapfrog scheme.
 */
void Simulation::step() {
    if (!initialized_) initialize();

    const real_t dt = config_.dt;
    const bool periodic = mesh_.boundary() == BoundaryKind::Periodic;
    const bool wantDiagnostics = (step_ % config_.diagnosticsEvery) == 0;

    // ------------------------------------------------------------------
    // 1. Deposit: scatter particle charge onto the mesh nodes.
    // ------------------------------------------------------------------
    auto t0 = Clock::now();
    rho_ = real_t(0);
    real_t depositedLocal = 0;
    for (const auto& bunch : particles_) depositedLocal += depositChargeCIC(bunch, rho_);

    // Charge that landed in ghost nodes belongs to a neighbour (or to the
    // periodic image); fold it back before anybody reads rho.
    halo_.accumulate(rho_);
    lastDepositedCharge_ = comm_.allreduceSum(depositedLocal);

    // Immobile neutralising background, e.g. the ion density for Landau
    // damping. Without it a periodic system would not be neutral and the
    // k = 0 mode of the Poisson problem would be inconsistent.
    if (config_.backgroundDensity != 0) {
        rho_.forEachInterior([&](index_t i, index_t j, index_t k) { rho_(i, j, k) += config_.backgroundDensity; });
    }

    // CIC conserves charge exactly on a periodic mesh: the mesh total (minus
    // the background) must equal the particle total up to round-off.
    if (periodic) {
        const real_t volume = mesh_.cellVolume();
        const real_t nodes =
            static_cast<real_t>(globalMesh_.globalCells(0) * globalMesh_.globalCells(1) * globalMesh_.globalCells(2));
        const real_t meshCharge =
            comm_.allreduceSum(rho_.sumInterior()) * volume - config_.backgroundDensity * nodes * volume;
        const real_t scale = std::max<real_t>(std::abs(lastDepositedCharge_), 1);
        const real_t tolerance = std::sqrt(std::numeric_limits<real_t>::epsilon());
        if (std::abs(meshCharge - lastDepositedCharge_) > tolerance * scale && comm_.isRoot()) {
            std::cerr << "minipic: warning: charge not conserved at step " << step_ << " (mesh " << meshCharge
                      << ", particles " << lastDepositedCharge_ << ")\n";
        }
    }
    timers_.deposit += secondsSince(t0);

    // ------------------------------------------------------------------
    // 2. Field solve: phi from rho, then E = -grad(phi).
    // ------------------------------------------------------------------
    t0 = Clock::now();
    solver_->solve(rho_, phi_);
    halo_.exchange(phi_);
    electricFieldFromPotential(phi_, E_);
    // The gather reads E at the upper neighbours of each particle's cell.
    halo_.exchange(E_);
    timers_.solve += secondsSince(t0);

    // ------------------------------------------------------------------
    // 3. Gather: interpolate E^n to the particle positions.
    // ------------------------------------------------------------------
    t0 = Clock::now();
    for (auto& bunch : particles_) gatherCIC(E_, bunch);
    timers_.gather += secondsSince(t0);

    // Kinetic energy at n-1/2, before the push overwrites the velocities.
    real_t kineticBefore = 0;
    if (wantDiagnostics) {
        for (const auto& bunch : particles_) kineticBefore += kineticEnergy(bunch, comm_);
    }

    // ------------------------------------------------------------------
    // 4. Push: Boris velocity update and position drift.
    // ------------------------------------------------------------------
    t0 = Clock::now();
    real_t maxDisplacement = 0;
    for (auto& bunch : particles_) {
        borisPush(bunch, config_.externalB, dt);
        for (std::size_t n = 0; n < bunch.size(); ++n)
            maxDisplacement = std::max(maxDisplacement, std::abs(bunch.vx[n]) * dt);
    }
    timers_.push += secondsSince(t0);

    // Nearest-neighbour migration assumes no particle crosses a whole slab
    // in one step. Check the global worst case and fail loudly if violated.
    if (comm_.size() > 1) {
        const real_t worst = comm_.allreduceMax(maxDisplacement);
        const real_t slabWidth = mesh_.cells(0) * mesh_.spacing(0);
        if (worst >= slabWidth)
            throw std::runtime_error("particle moved further than one slab in one step; reduce dt or ranks");
    }

    // ------------------------------------------------------------------
    // 5. Migrate: boundary conditions and transfer between slabs.
    // ------------------------------------------------------------------
    t0 = Clock::now();
    std::size_t lostLocal = 0;
    for (auto& bunch : particles_) lostLocal += halo_.migrate(bunch);
    timers_.migrate += secondsSince(t0);

    // ------------------------------------------------------------------
    // 6. Diagnostics at time level n, then advance the clock.
    // ------------------------------------------------------------------
    if (wantDiagnostics) {
        t0 = Clock::now();
        EnergyReport report = computeDiagnostics();
        real_t kineticAfter = 0;
        for (const auto& bunch : particles_) kineticAfter += kineticEnergy(bunch, comm_);
        report.kineticEnergy = real_t(0.5) * (kineticBefore + kineticAfter);

        if (!std::isfinite(report.fieldEnergy) || !std::isfinite(report.kineticEnergy)) {
            std::ostringstream msg;
            msg << "non-finite energy at step " << step_ << "; the run has become unstable"
                << " (is dt * omega_p < 2 and the Debye length resolved?)";
            throw std::runtime_error(msg.str());
        }

        const std::uint64_t lost = comm_.allreduceSum(static_cast<std::uint64_t>(lostLocal));
        if (lost > 0 && comm_.isRoot() && config_.verbose)
            std::cout << "minipic: " << lost << " particles absorbed at the walls in step " << step_ << "\n";

        history_.push_back(report);
        writeDiagnostics(report);
        timers_.diagnostics += secondsSince(t0);
    }

    time_ += dt;
    ++step_;
}

void Simulation::run() {
    initialize();
    if (comm_.isRoot() && config_.verbose) {
        std::cout << "minipic " << MINIPIC_VERSION_STRING << ": " << globalMesh_.globalCells(0) << "x"
                  << globalMesh_.globalCells(1) << "x" << globalMesh_.globalCells(2) << " nodes, "
                  << comm_.allreduceSum(static_cast<std::uint64_t>(particles_.totalParticles()))
                  << " particles, solver " << solver_->name() << ", " << comm_.size() << " rank(s), boundary "
                  << toString(globalMesh_.boundary()) << "\n";
    }
    for (int s = 0; s < config_.steps; ++s) step();
    printSummary();
}

EnergyReport Simulation::computeDiagnostics() const {
    EnergyReport r;
    r.step = step_;
    r.time = time_;
    r.fieldEnergy = fieldEnergy(E_, config_.epsilon0, comm_);
    real_t maxEx = 0;
    E_.forEachInterior([&](index_t i, index_t j, index_t k) { maxEx = std::max(maxEx, std::abs(E_(i, j, k).x)); });
    r.maxEx = comm_.allreduceMax(maxEx);
    r.totalCharge = lastDepositedCharge_;
    r.particles = comm_.allreduceSum(static_cast<std::uint64_t>(particles_.totalParticles()));
    r.solverIterations = solver_->lastIterations();
    return r;
}

void Simulation::writeDiagnostics(const EnergyReport& r) {
    if (!comm_.isRoot()) return;
    if (diagOut_.is_open()) {
        diagOut_ << std::setprecision(std::numeric_limits<real_t>::max_digits10) << r.step << ',' << r.time << ','
                 << r.fieldEnergy << ',' << r.kineticEnergy << ',' << (r.fieldEnergy + r.kineticEnergy) << ','
                 << r.maxEx << ',' << r.totalCharge << ',' << r.particles << ',' << r.solverIterations << '\n';
    }
    if (config_.verbose && (r.step % (10 * config_.diagnosticsEvery) == 0)) {
        std::printf("step %5d  t = %8.4f  W_E = %.6e  W_K = %.6e  max|Ex| = %.4e\n", r.step,
                    static_cast<double>(r.time), static_cast<double>(r.fieldEnergy),
                    static_cast<double>(r.kineticEnergy), static_cast<double>(r.maxEx));
    }
}

void Simulation::printSummary() const {
    if (!comm_.isRoot() || !config_.verbose) return;
    const double total = timers_.deposit + timers_.solve + timers_.gather + timers_.push + timers_.migrate +
                         timers_.diagnostics;
    auto line = [&](const char* name, double t) {
        std::printf("  %-12s %10.4f s  %5.1f %%\n", name, t, total > 0 ? 100.0 * t / total : 0.0);
    };
    std::printf("timing summary (rank 0, %d steps):\n", step_);
    line("deposit", timers_.deposit);
    line("solve", timers_.solve);
    line("gather", timers_.gather);
    line("push", timers_.push);
    line("migrate", timers_.migrate);
    line("diagnostics", timers_.diagnostics);
    std::printf("  halo traffic %.3f MB\n", static_cast<double>(halo_.bytesSent()) / 1.0e6);
}

}  // namespace minipic
