// simulation.hpp -- time-stepping driver and diagnostics.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "minipic/config.hpp"
#include "minipic/field.hpp"
#include "minipic/halo.hpp"
#include "minipic/mesh.hpp"
#include "minipic/particles.hpp"
#include "minipic/poisson.hpp"

namespace minipic {

/// Everything needed to set up a run; filled in by the application.
struct SimulationConfig {
    std::array<index_t, 3> cells{{32, 32, 32}};
    Vec3 origin{0, 0, 0};
    Vec3 length{4 * kPi, 4 * kPi, 4 * kPi};
    BoundaryKind boundary = BoundaryKind::Periodic;

    real_t dt = 0.05;
    int steps = 400;
    real_t epsilon0 = 1;

    /// Uniform external magnetic field (zero for Landau damping).
    Vec3 externalB{0, 0, 0};

    /// Charge density of an immobile neutralising background (e.g. ions).
    real_t backgroundDensity = 0;

    FieldSolverOptions solver = FieldSolverOptions::makeFFT();

    int diagnosticsEvery = 1;                  ///< steps between diagnostics
    std::string diagnosticsFile = "minipic_diag.csv";
    bool verbose = true;
};

/// One line of the diagnostics time series.
struct EnergyReport {
    int step = 0;
    real_t time = 0;
    real_t fieldEnergy = 0;    ///< (eps0/2) sum |E|^2 dV
    real_t kineticEnergy = 0;  ///< sum (m/2) |v|^2 at the half step
    real_t maxEx = 0;          ///< max |E_x|, tracks the Landau mode amplitude
    real_t totalCharge = 0;    ///< deposited particle charge (conservation check)
    std::uint64_t particles = 0;
    int solverIterations = 0;
};

/// (eps0 / 2) * sum over nodes of |E|^2 * cell volume, reduced over ranks.
real_t fieldEnergy(const VectorField& E, real_t epsilon0, const Communicator& comm);

/// sum over particles of (m / 2) |v|^2, reduced over ranks.
real_t kineticEnergy(const ParticleBunch& bunch, const Communicator& comm);

/// Wall-clock accumulators for the phases of the PIC cycle.
struct PhaseTimers {
    double deposit = 0, solve = 0, gather = 0, push = 0, migrate = 0, diagnostics = 0;
};

/**
 * Electrostatic PIC driver.
 *
 * Owns the mesh, fields, particles and the field solver, and advances them
 * with the cycle deposit -> solve -> gather -> push. Typical use:
 *
 * @code
 *   Simulation sim(config);
 *   auto& e = sim.addSpecies("electrons", q, m);
 *   loadLandau(e, sim.localMesh(), n, params, rng);
 *   sim.run();
 * @endcode
 */
class Simulation {
public:
    explicit Simulation(const SimulationConfig& config);
    ~Simulation();

    Simulation(const Simulation&) = delete;
    Simulation& operator=(const Simulation&) = delete;

    ParticleBunch& addSpecies(const std::string& name, real_t charge, real_t mass);

    /// Computes the initial field and staggers velocities back by dt/2.
    /// Called automatically by run() if needed.
    void initialize();

    /// Advances the system by one time step.
    void step();

    /// Runs config.steps steps, writing diagnostics along the way.
    void run();

    real_t time() const { return time_; }
    int stepCount() const { return step_; }
    const UniformMesh& globalMesh() const { return globalMesh_; }
    const UniformMesh& localMesh() const { return mesh_; }
    const Communicator& comm() const { return comm_; }
    ParticleContainer& particles() { return particles_; }
    const ScalarField& chargeDensity() const { return rho_; }
    const ScalarField& potential() const { return phi_; }
    const VectorField& electricField() const { return E_; }
    const std::vector<EnergyReport>& history() const { return history_; }
    const PhaseTimers& timers() const { return timers_; }

private:
    EnergyReport computeDiagnostics() const;
    void writeDiagnostics(const EnergyReport& report);
    void printSummary() const;

    SimulationConfig config_;
    Communicator comm_;
    UniformMesh globalMesh_;
    UniformMesh mesh_;
    HaloExchange halo_;

    ScalarField rho_;
    ScalarField phi_;
    VectorField E_;
    std::unique_ptr<PoissonSolver> solver_;
    ParticleContainer particles_;

    real_t time_ = 0;
    int step_ = 0;
    bool initialized_ = false;
    real_t lastDepositedCharge_ = 0;
    std::vector<EnergyReport> history_;
    std::ofstream diagOut_;
    PhaseTimers timers_;
};

}  // namespace minipic
