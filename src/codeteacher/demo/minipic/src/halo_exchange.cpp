// halo_exchange.cpp -- ghost-layer exchange, charge accumulation and
// particle migration between x-slabs.
#include "minipic/halo.hpp"

#include <cmath>
#include <stdexcept>

namespace minipic {

namespace {

constexpr int kNoNeighbor = -1;

#ifdef MINIPIC_HAVE_MPI
MPI_Datatype mpiReal() {
    return sizeof(real_t) == sizeof(double) ? MPI_DOUBLE : MPI_FLOAT;
}
#endif

FaceTag makeTag(int axis, int side) {
    FaceTag t;
    t.tag = 0;
    t.face.axis = static_cast<std::int8_t>(axis);
    t.face.side = static_cast<std::int8_t>(side);
    return t;
}

// Number of particle attributes shipped per migrating particle:
// x, y, z, vx, vy, vz, id.
constexpr std::size_t kParticleRecord = 7;

void appendParticle(std::vector<real_t>& buf, const ParticleBunch& b, std::size_t n) {
    buf.insert(buf.end(), {b.x[n], b.y[n], b.z[n], b.vx[n], b.vy[n], b.vz[n], static_cast<real_t>(b.id[n])});
}

}  // namespace

// ---------------------------------------------------------------------------
// Communicator
// ---------------------------------------------------------------------------

Communicator::Communicator() {
#ifdef MINIPIC_HAVE_MPI
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
#endif
}

real_t Communicator::allreduceSum(real_t local) const {
    allreduceSum(&local, 1);
    return local;
}

void Communicator::allreduceSum(real_t* values, std::size_t n) const {
#ifdef MINIPIC_HAVE_MPI
    MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(n), mpiReal(), MPI_SUM, comm_);
#else
    (void)values;
    (void)n;  // a single rank already holds the global sum
#endif
}

real_t Communicator::allreduceMax(real_t local) const {
#ifdef MINIPIC_HAVE_MPI
    MPI_Allreduce(MPI_IN_PLACE, &local, 1, mpiReal(), MPI_MAX, comm_);
#endif
    return local;
}

std::uint64_t Communicator::allreduceSum(std::uint64_t local) const {
#ifdef MINIPIC_HAVE_MPI
    MPI_Allreduce(MPI_IN_PLACE, &local, 1, MPI_UINT64_T, MPI_SUM, comm_);
#endif
    return local;
}

void Communicator::barrier() const {
#ifdef MINIPIC_HAVE_MPI
    MPI_Barrier(comm_);
#endif
}

// ---------------------------------------------------------------------------
// HaloExchange
// ---------------------------------------------------------------------------

HaloExchange::HaloExchange(const UniformMesh& localMesh, const Communicator& comm)
    : mesh_(localMesh), comm_(comm) {
    const int p = comm_.size();
    left_ = (comm_.rank() - 1 + p) % p;
    right_ = (comm_.rank() + 1) % p;
    if (mesh_.boundary() == BoundaryKind::Dirichlet) {
        hasLowWall_ = comm_.rank() == 0;
        hasHighWall_ = comm_.rank() == p - 1;
    }
}

HaloExchange::~HaloExchange() = default;

void HaloExchange::exchange(ScalarField& f) { exchangeImpl(f); }
void HaloExchange::exchange(VectorField& f) { exchangeImpl(f); }

template <typename T>
void HaloExchange::packPlane(const Field<T>& f, int axis, index_t plane, std::vector<real_t>& buf) const {
    const index_t g = f.ghosts();
    const int a1 = (axis + 1) % 3;
    const int a2 = (axis + 2) % 3;
    buf.clear();
    buf.reserve(static_cast<std::size_t>((f.extent(a1) + 2 * g) * (f.extent(a2) + 2 * g) * Components<T>::value));
    index_t idx[3];
    idx[axis] = plane;
    for (index_t u = -g; u < f.extent(a1) + g; ++u)
        for (index_t w = -g; w < f.extent(a2) + g; ++w) {
            idx[a1] = u;
            idx[a2] = w;
            const T& v = f(idx[0], idx[1], idx[2]);
            for (int c = 0; c < Components<T>::value; ++c) buf.push_back(Components<T>::get(v, c));
        }
}

