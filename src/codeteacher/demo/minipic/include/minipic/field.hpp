// field.hpp -- mesh-based field container with ghost layers.
#pragma once

#include <algorithm>
#include <cassert>
#include <utility>
#include <vector>

#include "minipic/config.hpp"
#include "minipic/mesh.hpp"

namespace minipic {

/**
 * @brief A scalar or vector quantity stored on the nodes of a UniformMesh.
 *
 * Storage is a single contiguous array of (n_x + 2g)(n_y + 2g)(n_z + 2g)
 * values in row-major order with z fastest, where g is the ghost width.
 * Indices passed to operator() are *local* node indices; interior nodes run
 * from 0 to n-1 and ghost nodes from -g to -1 and n to n+g-1.
 *
 * Ghost values are filled (or folded back) by HaloExchange; arithmetic
 * operators act on the whole array, ghosts included, which keeps them
 * trivially vectorisable.
 *
 * @tparam T value type, typically real_t (charge density, potential) or Vec3
 *           (electric field).
 */
template <typename T>
class Field {
public:
    using value_type = T;

    Field() = default;
    explicit Field(const UniformMesh& mesh, index_t ghosts = kDefaultGhosts);
    Field(const Field& other) = default;
    Field(Field&& other) noexcept = default;
    Field& operator=(const Field& other) = default;
    Field& operator=(Field&& other) noexcept = default;
    ~Field();

    /// Element access with local (ghost-aware) indices.
    T& operator()(index_t i, index_t j, index_t k);
    const T& operator()(index_t i, index_t j, index_t k) const;

    /// Element access by Index3.
    T& operator[](const Index3& idx) { return (*this)(idx.i, idx.j, idx.k); }
    const T& operator[](const Index3& idx) const { return (*this)(idx.i, idx.j, idx.k); }

    /// Sets every entry, ghosts included, to @p value.
    Field& operator=(const T& value);

    Field& operator+=(const Field& other);
    Field& operator-=(const Field& other);
    Field& operator*=(real_t scale);

    /// this += a * x, the BLAS-1 update used by the CG solver.
    Field& axpy(real_t a, const Field& x);

    /// Zeroes the ghost layers only (interior untouched).
    void clearGhosts();

    /// Sum over interior nodes (local to this rank).
    T sumInterior() const;

    /// Calls f(i, j, k) for every interior node in storage order.
    template <typename F>
    void forEachInterior(F&& f) const;

    MINIPIC_INLINE index_t extent(int d) const { return mesh_.cells(d); }
    MINIPIC_INLINE index_t ghosts() const { return ghosts_; }
    MINIPIC_INLINE const UniformMesh& mesh() const { return mesh_; }
    MINIPIC_INLINE T* data() { return data_.data(); }
    MINIPIC_INLINE const T* data() const { return data_.data(); }
    MINIPIC_INLINE std::size_t size() const { return data_.size(); }

private:
    MINIPIC_INLINE index_t offset(index_t i, index_t j, index_t k) const {
        assert(i >= -ghosts_ && i < mesh_.cells(0) + ghosts_);
        assert(j >= -ghosts_ && j < mesh_.cells(1) + ghosts_);
        assert(k >= -ghosts_ && k < mesh_.cells(2) + ghosts_);
        return ((i + ghosts_) * stride_[0]) + ((j + ghosts_) * stride_[1]) + (k + ghosts_);
    }

