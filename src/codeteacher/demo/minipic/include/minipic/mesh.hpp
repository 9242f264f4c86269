// mesh.hpp -- uniform Cartesian mesh, boundary kinds and slab decomposition.
#pragma once

#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

#include "minipic/config.hpp"

namespace minipic {

/// Boundary condition applied on every face of the global domain.
///
/// Periodic boundaries wrap particles and fields around the box and are what
/// the Landau-damping benchmark uses. Dirichlet boundaries pin the potential
/// to zero just outside the domain and absorb particles that leave it.
enum class BoundaryKind : int {
    Periodic = 0,
    Dirichlet = 1,
};

MINIPIC_INLINE const char* toString(BoundaryKind kind) {
    switch (kind) {
        case BoundaryKind::Periodic:
            return "periodic";
        case BoundaryKind::Dirichlet:
            return "dirichlet";
    }
    return "unknown";
}

/// Parses "periodic" or "dirichlet" (as given on the command line).
inline BoundaryKind boundaryFromString(const std::string& s) {
    if (s == "periodic") return BoundaryKind::Periodic;
    if (s == "dirichlet") return BoundaryKind::Dirichlet;
    throw std::invalid_argument("unknown boundary kind: " + s);
}

/// Integer triple addressing a mesh node.
struct Index3 {
    index_t i = 0;
    index_t j = 0;
    index_t k = 0;
};

/**
 * A uniform, node-centred Cartesian mesh.
 *
 * Field values live on the nodes x_i = origin + (offset + i) * h, i = 0..n-1.
 * For periodic boundaries node n coincides with node 0 of the next period, so
 * a domain of length L holds exactly n = L / h distinct nodes per axis.
 *
 * The same class describes both the global mesh and the local slab owned by
 * one MPI rank: slab() returns a copy whose x-extent is a contiguous subset of
 * the global nodes, with offset() giving the global index of local node 0.
 */
class UniformMesh {
public:
    UniformMesh() = default;

    /// Builds a global mesh of @p cells nodes per axis covering
    /// [origin, origin + length).
    UniformMesh(std::array<index_t, 3> cells, Vec3 origin, Vec3 length,
                BoundaryKind boundary = BoundaryKind::Periodic);

    /// Number of local nodes along axis @p d.
    MINIPIC_INLINE index_t cells(int d) const { return cells_[d]; }
    MINIPIC_INLINE const std::array<index_t, 3>& cells() const { return cells_; }

    /// Number of global nodes along axis @p d.
    MINIPIC_INLINE index_t globalCells(int d) const { return globalCells_[d]; }

    /// Total number of local nodes.
    MINIPIC_INLINE index_t numCells() const { return cells_[0] * cells_[1] * cells_[2]; }

    MINIPIC_INLINE real_t spacing(int d) const { return spacing_[d]; }
    MINIPIC_INLINE const Vec3& spacing() const { return spacing_; }
    MINIPIC_INLINE const Vec3& origin() const { return origin_; }
    MINIPIC_INLINE const Vec3& length() const { return length_; }
    MINIPIC_INLINE real_t length(int d) const { return length_[d]; }
    MINIPIC_INLINE real_t cellVolume() const { return spacing_.x * spacing_.y * spacing_.z; }
    MINIPIC_INLINE BoundaryKind boundary() const { return boundary_; }

    /// Global index of local node 0 along axis @p d (non-zero only in x).
    MINIPIC_INLINE index_t offset(int d) const { return offset_[d]; }

    /// Lower corner of the region owned by this (local) mesh.
    MINIPIC_INLINE Vec3 localLower() const {
        return Vec3{origin_.x + offset_[0] * spacing_.x, origin_.y + offset_[1] * spacing_.y,
                    origin_.z + offset_[2] * spacing_.z};
    }

