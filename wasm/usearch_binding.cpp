// A plain C ABI over usearch's `index_dense_t` for PRISM, compiled to WASM by wasm/build.sh.
//
// Metric: inner product over f32 (callers pass L2-normalised vectors, so this is cosine).
// Keys cross the boundary as f64 so JS numbers (safe integers) need no BigInt.
// Every function reports failure through a status code and `prism_last_error()`; nothing throws.
//
// Serialized layout (little-endian): a 32-byte PRISM header, then usearch's own stream.
//   0  magic "PRSMVIDX"      8  format version (u32)   12 kind (u32: 0 flat, 1 hnsw)
//   16 dimensions (u32)      20 CRC-32 of the payload (u32)   24 payload length (u64)
// The CRC lets a truncated or bit-flipped checkpoint fail loudly instead of returning wrong neighbours.

#include <cstdint>
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

struct prism_index_t {
    index_dense_t index;
    kind_t kind;
};

constexpr char header_magic[8] = {'P', 'R', 'S', 'M', 'V', 'I', 'D', 'X'};
constexpr std::uint32_t header_version = 1;
constexpr std::size_t header_bytes = 32;

// Flat search never walks the graph, so a flat index builds the cheapest graph usearch allows.
constexpr std::size_t flat_connectivity = 2;
constexpr std::size_t flat_expansion_add = 1;

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

bool ensure_capacity(index_dense_t& index, std::size_t extra) {
    std::size_t needed = index.size() + extra;
    if (needed <= index.capacity())
        return true;
    return index.try_reserve(index_limits_t(ceil2(needed), wasm_threads));
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
    index_dense_config_t config;
    if (kind == kind_flat) {
        config.connectivity = flat_connectivity;
        config.expansion_add = flat_expansion_add;
    } else {
        config.connectivity = connectivity;
        config.expansion_add = expansion_add;
        config.expansion_search = expansion_search;
    }
    metric_punned_t metric(dimensions, metric_kind_t::ip_k, scalar_kind_t::f32_k);
    index_dense_t::state_result_t made =
        index_dense_t::make(metric, config, default_free_value<default_key_t>(), index_limits_t(0, wasm_threads));
    if (!made) {
        fail(status_invalid, made.error.release());
        return nullptr;
    }
    return new prism_index_t{std::move(made.index), static_cast<kind_t>(kind)};
}

EMSCRIPTEN_KEEPALIVE void prism_index_destroy(prism_index_t* handle) { delete handle; }

EMSCRIPTEN_KEEPALIVE std::uint32_t prism_index_size(prism_index_t const* handle) {
    return static_cast<std::uint32_t>(handle->index.size());
}
EMSCRIPTEN_KEEPALIVE std::uint32_t prism_index_dimensions(prism_index_t const* handle) {
    return static_cast<std::uint32_t>(handle->index.dimensions());
}
EMSCRIPTEN_KEEPALIVE std::uint32_t prism_index_kind(prism_index_t const* handle) { return handle->kind; }

// Lets the caller add one large batch in chunks without reallocating between them.
EMSCRIPTEN_KEEPALIVE std::int32_t prism_index_reserve(prism_index_t* handle, std::uint32_t extra) {
    return ensure_capacity(handle->index, extra) ? status_ok
                                                 : fail(status_out_of_memory, "cannot reserve memory for the new vectors");
}

// All-or-nothing: a key already present fails the whole batch before anything is added.
// The caller has already rejected duplicates inside the batch.
EMSCRIPTEN_KEEPALIVE std::int32_t prism_index_add(prism_index_t* handle, double const* keys, float const* vectors,
                                                  std::uint32_t count) {
    index_dense_t& index = handle->index;
    for (std::uint32_t i = 0; i != count; ++i)
        if (index.contains(static_cast<default_key_t>(keys[i])))
            return fail(status_invalid, "a key is already in the index");
    if (!ensure_capacity(index, count))
        return fail(status_out_of_memory, "cannot reserve memory for the new vectors");
    std::size_t const dimensions = index.dimensions();
    for (std::uint32_t i = 0; i != count; ++i) {
        index_dense_t::add_result_t added = index.add(static_cast<default_key_t>(keys[i]), vectors + i * dimensions);
        if (!added) {
            std::string message = added.error.release();
            for (std::uint32_t j = 0; j != i; ++j)
                index.remove(static_cast<default_key_t>(keys[j])).error.release();
            last_error = message;
            return status_out_of_memory;
        }
    }
    return status_ok;
}

