// halo.hpp -- communicator wrapper and ghost-layer (halo) exchange.
//
// The global mesh is split into slabs along x (UniformMesh::slab). Each rank
// exchanges x-faces with its two neighbours; the y and z faces are always
// rank-local and are handled by a periodic wrap (or zero fill for Dirichlet).
// Without MINIPIC_HAVE_MPI a rank is its own left and right neighbour and
// the very same pack/unpack path runs with a buffer copy instead of MPI.
#pragma once

#include <cstdint>
#include <vector>

#ifdef MINIPIC_HAVE_MPI
#include <mpi.h>
#endif

#include "minipic/config.hpp"
#include "minipic/field.hpp"
#include "minipic/mesh.hpp"
#include "minipic/particles.hpp"

namespace minipic {

/// Thin wrapper over MPI_COMM_WORLD with a single-rank serial fallback.
class Communicator {
public:
    Communicator();

    int rank() const { return rank_; }
    int size() const { return size_; }
    bool isRoot() const { return rank_ == 0; }

    /// Global sum of a scalar.
    real_t allreduceSum(real_t local) const;
    /// In-place global sum of @p n values.
    void allreduceSum(real_t* values, std::size_t n) const;
    /// Global maximum of a scalar.
    real_t allreduceMax(real_t local) const;
    std::uint64_t allreduceSum(std::uint64_t local) const;
    void barrier() const;

#ifdef MINIPIC_HAVE_MPI
    MPI_Comm raw() const { return comm_; }
#endif

private:
#ifdef MINIPIC_HAVE_MPI
    MPI_Comm comm_ = MPI_COMM_WORLD;
#endif
    int rank_ = 0;
    int size_ = 1;
};

/// Identifies a face (and message kind) of the local box; the two bytes are
/// read back as one 16-bit MPI tag, which stays below the 32767 tag bound
/// that every MPI implementation must support.
union FaceTag {
    struct {
        std::int8_t axis;  ///< 0, 1 or 2
        std::int8_t side;  ///< message kind: 0/1 fill, 2/3 accumulate, 4..7 migrate
    } face;
    std::int16_t tag;
};

/**
 * Ghost-cell exchange for fields and migration of particles between slabs.
 *
 * Two directions of data flow are supported:
 *  - exchange():   owners -> ghosts. Fills ghost layers with copies of the
 *                  neighbouring interior values; needed before any stencil
 *                  (Laplacian, gradient) or gather.
 *  - accumulate(): ghosts -> owners. Adds ghost-layer contributions produced
 *                  by a scatter onto the nodes that own them, then clears the
 *                  ghosts; needed after depositChargeCIC().
 *
 * Axes are processed in the order x, y, z for exchange() and z, y, x for
 * accumulate(), each pass covering the full (ghost-inclusive) extent of the
 * other axes, so edge and corner ghosts come out right without diagonal
 * messages.
 */
class HaloExchange {
public:
    HaloExchange(const UniformMesh& localMesh, const Communicator& comm);
    ~HaloExchange();

    HaloExchange(const HaloExchange&) = delete;
    HaloExchange& operator=(const HaloExchange&) = delete;

    void exchange(ScalarField& f);
    void exchange(VectorField& f);
    void accumulate(ScalarField& f);

    /// Applies particle boundary conditions and hands particles that left the
    /// local slab in x to the neighbouring rank. Particles crossing a
    /// Dirichlet wall are absorbed. Returns the number of particles lost.
    std::size_t migrate(ParticleBunch& bunch);

    /// Total payload bytes sent so far (for the performance summary).
    std::uint64_t bytesSent() const { return bytesSent_; }

    int leftNeighbor() const { return left_; }
    int rightNeighbor() const { return right_; }

private:
    template <typename T>
    void exchangeImpl(Field<T>& f);

    template <typename T>
    void packPlane(const Field<T>& f, int axis, index_t plane, std::vector<real_t>& buf) const;
    template <typename T>
    void unpackPlane(Field<T>& f, int axis, index_t plane, const std::vector<real_t>& buf, bool add) const;

    /// Sends @p send to @p dest and receives @p recv from @p source.
    void sendrecv(std::vector<real_t>& send, int dest, std::vector<real_t>& recv, int source, FaceTag tag);

    UniformMesh mesh_;
    const Communicator& comm_;
    int left_ = 0;
    int right_ = 0;
    bool hasLowWall_ = false;   ///< Dirichlet wall at this rank's low x face
    bool hasHighWall_ = false;  ///< Dirichlet wall at this rank's high x face
    std::vector<real_t> sendBuf_, recvBuf_;
    std::uint64_t bytesSent_ = 0;
};

}  // namespace minipic