template <typename T>
void HaloExchange::unpackPlane(Field<T>& f, int axis, index_t plane, const std::vector<real_t>& buf,
                               bool add) const {
    const index_t g = f.ghosts();
    const int a1 = (axis + 1) % 3;
    const int a2 = (axis + 2) % 3;
    std::size_t pos = 0;
    index_t idx[3];
    idx[axis] = plane;
    for (index_t u = -g; u < f.extent(a1) + g; ++u)
        for (index_t w = -g; w < f.extent(a2) + g; ++w) {
            idx[a1] = u;
            idx[a2] = w;
            T& v = f(idx[0], idx[1], idx[2]);
            for (int c = 0; c < Components<T>::value; ++c) {
                real_t& dst = Components<T>::ref(v, c);
                dst = add ? dst + buf[pos] : buf[pos];
                ++pos;
            }
        }
}

void HaloExchange::sendrecv(std::vector<real_t>& send, int dest, std::vector<real_t>& recv, int source,
                            FaceTag tag) {
#ifdef MINIPIC_HAVE_MPI
    if (comm_.size() > 1) {
        MPI_Sendrecv(send.data(), static_cast<int>(send.size()), mpiReal(), dest < 0 ? MPI_PROC_NULL : dest,
                     tag.tag, recv.data(), static_cast<int>(recv.size()), mpiReal(),
                     source < 0 ? MPI_PROC_NULL : source, tag.tag, comm_.raw(), MPI_STATUS_IGNORE);
        if (dest >= 0) bytesSent_ += send.size() * sizeof(real_t);
        return;
    }
#endif
    (void)tag;
    // Serial fallback: this rank is its own neighbour on both sides, so the
    // "message" is a copy. With a Dirichlet wall there is nobody to talk to.
    if (dest != kNoNeighbor && source != kNoNeighbor) recv = send;
}

template <typename T>
void HaloExchange::exchangeImpl(Field<T>& f) {
    const index_t g = f.ghosts();
    const bool periodic = mesh_.boundary() == BoundaryKind::Periodic;

    // Zero-fill used for Dirichlet walls: phi = 0 just outside the domain.
    auto zeroPlane = [&](int axis, index_t plane) {
        packPlane(f, axis, plane, sendBuf_);
        std::fill(sendBuf_.begin(), sendBuf_.end(), real_t(0));
        unpackPlane(f, axis, plane, sendBuf_, false);
    };

    // x: possibly remote neighbours.
    const index_t nx = f.extent(0);
    for (index_t p = 0; p < g; ++p) {
        // Low interior plane p becomes the left neighbour's high ghost nx + p.
        packPlane(f, 0, p, sendBuf_);
        recvBuf_.resize(sendBuf_.size());
        sendrecv(sendBuf_, hasLowWall_ ? kNoNeighbor : left_, recvBuf_, hasHighWall_ ? kNoNeighbor : right_,
                 makeTag(0, 0));
        if (hasHighWall_)
            zeroPlane(0, nx + p);
        else
            unpackPlane(f, 0, nx + p, recvBuf_, false);

        // High interior plane nx - g + p becomes the right neighbour's low ghost -g + p.
        packPlane(f, 0, nx - g + p, sendBuf_);
        recvBuf_.resize(sendBuf_.size());
        sendrecv(sendBuf_, hasHighWall_ ? kNoNeighbor : right_, recvBuf_, hasLowWall_ ? kNoNeighbor : left_,
                 makeTag(0, 1));
        if (hasLowWall_)
            zeroPlane(0, -g + p);
        else
            unpackPlane(f, 0, -g + p, recvBuf_, false);
    }

    // y and z: always rank-local, wrap or zero.
    for (int axis = 1; axis < 3; ++axis) {
        const index_t n = f.extent(axis);
        for (index_t p = 0; p < g; ++p) {
            if (periodic) {
                packPlane(f, axis, p, sendBuf_);
                unpackPlane(f, axis, n + p, sendBuf_, false);
                packPlane(f, axis, n - g + p, sendBuf_);
                unpackPlane(f, axis, -g + p, sendBuf_, false);
            } else {
                zeroPlane(axis, n + p);
                zeroPlane(axis, -g + p);
            }
        }
    }
}