    /// Upper corner (exclusive) of the region owned by this mesh.
    MINIPIC_INLINE Vec3 localUpper() const {
        Vec3 lo = localLower();
        return Vec3{lo.x + cells_[0] * spacing_.x, lo.y + cells_[1] * spacing_.y,
                    lo.z + cells_[2] * spacing_.z};
    }

    /// Physical position of local node (i, j, k).
    MINIPIC_INLINE Vec3 nodePosition(index_t i, index_t j, index_t k) const {
        return Vec3{origin_.x + (offset_[0] + i) * spacing_.x,
                    origin_.y + (offset_[1] + j) * spacing_.y,
                    origin_.z + (offset_[2] + k) * spacing_.z};
    }

    /// Row-major linear index of an interior node (k fastest).
    MINIPIC_INLINE index_t linearIndex(index_t i, index_t j, index_t k) const {
        return (i * cells_[1] + j) * cells_[2] + k;
    }

    /// Inverse of linearIndex().
    MINIPIC_INLINE Index3 unflatten(index_t idx) const {
        Index3 r;
        r.k = idx % cells_[2];
        idx /= cells_[2];
        r.j = idx % cells_[1];
        r.i = idx / cells_[1];
        return r;
    }

    /// Position in units of the spacing, relative to local node 0.
    /// Cloud-in-cell interpolation takes floor() of this as the lower node.
    MINIPIC_INLINE Vec3 toLogical(const Vec3& x) const {
        return Vec3{(x.x - origin_.x) / spacing_.x - static_cast<real_t>(offset_[0]),
                    (x.y - origin_.y) / spacing_.y - static_cast<real_t>(offset_[1]),
                    (x.z - origin_.z) / spacing_.z - static_cast<real_t>(offset_[2])};
    }

    /// True if @p x lies inside the region owned by this mesh.
    bool contains(const Vec3& x) const;

    /// Returns the x-slab of this mesh owned by @p rank out of @p nranks.
    /// Remainder nodes go to the lowest ranks.
    UniformMesh slab(int rank, int nranks) const;

private:
    std::array<index_t, 3> cells_{{0, 0, 0}};
    std::array<index_t, 3> globalCells_{{0, 0, 0}};
    std::array<index_t, 3> offset_{{0, 0, 0}};
    Vec3 origin_{};
    Vec3 length_{};
    Vec3 spacing_{};
    BoundaryKind boundary_ = BoundaryKind::Periodic;
};

inline UniformMesh::UniformMesh(std::array<index_t, 3> cells, Vec3 origin, Vec3 length,
                                BoundaryKind boundary)
    : cells_(cells), globalCells_(cells), origin_(origin), length_(length), boundary_(boundary) {
    for (int d = 0; d < kDim; ++d) {
        if (cells_[d] < 2) throw std::invalid_argument("UniformMesh: need at least 2 nodes per axis");
        if (!(length_[d] > 0)) throw std::invalid_argument("UniformMesh: domain length must be positive");
        spacing_[d] = length_[d] / static_cast<real_t>(cells_[d]);
    }
}

inline bool UniformMesh::contains(const Vec3& x) const {
    const Vec3 lo = localLower();
    const Vec3 hi = localUpper();
    return x.x >= lo.x && x.x < hi.x && x.y >= lo.y && x.y < hi.y && x.z >= lo.z && x.z < hi.z;
}

inline UniformMesh UniformMesh::slab(int rank, int nranks) const {
    if (nranks < 1 || rank < 0 || rank >= nranks) throw std::invalid_argument("UniformMesh::slab: bad rank");
    if (globalCells_[0] < nranks) throw std::invalid_argument("UniformMesh::slab: more ranks than x nodes");
    UniformMesh local(*this);
    const index_t base = globalCells_[0] / nranks;
    const index_t extra = globalCells_[0] % nranks;
    local.cells_[0] = base + (rank < extra ? 1 : 0);
    local.offset_[0] = rank * base + (rank < extra ? rank : extra);
    return local;
}

}  // namespace minipic