    UniformMesh mesh_{};
    index_t ghosts_ = kDefaultGhosts;
    std::array<index_t, 2> stride_{{0, 0}};
    std::vector<T> data_;
};

using ScalarField = Field<real_t>;
using VectorField = Field<Vec3>;

// ---------------------------------------------------------------------------
// Out-of-line member definitions
// ---------------------------------------------------------------------------

template <typename T>
Field<T>::Field(const UniformMesh& mesh, index_t ghosts) : mesh_(mesh), ghosts_(ghosts) {
    const index_t ny = mesh_.cells(1) + 2 * ghosts_;
    const index_t nz = mesh_.cells(2) + 2 * ghosts_;
    const index_t nx = mesh_.cells(0) + 2 * ghosts_;
    stride_[0] = ny * nz;
    stride_[1] = nz;
    data_.assign(static_cast<std::size_t>(nx * ny * nz), T{});
}

template <typename T>
Field<T>::~Field() = default;

template <typename T>
T& Field<T>::operator()(index_t i, index_t j, index_t k) {
    return data_[static_cast<std::size_t>(offset(i, j, k))];
}

template <typename T>
const T& Field<T>::operator()(index_t i, index_t j, index_t k) const {
    return data_[static_cast<std::size_t>(offset(i, j, k))];
}

template <typename T>
Field<T>& Field<T>::operator=(const T& value) {
    std::fill(data_.begin(), data_.end(), value);
    return *this;
}

template <typename T>
Field<T>& Field<T>::operator+=(const Field& other) {
    assert(other.size() == size());
    for (std::size_t n = 0; n < data_.size(); ++n) data_[n] += other.data_[n];
    return *this;
}

template <typename T>
Field<T>& Field<T>::operator-=(const Field& other) {
    assert(other.size() == size());
    for (std::size_t n = 0; n < data_.size(); ++n) data_[n] -= other.data_[n];
    return *this;
}

template <typename T>
Field<T>& Field<T>::operator*=(real_t scale) {
    for (auto& v : data_) v *= scale;
    return *this;
}

template <typename T>
Field<T>& Field<T>::axpy(real_t a, const Field& x) {
    assert(x.size() == size());
    for (std::size_t n = 0; n < data_.size(); ++n) data_[n] += x.data_[n] * a;
    return *this;
}

template <typename T>
void Field<T>::clearGhosts() {
    const index_t g = ghosts_;
    const index_t nx = mesh_.cells(0), ny = mesh_.cells(1), nz = mesh_.cells(2);
    for (index_t i = -g; i < nx + g; ++i)
        for (index_t j = -g; j < ny + g; ++j)
            for (index_t k = -g; k < nz + g; ++k) {
                const bool interior = i >= 0 && i < nx && j >= 0 && j < ny && k >= 0 && k < nz;
                if (!interior) (*this)(i, j, k) = T{};
            }
}

template <typename T>
T Field<T>::sumInterior() const {
    T total{};
    forEachInterior([&](index_t i, index_t j, index_t k) { total += (*this)(i, j, k); });
    return total;
}

template <typename T>
template <typename F>
void Field<T>::forEachInterior(F&& f) const {
    for (index_t i = 0; i < mesh_.cells(0); ++i)
        for (index_t j = 0; j < mesh_.cells(1); ++j)
            for (index_t k = 0; k < mesh_.cells(2); ++k) f(i, j, k);
}

// ---------------------------------------------------------------------------
// Free function templates
// ---------------------------------------------------------------------------

/// Local (per-rank) inner product over interior nodes. Callers reduce the
/// result across ranks with Communicator::allreduceSum.
template <typename T>
real_t dotInterior(const Field<T>& a, const Field<T>& b) {
    real_t sum = 0;
    a.forEachInterior([&](index_t i, index_t j, index_t k) { sum += a(i, j, k) * b(i, j, k); });
    return sum;
}

/// Largest absolute interior value of a scalar field.
template <typename T>
T maxAbsInterior(const Field<T>& f) {
    T m{};
    f.forEachInterior([&](index_t i, index_t j, index_t k) { m = std::max<T>(m, std::abs(f(i, j, k))); });
    return m;
}

/// Number of real components in a field value; used to size halo buffers.
template <typename T>
struct Components;

template <>
struct Components<real_t> {
    static constexpr int value = 1;
    MINIPIC_INLINE static real_t get(const real_t& v, int) { return v; }
    MINIPIC_INLINE static real_t& ref(real_t& v, int) { return v; }
};

template <>
struct Components<Vec3> {
    static constexpr int value = 3;
    MINIPIC_INLINE static real_t get(const Vec3& v, int c) { return v[c]; }
    MINIPIC_INLINE static real_t& ref(Vec3& v, int c) { return v[c]; }
};

}  // namespace minipic