void HaloExchange::accumulate(ScalarField& f) {
    const index_t g = f.ghosts();
    const bool periodic = mesh_.boundary() == BoundaryKind::Periodic;

    // z then y: fold local ghost planes onto the interior planes they alias.
    // With Dirichlet walls the charge in the ghosts has left the domain.
    for (int axis = 2; axis >= 1; --axis) {
        if (!periodic) break;
        const index_t n = f.extent(axis);
        for (index_t p = 0; p < g; ++p) {
            packPlane(f, axis, n + p, sendBuf_);
            unpackPlane(f, axis, p, sendBuf_, true);
            packPlane(f, axis, -g + p, sendBuf_);
            unpackPlane(f, axis, n - g + p, sendBuf_, true);
        }
    }

    // x: ghost contributions belong to the neighbouring slabs.
    const index_t nx = f.extent(0);
    for (index_t p = 0; p < g; ++p) {
        packPlane(f, 0, nx + p, sendBuf_);
        recvBuf_.resize(sendBuf_.size());
        sendrecv(sendBuf_, hasHighWall_ ? kNoNeighbor : right_, recvBuf_, hasLowWall_ ? kNoNeighbor : left_,
                 makeTag(0, 2));
        if (!hasLowWall_) unpackPlane(f, 0, p, recvBuf_, true);

        packPlane(f, 0, -g + p, sendBuf_);
        recvBuf_.resize(sendBuf_.size());
        sendrecv(sendBuf_, hasLowWall_ ? kNoNeighbor : left_, recvBuf_, hasHighWall_ ? kNoNeighbor : right_,
                 makeTag(0, 3));
        if (!hasHighWall_) unpackPlane(f, 0, nx - g + p, recvBuf_, true);
    }

    f.clearGhosts();
}

std::size_t HaloExchange::migrate(ParticleBunch& bunch) {
    const Vec3 o = mesh_.origin();
    const Vec3 L = mesh_.length();
    const Vec3 lo = mesh_.localLower();
    const Vec3 hi = mesh_.localUpper();
    const bool periodic = mesh_.boundary() == BoundaryKind::Periodic;

    // Maps a coordinate back into [o, o + L); nextafter guards the case where
    // round-off lands exactly on the upper face.
    auto wrap = [](real_t s, real_t origin, real_t length) {
        real_t r = s - length * std::floor((s - origin) / length);
        if (r >= origin + length) r = std::nextafter(origin + length, origin);
        return r;
    };

    std::vector<char> remove(bunch.size(), 0);
    std::vector<real_t> toLeft, toRight;
    std::size_t absorbed = 0;

    for (std::size_t n = 0; n < bunch.size(); ++n) {
        Vec3 x = bunch.position(n);
        // Decide the destination slab before wrapping: a particle leaving
        // rank 0 through x = o wraps to the top of the domain, which is the
        // left neighbour's slab.
        const int dir = x.x < lo.x ? -1 : (x.x >= hi.x ? 1 : 0);

        bool outside = false;
        for (int d = 0; d < kDim; ++d) {
            if (x[d] >= o[d] && x[d] < o[d] + L[d]) continue;
            if (periodic)
                x[d] = wrap(x[d], o[d], L[d]);
            else
                outside = true;
        }
        if (outside) {
            remove[n] = 1;
            ++absorbed;
            continue;
        }
        bunch.setPosition(n, x);

        if (comm_.size() == 1 || dir == 0) continue;
        remove[n] = 1;
        appendParticle(dir < 0 ? toLeft : toRight, bunch, n);
    }
    bunch.removeIf(remove);

    if (comm_.size() > 1) {
        // Two-phase transfer: counts first so receive buffers can be sized.
        auto transfer = [&](std::vector<real_t>& out, int dest, int source, int side) {
            std::vector<real_t> count{static_cast<real_t>(out.size())};
            std::vector<real_t> incoming(1, 0);
            sendrecv(count, dest, incoming, source, makeTag(0, 4 + side));
            std::vector<real_t> in(static_cast<std::size_t>(incoming[0]));
            sendrecv(out, dest, in, source, makeTag(0, 6 + side));
            for (std::size_t r = 0; r + kParticleRecord <= in.size(); r += kParticleRecord) {
                Particle p;
                p.x = Vec3{in[r], in[r + 1], in[r + 2]};
                p.v = Vec3{in[r + 3], in[r + 4], in[r + 5]};
                p.id = static_cast<std::int64_t>(in[r + 6]);
                bunch.push_back(p);
            }
        };
        transfer(toLeft, left_, right_, 0);
        transfer(toRight, right_, left_, 1);
    }
    return absorbed;
}

}  // namespace minipic
