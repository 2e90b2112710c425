// A plain C ABI over usearch for PRISM, compiled to WASM by wasm/build.sh. Two index kinds:
//
// - flat (exact search; what every memory opens): the vectors as packed row-major f32 rows in
//   blocks of ~4 MB, their keys, and a key→row lookup, scanned in full with usearch's own
//   inner-product kernel (`metric_punned_t`), so scores are the ones `index_dense_t` computes.
//   An add is a copy and a hash insert, and the index holds 4 × dim bytes per vector plus about
//   40 bytes of key and lookup. It used to be an `index_dense_t` with a minimal graph searched with
//   `exact = true`: every add paid a graph insertion (0.5–1 s for the 57K vectors of a 10K-message
//   memory) and the graph and usearch's arenas cost memory a scan never reads (137 MB of WASM
//   memory for 83 MB of vectors, against 100 MB now).
// - hnsw (approximate): usearch's `index_dense_t`.
//
// Metric: inner product over f32 (callers pass L2-normalised vectors, so this is cosine); a score
// is 1 − usearch's distance, for both kinds. Hits rank by score, ties to the smaller key
// (`compareHits` in src/vector/validate.ts); the flat scan applies that rule when it picks the
// top k too, so which of several tied keys make the cut does not depend on insertion order.
// Keys cross the boundary as f64 so JS numbers (safe integers) need no BigInt.
// Every function reports failure through a status code and `prism_last_error()`; nothing throws.
//
// Serialized layout (little-endian): a 32-byte PRISM header, then the kind's payload.
//   0  magic "PRSMVIDX"      8  format version (u32)   12 kind (u32: 0 flat, 1 hnsw)
//   16 dimensions (u32)      20 CRC-32 of the payload (u32)   24 payload length (u64)
// flat payload (version 2): row count n (u64), n keys (u64), n × dimensions floats (f32), row-major.
// hnsw payload (version 1): usearch's own `index_dense_t` stream.
// Version-1 flat bytes (usearch's graph stream) are rejected as CORRUPT_CHECKPOINT: PRISM never
// stores index bytes (a memory rebuilds its indexes from its records on open), so none exist on disk.
// The CRC lets a truncated or bit-flipped checkpoint fail loudly instead of returning wrong neighbours.

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include <emscripten/emscripten.h>
#include <usearch/index_dense.hpp>

using namespace unum::usearch;

