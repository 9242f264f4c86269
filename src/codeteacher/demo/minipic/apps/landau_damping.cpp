// landau_damping.cpp -- weak Landau damping benchmark for minipic.
//
// Electrons with a Maxwellian velocity distribution (v_th = 1) and a small
// density perturbation 1 + alpha * cos(k x) (per axis) move in a uniform
// neutralising ion background. In normalised units (omega_p = 1,
// lambda_D = 1) linear theory (Landau 1946) predicts that the electric field
// oscillates near omega = 1.4156 and decays at gamma = -0.1533 for k = 0.5, so
// the field energy decays as exp(2 gamma t). The same test is used in the
// ALPINE mini-apps (Muralikrishnan et al. 2024, arXiv:2205.11052).
//
// Usage:
//   landau_damping [--cells N] [--ppc P] [--steps S] [--dt DT] [--alpha A]
//                  [--k K] [--solver fft|cg] [--boundary periodic|dirichlet]
//                  [--seed SEED] [--out FILE] [--quiet]
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#ifdef MINIPIC_HAVE_MPI
#include <mpi.h>
#endif

#include "minipic/particles.hpp"
#include "minipic/simulation.hpp"

namespace {

struct Options {
    minipic::index_t cells = 32;
    std::size_t particlesPerCell = 8;
    int steps = 400;
    double dt = 0.05;
    double alpha = 0.05;
    double k = 0.5;
    std::string solver = "fft";
    std::string boundary = "periodic";
    std::uint64_t seed = 20240613;
    std::string out = "landau_damping.csv";
    bool quiet = false;
};

void usage(const char* argv0) {
    std::cerr << "usage: " << argv0
              << " [--cells N] [--ppc P] [--steps S] [--dt DT] [--alpha A] [--k K]\n"
                 "       [--solver fft|cg] [--boundary periodic|dirichlet] [--seed SEED]\n"
                 "       [--out FILE] [--quiet]\n";
}

// Minimal "--flag value" parser; exits with a usage message on bad input.
Options parseArgs(int argc, char** argv) {
    Options o;
    for (int a = 1; a < argc; ++a) {
        const std::string flag = argv[a];
        auto value = [&]() -> const char* {
            if (a + 1 >= argc) {
                usage(argv[0]);
                std::exit(2);
            }
            return argv[++a];
        };
        if (flag == "--cells")
            o.cells = std::atol(value());
        else if (flag == "--ppc")
            o.particlesPerCell = static_cast<std::size_t>(std::atol(value()));
        else if (flag == "--steps")
            o.steps = std::atoi(value());
        else if (flag == "--dt")
            o.dt = std::atof(value());
        else if (flag == "--alpha")
            o.alpha = std::atof(value());
        else if (flag == "--k")
            o.k = std::atof(value());
        else if (flag == "--solver")
            o.solver = value();
        else if (flag == "--boundary")
            o.boundary = value();
        else if (flag == "--seed")
            o.seed = std::strtoull(value(), nullptr, 10);
        else if (flag == "--out")
            o.out = value();
        else if (flag == "--quiet")
            o.quiet = true;
        else {
            usage(argv[0]);
            std::exit(flag == "--help" || flag == "-h" ? 0 : 2);
        }
    }
    return o;
}

int runLandau(const Options& opt) {
    using namespace minipic;

    SimulationConfig cfg;
    const real_t L = 2 * kPi / static_cast<real_t>(opt.k);
    cfg.cells = {{opt.cells, opt.cells, opt.cells}};
    cfg.origin = Vec3{0, 0, 0};
    cfg.length = Vec3{L, L, L};
    cfg.boundary = boundaryFromString(opt.boundary);
    cfg.dt = static_cast<real_t>(opt.dt);
    cfg.steps = opt.steps;
    cfg.backgroundDensity = 1;  // ions: n_i q_i = +1
    cfg.diagnosticsFile = opt.out;
    cfg.verbose = !opt.quiet;
    if (opt.solver == "fft")
        cfg.solver = FieldSolverOptions::makeFFT(/*spectralGreens=*/false);
    else if (opt.solver == "cg")
        cfg.solver = FieldSolverOptions::makeCG(1e-10, 1000, /*warmStart=*/true);
    else
        throw std::invalid_argument("unknown solver: " + opt.solver);

    Simulation sim(cfg);

    // Macro-particle charge and mass chosen so that the electron density is
    // 1 and q/m = -1, i.e. omega_p = 1 in code units.
    const std::size_t total = opt.particlesPerCell * static_cast<std::size_t>(opt.cells * opt.cells * opt.cells);
    const real_t volume = L * L * L;
    const real_t macroCharge = -volume / static_cast<real_t>(total);
    ParticleBunch& electrons = sim.addSpecies("electrons", macroCharge, -macroCharge);

    // Each rank loads the particles of its own slab, proportionally to the
    // number of x nodes it owns.
    const UniformMesh& local = sim.localMesh();
    const std::size_t perNode = total / static_cast<std::size_t>(local.globalCells(0));
    const std::size_t localCount = perNode * static_cast<std::size_t>(local.cells(0));
    LandauPerturbation params;
    params.alpha = static_cast<real_t>(opt.alpha);
    params.k = Vec3{static_cast<real_t>(opt.k), static_cast<real_t>(opt.k), static_cast<real_t>(opt.k)};
    params.vth = Vec3{1, 1, 1};

    Rng rng(opt.seed + static_cast<std::uint64_t>(sim.comm().rank()));
    loadLandau(electrons, local, localCount, params, rng,
               static_cast<std::int64_t>(perNode * static_cast<std::size_t>(local.offset(0))));

    sim.run();

    if (sim.comm().isRoot() && !opt.quiet && !sim.history().empty()) {
        const EnergyReport& first = sim.history().front();
        const EnergyReport& last = sim.history().back();
        std::cout << "field energy " << first.fieldEnergy << " -> " << last.fieldEnergy << ", total energy drift "
                  << (last.fieldEnergy + last.kineticEnergy) / (first.fieldEnergy + first.kineticEnergy) - 1
                  << "\n";
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef MINIPIC_HAVE_MPI
    MPI_Init(&argc, &argv);
#endif
    int rc = 0;
    try {
        rc = runLandau(parseArgs(argc, argv));
    } catch (const std::exception& e) {
        std::cerr << "landau_damping: error: " << e.what() << "\n";
        rc = 1;
    }
#ifdef MINIPIC_HAVE_MPI
    MPI_Finalize();
#endif
    return rc;
}
