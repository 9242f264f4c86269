// particles.hpp -- particle storage (struct-of-arrays) and initial loading.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "minipic/config.hpp"
#include "minipic/mesh.hpp"

namespace minipic {

/// One macro-particle in array-of-structs form. Used at the edges of the code
/// (loading, migration buffers, tests); the hot loops work on ParticleBunch.
struct Particle {
    Vec3 x;                 ///< position
    Vec3 v;                 ///< velocity (at the half step in the leapfrog scheme)
    std::int64_t id = -1;   ///< globally unique tag, -1 if unset
};

/**
 * A single species of macro-particles stored as a struct of arrays.
 *
 * Every macro-particle of a bunch carries the same charge q and mass m, so
 * q/m is a species constant. The electric field gathered at each particle is
 * stored alongside position and velocity (Ex, Ey, Ez) so that gather and push
 * are separate, independently testable passes.
 */
class ParticleBunch {
public:
    ParticleBunch(std::string name, real_t charge, real_t mass);

    const std::string& name() const { return name_; }
    real_t charge() const { return charge_; }
    real_t mass() const { return mass_; }
    real_t chargeToMass() const { return charge_ / mass_; }

    std::size_t size() const { return x.size(); }
    bool empty() const { return x.empty(); }

    void reserve(std::size_t n);
    void resize(std::size_t n);
    void clear();

    void push_back(const Particle& p);
    Particle get(std::size_t n) const;
    void set(std::size_t n, const Particle& p);

    MINIPIC_INLINE Vec3 position(std::size_t n) const { return Vec3{x[n], y[n], z[n]}; }
    MINIPIC_INLINE Vec3 velocity(std::size_t n) const { return Vec3{vx[n], vy[n], vz[n]}; }
    MINIPIC_INLINE Vec3 efield(std::size_t n) const { return Vec3{Ex[n], Ey[n], Ez[n]}; }
    MINIPIC_INLINE void setPosition(std::size_t n, const Vec3& p) {
        x[n] = p.x;
        y[n] = p.y;
        z[n] = p.z;
    }
    MINIPIC_INLINE void setVelocity(std::size_t n, const Vec3& u) {
        vx[n] = u.x;
        vy[n] = u.y;
        vz[n] = u.z;
    }

    /// Removes every particle n with remove[n] != 0 by swapping in particles
    /// from the back; order is not preserved. Returns the number removed.
    std::size_t removeIf(const std::vector<char>& remove);

    // Struct-of-arrays storage; public so kernels can take raw pointers.
    std::vector<real_t> x, y, z;
    std::vector<real_t> vx, vy, vz;
    std::vector<real_t> Ex, Ey, Ez;
    std::vector<std::int64_t> id;

private:
    std::string name_;
    real_t charge_;
    real_t mass_;
};

/// All species of a simulation, addressed by index or name.
class ParticleContainer {
public:
    ParticleBunch& addSpecies(const std::string& name, real_t charge, real_t mass);

    std::size_t numSpecies() const { return species_.size(); }
    ParticleBunch& operator[](std::size_t s) { return species_[s]; }
    const ParticleBunch& operator[](std::size_t s) const { return species_[s]; }
    ParticleBunch* find(const std::string& name);

    /// Total number of local macro-particles over all species.
    std::size_t totalParticles() const;

    std::vector<ParticleBunch>::iterator begin() { return species_.begin(); }
    std::vector<ParticleBunch>::iterator end() { return species_.end(); }
    std::vector<ParticleBunch>::const_iterator begin() const { return species_.begin(); }
    std::vector<ParticleBunch>::const_iterator end() const { return species_.end(); }

private:
    std::vector<ParticleBunch> species_;
};

// ---------------------------------------------------------------------------
// Random numbers and initial loading
// ---------------------------------------------------------------------------

/**
 * xorshift64* pseudo-random generator (Marsaglia 2003, "Xorshift RNGs",
 * doi:10.18637/jss.v008.i14, with Vigna's multiplicative output scrambler).
 * Small, fast and reproducible across platforms, which matters more here than
 * statistical perfection. Each rank seeds with seed + rank.
 */
class Rng {
public:
    explicit Rng(std::uint64_t seed);

    std::uint64_t next();
    /// Uniform deviate in [0, 1).
    real_t uniform();
    /// Standard normal deviate via the Box-Muller transform.
    real_t normal();

private:
    std::uint64_t state_;
    bool hasSpare_ = false;
    real_t spare_ = 0;
};

/// Draws a velocity from a drifting Maxwellian with per-axis thermal speeds
/// @p vth (standard deviations) and mean @p drift.
Vec3 sampleMaxwellian(Rng& rng, const Vec3& vth, const Vec3& drift);

/// Parameters of the Landau-damping initial condition
///   f(x, v) = prod_d [1 + alpha cos(k_d x_d)] * Maxwellian(v).
struct LandauPerturbation {
    real_t alpha = 0.05;
    Vec3 k{0.5, 0.5, 0.5};
    Vec3 vth{1.0, 1.0, 1.0};
    Vec3 drift{0.0, 0.0, 0.0};
};

/// Fills @p bunch with @p count particles inside the local region of
/// @p mesh, with positions sampled from the perturbed density by inverting
/// its cumulative distribution and velocities from sampleMaxwellian().
/// Returns the number of particles created.
std::size_t loadLandau(ParticleBunch& bunch, const UniformMesh& mesh, std::size_t count,
                       const LandauPerturbation& params, Rng& rng, std::int64_t firstId = 0);

}  // namespace minipic