namespace {

enum status_t : std::int32_t {
    status_ok = 0,
    status_invalid = 1,
    status_out_of_memory = 2,
    status_corrupt = 3,
};

enum kind_t : std::uint32_t { kind_flat = 0, kind_hnsw = 1 };

constexpr char header_magic[8] = {'P', 'R', 'S', 'M', 'V', 'I', 'D', 'X'};
constexpr std::size_t header_bytes = 32;
constexpr std::uint32_t flat_format_version = 2;
constexpr std::uint32_t hnsw_format_version = 1;

std::uint32_t format_version(kind_t kind) { return kind == kind_flat ? flat_format_version : hnsw_format_version; }

// The largest key JS can pass exactly (Number.MAX_SAFE_INTEGER); a stored key above it is corrupt.
constexpr default_key_t max_key = (default_key_t(1) << 53) - 1;

// WASM runs single-threaded here: one add context and one search context.
constexpr std::size_t wasm_threads = 1;

std::string last_error;

std::int32_t fail(status_t status, char const* message) {
    last_error = message;
    return status;
}

std::uint32_t crc32(std::uint8_t const* bytes, std::size_t length) {
    static std::uint32_t table[256];
    static bool table_ready = false;
    if (!table_ready) {
        for (std::uint32_t i = 0; i != 256; ++i) {
            std::uint32_t c = i;
            for (int bit = 0; bit != 8; ++bit)
                c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
        table_ready = true;
    }
    std::uint32_t crc = 0xFFFFFFFFu;
    for (std::size_t i = 0; i != length; ++i)
        crc = table[(crc ^ bytes[i]) & 0xFF] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
}

template <typename value_at> void write_le(std::uint8_t* out, value_at value) { std::memcpy(out, &value, sizeof(value)); }
template <typename value_at> value_at read_le(std::uint8_t const* in) {
    value_at value;
    std::memcpy(&value, in, sizeof(value));
    return value;
}

metric_punned_t inner_product(std::size_t dimensions) {
    return metric_punned_t(dimensions, metric_kind_t::ip_k, scalar_kind_t::f32_k);
}

// The score both kinds report for a usearch distance.
float score_of(distance_punned_t distance) { return 1.0f - static_cast<float>(distance); }

/// What the C functions call; one implementation per kind.
class prism_index_t {
  public:
    virtual ~prism_index_t() = default;
    virtual kind_t kind() const = 0;
    virtual std::size_t size() const = 0;
    virtual std::size_t dimensions() const = 0;
    /// Makes room for `extra` more vectors; false when memory is exhausted.
    virtual bool reserve(std::size_t extra) = 0;
    /// All or nothing; returns a status and sets `last_error` on failure.
    virtual std::int32_t add(double const* keys, float const* vectors, std::size_t count) = 0;
    /// How many of the keys were present and removed, or a negative status.
    virtual std::int32_t remove(double const* keys, std::size_t count) = 0;
    /// Up to `k` hits, best first, written at out_keys/out_scores; `found` gets their count.
    virtual std::int32_t search(float const* queries, std::size_t count, std::size_t k, double* out_keys,
                                float* out_scores, std::uint32_t* out_found) const = 0;
    virtual std::size_t payload_length() const = 0;
    /// Writes exactly `payload_length()` bytes; false when that fails.
    virtual bool write_payload(std::uint8_t* out) const = 0;
};

/// The exact kind: row r holds the vector of `keys_[r]`. Rows stay packed (a removed row is filled
/// by the last one) in row-major blocks of `rows_per_block_` rows (~4 MB), so a search streams a few
/// large contiguous runs. Growth allocates one more block and never moves a row: a single matrix
/// grown by doubling copies itself on every growth, and because WASM memory never shrinks, that
/// copy's high-water mark stays resident (185 MB of WASM memory for 83 MB of vectors, measured).
/// Only the first block grows by doubling, up to one block, so a small index stays small.
class flat_index_t final : public prism_index_t {
    struct key_and_row_t {
        default_key_t key;
        /// Payload, not part of the hash: updated in place when the row moves.
        mutable std::uint32_t row;
    };
    struct key_hash_t {
        std::size_t operator()(default_key_t key) const noexcept { return hash_gt<default_key_t>{}(key); }
        std::size_t operator()(key_and_row_t const& entry) const noexcept { return (*this)(entry.key); }
    };
    struct key_same_t {
        bool operator()(key_and_row_t const& a, default_key_t b) const noexcept { return a.key == b; }
        bool operator()(key_and_row_t const& a, key_and_row_t const& b) const noexcept { return a.key == b.key; }
    };
    /// One candidate of the top-k scan.
    struct hit_t {
        float score;
        default_key_t key;
    };
    /// The shared ranking: higher score first, ties to the smaller key.
    static bool better(hit_t const& a, hit_t const& b) noexcept {
        return a.score > b.score || (a.score == b.score && a.key < b.key);
    }

    static constexpr std::size_t block_bytes = 4u << 20;
    static constexpr std::size_t first_block_rows = 64;

    metric_punned_t metric_;
    std::size_t dimensions_;
    std::size_t rows_per_block_;
    float** blocks_ = nullptr;
    std::size_t block_count_ = 0;
    std::size_t block_slots_ = 0;
    /// Rows the blocks hold room for.
    std::size_t capacity_ = 0;
    default_key_t* keys_ = nullptr;
    std::size_t key_capacity_ = 0;
    std::size_t size_ = 0;
    flat_hash_multi_set_gt<key_and_row_t, key_hash_t, key_same_t> row_of_;

    std::size_t row_bytes() const { return dimensions_ * sizeof(float); }
    float* row(std::size_t r) const { return blocks_[r / rows_per_block_] + (r % rows_per_block_) * dimensions_; }
    /// Blocks that hold vectors, and how many rows of block b do.
    std::size_t used_blocks() const { return size_ == 0 ? 0 : (size_ - 1) / rows_per_block_ + 1; }
    std::size_t rows_in_block(std::size_t b) const { return std::min(rows_per_block_, size_ - b * rows_per_block_); }

    /// `realloc` for `count` elements of `element_at`: null on overflow or exhaustion, when the old
    /// block stays valid, so a failed growth leaves the index as it was.
    template <typename element_at> static element_at* grow(element_at* old, std::size_t count) {
        checked_size_result_t bytes = checked_mul(count, sizeof(element_at));
        return bytes ? static_cast<element_at*>(std::realloc(old, bytes.value)) : nullptr;
    }

    bool reserve_keys(std::size_t needed) {
        if (needed <= key_capacity_)
            return true;
        std::size_t const capacity = std::max(needed, key_capacity_ * 2);
        default_key_t* keys = grow(keys_, capacity);
        if (!keys)
            return false;
        keys_ = keys;
        key_capacity_ = capacity;
        return true;
    }

    bool reserve_rows(std::size_t needed) {
        while (capacity_ < needed) {
            if (block_count_ == 1 && capacity_ < rows_per_block_) {
                std::size_t const rows = std::min(rows_per_block_, std::max(needed, capacity_ * 2));
                float* block = grow(blocks_[0], rows * dimensions_);
                if (!block)
                    return false;
                blocks_[0] = block;
                capacity_ = rows;
                continue;
            }
            if (block_count_ == block_slots_) {
                std::size_t const slots = std::max<std::size_t>(4, block_slots_ * 2);
                float** table = grow(blocks_, slots);
                if (!table)
                    return false;
                blocks_ = table;
                block_slots_ = slots;
            }
            std::size_t const rows =
                block_count_ == 0 ? std::min(rows_per_block_, std::max(needed, first_block_rows)) : rows_per_block_;
            float* block = grow(static_cast<float*>(nullptr), rows * dimensions_);
            if (!block)
                return false;
            blocks_[block_count_++] = block;
            capacity_ = (block_count_ - 1) * rows_per_block_ + rows;
        }
        return true;
    }

    /// Undoes the lookup entries of the first `count` rows appended after `size_` (rows need nothing).
    void forget_appended(std::size_t count) {
        key_and_row_t popped;
        for (std::size_t i = 0; i != count; ++i)
            row_of_.pop_first(keys_[size_ + i], popped);
    }

    /// Writes one row after the `appended` rows already written past `size_` (room is reserved);
    /// status_invalid when its key is already present, status_out_of_memory when the lookup cannot grow.
    std::int32_t append(std::size_t appended, default_key_t key, void const* vector) {
        std::size_t const r = size_ + appended;
        if (row_of_.contains(key))
            return status_invalid;
        if (!row_of_.try_emplace(key_and_row_t{key, static_cast<std::uint32_t>(r)}))
            return status_out_of_memory;
        keys_[r] = key;
        std::memcpy(row(r), vector, row_bytes());
        return status_ok;
    }

  public:
    explicit flat_index_t(std::size_t dimensions)
        : metric_(inner_product(dimensions)), dimensions_(dimensions),
          rows_per_block_(std::max<std::size_t>(1, block_bytes / (dimensions * sizeof(float)))) {}
    ~flat_index_t() override {
        for (std::size_t b = 0; b != block_count_; ++b)
            std::free(blocks_[b]);
        std::free(blocks_);
        std::free(keys_);
    }
    flat_index_t(flat_index_t const&) = delete;
    flat_index_t& operator=(flat_index_t const&) = delete;

    kind_t kind() const override { return kind_flat; }
    std::size_t size() const override { return size_; }
    std::size_t dimensions() const override { return dimensions_; }

    bool reserve(std::size_t extra) override {
        checked_size_result_t needed = checked_add(size_, extra);
        return needed && reserve_keys(needed.value) && reserve_rows(needed.value) &&
               (needed.value <= row_of_.capacity() || row_of_.try_reserve(needed.value));
    }

    std::int32_t add(double const* keys, float const* vectors, std::size_t count) override {
        if (!reserve(count))
            return fail(status_out_of_memory, "cannot reserve memory for the new vectors");
        for (std::size_t i = 0; i != count; ++i) {
            std::int32_t const status = append(i, static_cast<default_key_t>(keys[i]), vectors + i * dimensions_);
            if (status != status_ok) {
                forget_appended(i);
                return fail(static_cast<status_t>(status), status == status_invalid ? "a key is already in the index"
                                                                                    : "cannot grow the key lookup");
            }
        }
        size_ += count;
        return status_ok;
    }

    std::int32_t remove(double const* keys, std::size_t count) override {
        std::int32_t removed = 0;
        key_and_row_t gone;
        for (std::size_t i = 0; i != count; ++i) {
            if (!row_of_.pop_first(static_cast<default_key_t>(keys[i]), gone))
                continue;
            std::size_t const last = --size_;
            if (gone.row != last) {
                std::memcpy(row(gone.row), row(last), row_bytes());
                keys_[gone.row] = keys_[last];
                row_of_.find(keys_[last])->row = gone.row;
            }
            ++removed;
        }
        return removed;
    }

    /// Scores every row with usearch's kernel, keeping the k best in a bounded heap whose front is
    /// the worst of them; then sorts them best first.
    std::int32_t search(float const* queries, std::size_t count, std::size_t k, double* out_keys, float* out_scores,
                        std::uint32_t* out_found) const override {
        std::size_t const wanted = std::min(k, size_);
        hit_t* const top = grow(static_cast<hit_t*>(nullptr), std::max<std::size_t>(wanted, 1));
        if (!top)
            return fail(status_out_of_memory, "cannot allocate the search buffer");
        for (std::size_t q = 0; q != count; ++q) {
            byte_t const* query = reinterpret_cast<byte_t const*>(queries + q * dimensions_);
            std::size_t held = 0;
            for (std::size_t b = 0, blocks = used_blocks(); b != blocks; ++b) {
                float const* vector = blocks_[b];
                default_key_t const* key = keys_ + b * rows_per_block_;
                for (std::size_t i = 0, rows = rows_in_block(b); i != rows; ++i, vector += dimensions_) {
                    hit_t const hit{score_of(metric_(reinterpret_cast<byte_t const*>(vector), query)), key[i]};
                    if (held < wanted) {
                        top[held++] = hit;
                        std::push_heap(top, top + held, better);
                    } else if (better(hit, top[0])) {
                        std::pop_heap(top, top + held, better);
                        top[held - 1] = hit;
                        std::push_heap(top, top + held, better);
                    }
                }
            }
            std::sort_heap(top, top + held, better);
            for (std::size_t i = 0; i != held; ++i) {
                out_keys[q * k + i] = static_cast<double>(top[i].key);
                out_scores[q * k + i] = top[i].score;
            }
            out_found[q] = static_cast<std::uint32_t>(held);
        }
        std::free(top);
        return status_ok;
    }

    std::size_t payload_length() const override {
        return sizeof(std::uint64_t) + size_ * (sizeof(default_key_t) + row_bytes());
    }

    bool write_payload(std::uint8_t* out) const override {
        write_le<std::uint64_t>(out, size_);
        out += sizeof(std::uint64_t);
        std::memcpy(out, keys_, size_ * sizeof(default_key_t));
        out += size_ * sizeof(default_key_t);
        for (std::size_t b = 0, blocks = used_blocks(); b != blocks; ++b) {
            std::memcpy(out, blocks_[b], rows_in_block(b) * row_bytes());
            out += rows_in_block(b) * row_bytes();
        }
        return true;
    }

    /// Fills an empty index from a version-2 payload; a status other than ok means the bytes are bad.
    std::int32_t read_payload(std::uint8_t const* payload, std::size_t length) {
        std::size_t const per_row = sizeof(default_key_t) + row_bytes();
        if (length < sizeof(std::uint64_t))
            return fail(status_corrupt, "flat index payload is truncated");
        std::uint64_t const rows = read_le<std::uint64_t>(payload);
        if (rows > (length - sizeof(std::uint64_t)) / per_row || sizeof(std::uint64_t) + rows * per_row != length)
            return fail(status_corrupt, "flat index row count does not match its length");
        if (!reserve(rows))
            return fail(status_out_of_memory, "cannot reserve memory for the stored vectors");
        std::uint8_t const* stored_keys = payload + sizeof(std::uint64_t);
        std::uint8_t const* stored_rows = stored_keys + rows * sizeof(default_key_t);
        for (std::size_t r = 0; r != rows; ++r) {
            default_key_t const key = read_le<default_key_t>(stored_keys + r * sizeof(default_key_t));
            std::int32_t const status = key > max_key ? status_invalid : append(r, key, stored_rows + r * row_bytes());
            if (status == status_out_of_memory)
                return fail(status_out_of_memory, "cannot grow the key lookup");
            if (status != status_ok)
                return fail(status_corrupt, "flat index keys are out of range or repeated");
        }
        size_ = rows;
        return status_ok;
    }
};

/// The approximate kind: usearch's HNSW `index_dense_t`.
class hnsw_index_t final : public prism_index_t {
    index_dense_t index_;

  public:
    explicit hnsw_index_t(index_dense_t index) : index_(std::move(index)) {}

    kind_t kind() const override { return kind_hnsw; }
    std::size_t size() const override { return index_.size(); }
    std::size_t dimensions() const override { return index_.dimensions(); }

    bool reserve(std::size_t extra) override {
        std::size_t const needed = index_.size() + extra;
        return needed <= index_.capacity() || index_.try_reserve(index_limits_t(ceil2(needed), wasm_threads));
    }

    // The caller has already rejected duplicates inside the batch.
    std::int32_t add(double const* keys, float const* vectors, std::size_t count) override {
        for (std::size_t i = 0; i != count; ++i)
            if (index_.contains(static_cast<default_key_t>(keys[i])))
                return fail(status_invalid, "a key is already in the index");
        if (!reserve(count))
            return fail(status_out_of_memory, "cannot reserve memory for the new vectors");
        std::size_t const dims = index_.dimensions();
        for (std::size_t i = 0; i != count; ++i) {
            index_dense_t::add_result_t added = index_.add(static_cast<default_key_t>(keys[i]), vectors + i * dims);
            if (!added) {
                std::string message = added.error.release();
                for (std::size_t j = 0; j != i; ++j)
                    index_.remove(static_cast<default_key_t>(keys[j])).error.release();
                last_error = message;
                return status_out_of_memory;
            }
        }
        return status_ok;
    }

    std::int32_t remove(double const* keys, std::size_t count) override {
        std::int32_t removed = 0;
        for (std::size_t i = 0; i != count; ++i) {
            index_dense_t::labeling_result_t result = index_.remove(static_cast<default_key_t>(keys[i]));
            if (!result)
                return -fail(status_out_of_memory, result.error.release());
            removed += static_cast<std::int32_t>(result.completed);
        }
        return removed;
    }

    std::int32_t search(float const* queries, std::size_t count, std::size_t k, double* out_keys, float* out_scores,
                        std::uint32_t* out_found) const override {
        std::size_t const dims = index_.dimensions();
        for (std::size_t q = 0; q != count; ++q) {
            index_dense_t::search_result_t result = index_.search(queries + q * dims, k);
            if (!result)
                return fail(status_out_of_memory, result.error.release());
            std::size_t const found = result.size();
            for (std::size_t i = 0; i != found; ++i) {
                auto match = result[i];
                out_keys[q * k + i] = static_cast<double>(match.member.key);
                out_scores[q * k + i] = score_of(match.distance);
            }
            out_found[q] = static_cast<std::uint32_t>(found);
        }
        return status_ok;
    }

    std::size_t payload_length() const override { return index_.serialized_length(); }

    bool write_payload(std::uint8_t* out) const override {
        std::uint8_t* cursor = out;
        std::uint8_t* const end = out + index_.serialized_length();
        serialization_result_t saved = index_.save_to_stream([&](void const* data, std::size_t bytes) {
            if (static_cast<std::size_t>(end - cursor) < bytes)
                return false;
            std::memcpy(cursor, data, bytes);
            cursor += bytes;
            return true;
        });
        if (!saved)
            fail(status_out_of_memory, saved.error.release());
        return static_cast<bool>(saved);
    }
};

index_dense_t::state_result_t make_dense(std::size_t dimensions, index_dense_config_t const& config) {
    return index_dense_t::make(inner_product(dimensions), config, default_free_value<default_key_t>(),
                               index_limits_t(0, wasm_threads));
}

prism_index_t* load_flat(std::size_t dimensions, std::uint8_t const* payload, std::size_t length) {
    flat_index_t* index = new flat_index_t(dimensions);
    if (index->read_payload(payload, length) != status_ok) {
        delete index;
        return nullptr;
    }
    return index;
}

prism_index_t* load_hnsw(std::size_t dimensions, std::uint8_t const* payload, std::size_t length) {
    // usearch trusts its own matrix header; check it against the payload before it allocates rows.
    std::uint64_t const vector_bytes = std::uint64_t(dimensions) * sizeof(float);
    if (length < 8 || read_le<std::uint32_t>(payload + 4) != vector_bytes ||
        std::uint64_t(read_le<std::uint32_t>(payload)) * vector_bytes > length) {
        fail(status_corrupt, "index matrix header does not match its dimensions");
        return nullptr;
    }
    index_dense_t::state_result_t made = make_dense(dimensions, index_dense_config_t{});
    if (!made) {
        fail(status_out_of_memory, made.error.release());
        return nullptr;
    }
    std::size_t offset = 0;
    serialization_result_t loaded = made.index.load_from_stream([&](void* data, std::size_t wanted) {
        if (!data || length - offset < wanted)
            return false;
        std::memcpy(data, payload + offset, wanted);
        offset += wanted;
        return true;
    });
    if (!loaded) {
        fail(status_corrupt, loaded.error.release());
        return nullptr;
    }
    if (offset != length || made.index.dimensions() != dimensions || made.index.metric_kind() != metric_kind_t::ip_k ||
        made.index.scalar_kind() != scalar_kind_t::f32_k) {
        fail(status_corrupt, "index payload does not match its header");
        return nullptr;
    }
    return new hnsw_index_t(std::move(made.index));
}

} // namespace

extern "C" {

EMSCRIPTEN_KEEPALIVE char const* prism_last_error() { return last_error.c_str(); }

EMSCRIPTEN_KEEPALIVE prism_index_t* prism_index_create(std::uint32_t dimensions, std::uint32_t kind,
                                                       std::uint32_t connectivity, std::uint32_t expansion_add,
                                                       std::uint32_t expansion_search) {
    if (dimensions == 0 || (kind != kind_flat && kind != kind_hnsw)) {
        fail(status_invalid, "dimensions must be positive and kind flat or hnsw");
        return nullptr;
    }
    if (kind == kind_flat)
        return new flat_index_t(dimensions);
    index_dense_config_t config;
    config.connectivity = connectivity;
    config.expansion_add = expansion_add;
    config.expansion_search = expansion_search;
    index_dense_t::state_result_t made = make_dense(dimensions, config);
    if (!made) {
        fail(status_invalid, made.error.release());
        return nullptr;
    }
    return new hnsw_index_t(std::move(made.index));
}

EMSCRIPTEN_KEEPALIVE void prism_index_destroy(prism_index_t* handle) { delete handle; }

EMSCRIPTEN_KEEPALIVE std::uint32_t prism_index_size(prism_index_t const* handle) {
    return static_cast<std::uint32_t>(handle->size());
}
EMSCRIPTEN_KEEPALIVE std::uint32_t prism_index_dimensions(prism_index_t const* handle) {
    return static_cast<std::uint32_t>(handle->dimensions());
}
EMSCRIPTEN_KEEPALIVE std::uint32_t prism_index_kind(prism_index_t const* handle) { return handle->kind(); }

// Lets the caller add one large batch in chunks without reallocating between them.
EMSCRIPTEN_KEEPALIVE std::int32_t prism_index_reserve(prism_index_t* handle, std::uint32_t extra) {
    return handle->reserve(extra) ? status_ok : fail(status_out_of_memory, "cannot reserve memory for the new vectors");
}

// All-or-nothing: a key already present fails the whole batch and leaves the index as it was.
EMSCRIPTEN_KEEPALIVE std::int32_t prism_index_add(prism_index_t* handle, double const* keys, float const* vectors,
                                                  std::uint32_t count) {
    return handle->add(keys, vectors, count);
}

// Returns how many keys were present and removed, or a negative status.
EMSCRIPTEN_KEEPALIVE std::int32_t prism_index_remove(prism_index_t* handle, double const* keys, std::uint32_t count) {
    return handle->remove(keys, count);
}

// For each of `count` query rows writes up to `k` hits (best first) at row offset q*k and the hit count.
EMSCRIPTEN_KEEPALIVE std::int32_t prism_index_search(prism_index_t const* handle, float const* queries,
                                                     std::uint32_t count, std::uint32_t k, double* out_keys,
                                                     float* out_scores, std::uint32_t* out_found) {
    return handle->search(queries, count, k, out_keys, out_scores, out_found);
}

EMSCRIPTEN_KEEPALIVE double prism_index_serialized_length(prism_index_t const* handle) {
    return static_cast<double>(header_bytes + handle->payload_length());
}

EMSCRIPTEN_KEEPALIVE std::int32_t prism_index_serialize(prism_index_t const* handle, std::uint8_t* out,
                                                        std::size_t length) {
    std::size_t const payload_length = handle->payload_length();
    if (length != header_bytes + payload_length)
        return fail(status_invalid, "output buffer has the wrong length");
    if (!handle->write_payload(out + header_bytes))
        return status_out_of_memory;
    std::memcpy(out, header_magic, sizeof(header_magic));
    write_le<std::uint32_t>(out + 8, format_version(handle->kind()));
    write_le<std::uint32_t>(out + 12, handle->kind());
    write_le<std::uint32_t>(out + 16, static_cast<std::uint32_t>(handle->dimensions()));
    write_le<std::uint32_t>(out + 20, crc32(out + header_bytes, payload_length));
    write_le<std::uint64_t>(out + 24, payload_length);
    return status_ok;
}

// Returns a new index, or null with `prism_last_error()` set (every failure here means corrupt bytes
// except allocation failure, which the JS side cannot tell apart and reports as corrupt too).
EMSCRIPTEN_KEEPALIVE prism_index_t* prism_index_load(std::uint8_t const* bytes, std::size_t length) {
    if (length < header_bytes || std::memcmp(bytes, header_magic, sizeof(header_magic)) != 0) {
        fail(status_corrupt, "not a PRISM vector index (bad magic)");
        return nullptr;
    }
    std::uint32_t const version = read_le<std::uint32_t>(bytes + 8);
    std::uint32_t const kind = read_le<std::uint32_t>(bytes + 12);
    std::uint32_t const dimensions = read_le<std::uint32_t>(bytes + 16);
    std::uint32_t const crc = read_le<std::uint32_t>(bytes + 20);
    std::uint64_t const payload_length = read_le<std::uint64_t>(bytes + 24);
    if ((kind != kind_flat && kind != kind_hnsw) || version != format_version(static_cast<kind_t>(kind)) ||
        dimensions == 0) {
        fail(status_corrupt, "unsupported index header");
        return nullptr;
    }
    if (payload_length != length - header_bytes) {
        fail(status_corrupt, "index bytes are truncated or padded");
        return nullptr;
    }
    std::uint8_t const* payload = bytes + header_bytes;
    if (crc32(payload, payload_length) != crc) {
        fail(status_corrupt, "index checksum mismatch");
        return nullptr;
    }
    return kind == kind_flat ? load_flat(dimensions, payload, payload_length)
                             : load_hnsw(dimensions, payload, payload_length);
}

} // extern "C"