// Returns how many keys were present and removed, or a negative status.
EMSCRIPTEN_KEEPALIVE std::int32_t prism_index_remove(prism_index_t* handle, double const* keys, std::uint32_t count) {
    std::int32_t removed = 0;
    for (std::uint32_t i = 0; i != count; ++i) {
        index_dense_t::labeling_result_t result = handle->index.remove(static_cast<default_key_t>(keys[i]));
        if (!result)
            return -fail(status_out_of_memory, result.error.release());
        removed += static_cast<std::int32_t>(result.completed);
    }
    return removed;
}

// For each of `count` query rows writes up to `k` hits (best first) at row offset q*k and the hit count.
EMSCRIPTEN_KEEPALIVE std::int32_t prism_index_search(prism_index_t const* handle, float const* queries,
                                                     std::uint32_t count, std::uint32_t k, double* out_keys,
                                                     float* out_scores, std::uint32_t* out_found) {
    index_dense_t const& index = handle->index;
    bool const exact = handle->kind == kind_flat;
    std::size_t const dimensions = index.dimensions();
    for (std::uint32_t q = 0; q != count; ++q) {
        index_dense_t::search_result_t result = index.search(queries + q * dimensions, k, index_dense_t::any_thread(), exact);
        if (!result)
            return fail(status_out_of_memory, result.error.release());
        std::size_t const found = result.size();
        for (std::size_t i = 0; i != found; ++i) {
            auto match = result[i];
            out_keys[q * k + i] = static_cast<double>(match.member.key);
            out_scores[q * k + i] = 1.0f - static_cast<float>(match.distance);
        }
        out_found[q] = static_cast<std::uint32_t>(found);
    }
    return status_ok;
}

EMSCRIPTEN_KEEPALIVE double prism_index_serialized_length(prism_index_t const* handle) {
    return static_cast<double>(header_bytes + handle->index.serialized_length());
}

EMSCRIPTEN_KEEPALIVE std::int32_t prism_index_serialize(prism_index_t const* handle, std::uint8_t* out,
                                                        std::size_t length) {
    std::size_t const payload_length = handle->index.serialized_length();
    if (length != header_bytes + payload_length)
        return fail(status_invalid, "output buffer has the wrong length");
    std::uint8_t* cursor = out + header_bytes;
    std::uint8_t* const end = out + length;
    serialization_result_t saved = handle->index.save_to_stream([&](void const* data, std::size_t bytes) {
        if (static_cast<std::size_t>(end - cursor) < bytes)
            return false;
        std::memcpy(cursor, data, bytes);
        cursor += bytes;
        return true;
    });
    if (!saved)
        return fail(status_out_of_memory, saved.error.release());
    std::memcpy(out, header_magic, sizeof(header_magic));
    write_le<std::uint32_t>(out + 8, header_version);
    write_le<std::uint32_t>(out + 12, handle->kind);
    write_le<std::uint32_t>(out + 16, static_cast<std::uint32_t>(handle->index.dimensions()));
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
    if (version != header_version || (kind != kind_flat && kind != kind_hnsw) || dimensions == 0) {
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
    // usearch trusts its own matrix header; check it against the payload before it allocates rows.
    std::uint64_t const vector_bytes = std::uint64_t(dimensions) * sizeof(float);
    if (payload_length < 8 || read_le<std::uint32_t>(payload + 4) != vector_bytes ||
        std::uint64_t(read_le<std::uint32_t>(payload)) * vector_bytes > payload_length) {
        fail(status_corrupt, "index matrix header does not match its dimensions");
        return nullptr;
    }

    index_dense_t::state_result_t made = index_dense_t::make(
        metric_punned_t(dimensions, metric_kind_t::ip_k, scalar_kind_t::f32_k), index_dense_config_t{},
        default_free_value<default_key_t>(), index_limits_t(0, wasm_threads));
    if (!made) {
        fail(status_out_of_memory, made.error.release());
        return nullptr;
    }
    std::size_t offset = 0;
    serialization_result_t loaded = made.index.load_from_stream([&](void* data, std::size_t wanted) {
        if (!data || payload_length - offset < wanted)
            return false;
        std::memcpy(data, payload + offset, wanted);
        offset += wanted;
        return true;
    });
    if (!loaded) {
        fail(status_corrupt, loaded.error.release());
        return nullptr;
    }
    if (offset != payload_length || made.index.dimensions() != dimensions ||
        made.index.metric_kind() != metric_kind_t::ip_k ||
        made.index.scalar_kind() != scalar_kind_t::f32_k) {
        fail(status_corrupt, "index payload does not match its header");
        return nullptr;
    }
    return new prism_index_t{std::move(made.index), static_cast<kind_t>(kind)};
}

} // extern "C"
