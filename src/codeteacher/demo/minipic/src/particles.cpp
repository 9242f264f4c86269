// particles.cpp -- ParticleBunch / ParticleContainer and the initial loader.
#include "minipic/particles.hpp"

#include <cmath>
#include <stdexcept>
#include <utility>

namespace minipic {

// ---------------------------------------------------------------------------
// ParticleBunch
// ---------------------------------------------------------------------------

ParticleBunch::ParticleBunch(std::string name, real_t charge, real_t mass)
    : name_(std::move(name)), charge_(charge), mass_(mass) {
    if (!(mass_ > 0)) throw std::invalid_argument("ParticleBunch: mass must be positive");
}

void ParticleBunch::reserve(std::size_t n) {
    for (auto* v : {&x, &y, &z, &vx, &vy, &vz, &Ex, &Ey, &Ez}) v->reserve(n);
    id.reserve(n);
}

void ParticleBunch::resize(std::size_t n) {
    for (auto* v : {&x, &y, &z, &vx, &vy, &vz, &Ex, &Ey, &Ez}) v->resize(n, real_t(0));
    id.resize(n, -1);
}

void ParticleBunch::clear() { resize(0); }

void ParticleBunch::push_back(const Particle& p) {
    x.push_back(p.x.x);
    y.push_back(p.x.y);
    z.push_back(p.x.z);
    vx.push_back(p.v.x);
    vy.push_back(p.v.y);
    vz.push_back(p.v.z);
    Ex.push_back(0);
    Ey.push_back(0);
    Ez.push_back(0);
    id.push_back(p.id);
}

Particle ParticleBunch::get(std::size_t n) const {
    Particle p;
    p.x = position(n);
    p.v = velocity(n);
    p.id = id[n];
    return p;
}

void ParticleBunch::set(std::size_t n, const Particle& p) {
    setPosition(n, p.x);
    setVelocity(n, p.v);
    id[n] = p.id;
}

std::size_t ParticleBunch::removeIf(const std::vector<char>& remove) {
    // Swap-with-last compaction: O(number removed), no allocation.
    std::size_t n = 0;
    std::size_t last = size();
    std::vector<char> flags(remove);
    while (n < last) {
        if (!flags[n]) {
            ++n;
            continue;
        }
        --last;
        if (n != last) {
            set(n, get(last));
            Ex[n] = Ex[last];
            Ey[n] = Ey[last];
            Ez[n] = Ez[last];
            flags[n] = flags[last];
        }
    }
    const std::size_t removed = size() - last;
    resize(last);
    return removed;
}

// ---------------------------------------------------------------------------
// ParticleContainer
// ---------------------------------------------------------------------------

ParticleBunch& ParticleContainer::addSpecies(const std::string& name, real_t charge, real_t mass) {
    if (find(name) != nullptr) throw std::invalid_argument("duplicate species name: " + name);
    species_.emplace_back(name, charge, mass);
    return species_.back();
}

ParticleBunch* ParticleContainer::find(const std::string& name) {
    for (auto& s : species_)
        if (s.name() == name) return &s;
    return nullptr;
}

std::size_t ParticleContainer::totalParticles() const {
    std::size_t n = 0;
    for (const auto& s : species_) n += s.size();
    return n;
}

// ---------------------------------------------------------------------------
// Random numbers
// ---------------------------------------------------------------------------

Rng::Rng(std::uint64_t seed) : state_(seed ? seed : 0x9E3779B97F4A7C15ULL) {
    // Discard a few outputs so that nearby seeds decorrelate quickly.
    for (int n = 0; n < 8; ++n) next();
}

std::uint64_t Rng::next() {
    // xorshift64* with shift triple (12, 25, 27), Marsaglia (2003).
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545F4914F6CDD1DULL;
}

real_t Rng::uniform() {
    // Top 53 bits -> double in [0, 1). In single precision the rounding to
    // float can produce exactly 1, which is folded back below 1.
    const real_t u = static_cast<real_t>((next() >> 11) * (1.0 / 9007199254740992.0));
    return u < real_t(1) ? u : std::nextafter(real_t(1), real_t(0));
}

/// Box & Muller (1958), doi:10.1214/aoms/1177706645: two independent uniform
/// deviates u1, u2 give two independent normals
///     r = sqrt(-2 ln u1),  z0 = r cos(2 pi u2),  z1 = r sin(2 pi u2).
/// The second deviate is cached for the next call.
real_t Rng::normal() {
    if (hasSpare_) {
        hasSpare_ = false;
        return spare_;
    }
    real_t u1 = uniform();
    while (u1 <= real_t(0)) u1 = uniform();  // log(0) guard
    const real_t u2 = uniform();
    const real_t r = std::sqrt(real_t(-2) * std::log(u1));
    const real_t theta = 2 * kPi * u2;
    spare_ = r * std::sin(theta);
    hasSpare_ = true;
    return r * std::cos(theta);
}

Vec3 sampleMaxwellian(Rng& rng, const Vec3& vth, const Vec3& drift) {
    return Vec3{drift.x + vth.x * rng.normal(), drift.y + vth.y * rng.normal(),
                drift.z + vth.z * rng.normal()};
}

namespace {

// Samples x in [lo, hi) from the density 1 + alpha cos(k x) by inverse
// transform sampling (Devroye 1986): solve F(x) = u F(hi) with
//     F(x) = (x - lo) + (alpha / k) (sin(k x) - sin(k lo))
// by safeguarded Newton iteration. F is monotone for |alpha| < 1, so
// bisection on [lo, hi] backs up any Newton step that leaves the bracket.
real_t sampleCosineDensity(real_t u, real_t lo, real_t hi, real_t alpha, real_t k) {
    auto cdf = [&](real_t s) { return (s - lo) + (alpha / k) * (std::sin(k * s) - std::sin(k * lo)); };
    auto pdf = [&](real_t s) { return real_t(1) + alpha * std::cos(k * s); };

    const real_t target = u * cdf(hi);
    real_t a = lo, b = hi;
    real_t s = lo + u * (hi - lo);  // exact for alpha = 0
    for (int iter = 0; iter < 50; ++iter) {
        const real_t f = cdf(s) - target;
        if (std::abs(f) < real_t(1e-13) * (hi - lo)) break;
        if (f > 0)
            b = s;
        else
            a = s;
        real_t next = s - f / pdf(s);
        if (!(next > a && next < b)) next = real_t(0.5) * (a + b);
        s = next;
    }
    return s;
}

}  // namespace

std::size_t loadLandau(ParticleBunch& bunch, const UniformMesh& mesh, std::size_t count,
                       const LandauPerturbation& params, Rng& rng, std::int64_t firstId) {
    const Vec3 lo = mesh.localLower();
    const Vec3 hi = mesh.localUpper();
    bunch.reserve(bunch.size() + count);

    for (std::size_t n = 0; n < count; ++n) {
        Particle p;
        for (int d = 0; d < kDim; ++d) {
            real_t s = sampleCosineDensity(rng.uniform(), lo[d], hi[d], params.alpha, params.k[d]);
            // Guard against round-off placing a particle exactly on the upper face.
            if (s >= hi[d]) s = std::nextafter(hi[d], lo[d]);
            p.x[d] = s;
        }
        p.v = sampleMaxwellian(rng, params.vth, params.drift);
        p.id = firstId + static_cast<std::int64_t>(n);
        bunch.push_back(p);
    }
    return count;
}

}  // namespace minipic
