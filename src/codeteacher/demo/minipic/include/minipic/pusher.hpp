// pusher.hpp -- particle time integration (Boris / leapfrog).
//
// Header-only so that the magnetic-field functor is inlined into the particle
// loop. Velocities live at half-integer time levels, positions at integer
// levels:
//
//     v^{n+1/2} = BorisUpdate(v^{n-1/2}, E^n(x^n), B^n(x^n))
//     x^{n+1}   = x^n + dt v^{n+1/2}
//
// which is the leapfrog (Stormer-Verlet) scheme when B = 0
// (Verlet 1967; Hairer, Lubich & Wanner 2003).
#pragma once

#include <type_traits>

#include "minipic/config.hpp"
#include "minipic/particles.hpp"

namespace minipic {

/// Boris (1970) rotation: rotates @p v about the magnetic field direction by
/// the angle 2 atan(|t|), where t = (q/m) B dt / 2, using only cross
/// products. The rotation is exactly norm-preserving, so a pure magnetic
/// field does no work on the particle regardless of dt.
MINIPIC_FORCEINLINE Vec3 borisRotate(const Vec3& v, const Vec3& t) {
    const real_t s = real_t(2) / (real_t(1) + norm2(t));
    const Vec3 vprime = v + cross(v, t);
    return v + cross(vprime, t * s);
}

/// Full Boris velocity update for one particle: half electric kick, magnetic
/// rotation, half electric kick.
MINIPIC_INLINE Vec3 borisVelocity(const Vec3& v, const Vec3& E, const Vec3& B, real_t qm, real_t dt) {
    const real_t h = real_t(0.5) * qm * dt;
    const Vec3 vminus = v + E * h;
    const Vec3 vplus = borisRotate(vminus, B * h);
    return vplus + E * h;
}

/**
 * Advances every particle of @p bunch by one time step with the Boris scheme
 * (Boris 1970; see also Birdsall & Langdon 1991) and then drifts
 * the positions.
 *
 * The electric field must already have been gathered into bunch.Ex/Ey/Ez.
 *
 * @tparam BField callable with signature Vec3(const Vec3& x) returning the
 *                external magnetic field at x. Pass a lambda returning a
 *                constant for a uniform field.
 * @param  dt     time step; v dt should stay below one slab width so that
 *                HaloExchange::migrate only needs nearest neighbours.
 */
template <typename BField, typename = std::enable_if_t<std::is_invocable_r_v<Vec3, BField, const Vec3&>>>
void borisPush(ParticleBunch& bunch, BField&& magneticField, real_t dt) {
    const real_t qm = bunch.chargeToMass();
    const std::size_t np = bunch.size();
    for (std::size_t n = 0; n < np; ++n) {
        const Vec3 x = bunch.position(n);
        const Vec3 v = borisVelocity(bunch.velocity(n), bunch.efield(n), magneticField(x), qm, dt);
        bunch.setVelocity(n, v);
        bunch.setPosition(n, x + v * dt);
    }
}

/// Convenience overload for a uniform magnetic field.
inline void borisPush(ParticleBunch& bunch, const Vec3& B, real_t dt) {
    borisPush(bunch, [B](const Vec3&) { return B; }, dt);
}

/// Moves velocities from t = 0 back to t = -dt/2 so that the leapfrog starts
/// time-centred (Birdsall & Langdon 1991). Only the electric half
/// kick is undone; the magnetic rotation over dt/2 is neglected, which is an
/// O(dt^2) start-up error.
inline void leapfrogHalfStepBack(ParticleBunch& bunch, real_t dt) {
    const real_t h = real_t(-0.5) * bunch.chargeToMass() * dt;
    for (std::size_t n = 0; n < bunch.size(); ++n) bunch.setVelocity(n, bunch.velocity(n) + bunch.efield(n) * h);
}

}  // namespace minipic
