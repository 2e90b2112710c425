// A plain C ABI over usearch for PRISM, compiled to WASM by wasm/build.sh. Two index kinds:
//
// - flat (exact search, prefiltered past a size; what every memory opens): the vectors as packed
//   rows in blocks of ~4 MB, their keys, and a key→row lookup, scanned in full with usearch's own
//   inner-product kernel (`metric_punned_t`), so scores are the ones `index_dense_t` computes. A row is the vector's i4
//   record (4 + ⌈dim / 2⌉ bytes) while every vector added is one, as every vector of a memory on a
//   SQL or IndexedDB store at their default precision is; else its i8 encoding (dim + 4 bytes) while
//   every vector rebuilds bit for bit from one; a row is decoded to its floats to be scored. The
//   first vector a form cannot hold turns the rows into the next (i4, i8, f32: 4 × dim bytes). An
//   add is an encode or a copy and a hash insert, and a vector costs its row plus about 40 bytes of
//   key and lookup (a 10K-message memory's 57K vectors: 100 MB of WASM memory as f32 rows,
//   measured; 100K messages' 464K vectors: 248 MB as i8 rows, 120 MB as i4 rows). It used to be
//   an `index_dense_t` with a minimal graph searched with `exact = true`: every add paid a graph
//   insertion and the graph and usearch's arenas cost memory a scan never reads. Past a size the
//   caller sets (`prism_index_set_prefilter`), a search scores only the rows whose sign sketches
//   are nearest the query's (`sketches`), as the scan would: approximate only where one of the
//   exact hits is not among them.
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
// flat payload (version 2): row count n (u64), n keys (u64), n × dimensions floats (f32), row-major
// (i8 rows are written as their floats and encoded again on load).
// hnsw payload (version 1): usearch's own `index_dense_t` stream.
// Version-1 flat bytes (usearch's graph stream) are rejected as CORRUPT_CHECKPOINT: PRISM never
// stores index bytes (a memory rebuilds its indexes from its records on open), so none exist on disk.
// The CRC lets a truncated or bit-flipped checkpoint fail loudly instead of returning wrong neighbours.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include <emscripten/emscripten.h>
#include <emscripten/heap.h>
#include <unistd.h>
#include <wasm_simd128.h>
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
    /// Bytes one vector's row takes.
    virtual std::size_t row_bytes() const = 0;
    /// Makes room for `extra` more vectors; false when memory is exhausted.
    virtual bool reserve(std::size_t extra) = 0;
    /// All or nothing; returns a status and sets `last_error` on failure.
    virtual std::int32_t add(double const* keys, float const* vectors, std::size_t count) = 0;
    /// `add` for vectors given as i8 records (see `i8_rows`; the caller has checked their scales
    /// are finite): by default their floats are decoded and added.
    virtual std::int32_t add_i8(double const* keys, std::uint8_t const* records, std::size_t count);
    /// `add` for vectors given as i4 records (see `i4_records`; the caller has checked their scales
    /// are finite): status_invalid, adding none, when a half byte names no level; else the i8
    /// records they name are added as `add_i8` adds them.
    std::int32_t add_i4(double const* keys, std::uint8_t const* records, std::size_t count);
    /// `add_i4` once every record is known valid: by default their i8 records are added with `add_i8`.
    virtual std::int32_t add_valid_i4(double const* keys, std::uint8_t const* records, std::size_t count);
    /// How many of the keys were present and removed, or a negative status.
    virtual std::int32_t remove(double const* keys, std::size_t count) = 0;
    /// Where the row of `key` is (`row_bytes()` bytes, valid until the index next changes), or
    /// null when the key is absent or the kind does not keep rows it can hand out.
    virtual std::uint8_t const* row_of(default_key_t) const { return nullptr; }
    /// The flat kind's sketch prefilter (`flat_index_t::set_prefilter`); an HNSW graph has no scan to prefilter.
    virtual void set_prefilter(std::size_t, std::size_t, std::size_t) {}
    /// Up to `k` hits, best first, written at out_keys/out_scores; `found` gets their count.
    virtual std::int32_t search(float const* queries, std::size_t count, std::size_t k, double* out_keys,
                                float* out_scores, std::uint32_t* out_found) const = 0;
    virtual std::size_t payload_length() const = 0;
    /// Writes exactly `payload_length()` bytes; false when that fails.
    virtual bool write_payload(std::uint8_t* out) const = 0;
};

bool same_bits(float a, float b) {
    std::uint32_t x, y;
    std::memcpy(&x, &a, sizeof(x));
    std::memcpy(&y, &b, sizeof(y));
    return x == y;
}

/// A vector as an f32 scale and one signed byte a dimension, the encoding of PRISM's SQL and
/// IndexedDB stores (src/store/vector-codec.ts: scale = max |x| / 127 as an f32, component =
/// scale × code as an f32). Every vector a memory on those stores holds rebuilds bit for bit from it,
/// so a row kept this way scores exactly as its f32 row did, in a quarter of the memory.
namespace i8_rows {

std::size_t row_bytes(std::size_t dimensions) { return sizeof(float) + dimensions; }

/// Writes the vector's scale and codes at `out` when they rebuild every component bit for bit;
/// false otherwise (a NaN, an infinity, a −0, or a vector no store rounded). The scale is tried at
/// max |x| / 127 and its two f32 neighbours: the store's scale came from the vector before rounding.
bool encode(float const* vector, std::size_t dimensions, std::uint8_t* out) {
    float max = 0;
    for (std::size_t d = 0; d != dimensions; ++d) {
        float const magnitude = std::fabs(vector[d]);
        if (!(magnitude <= std::numeric_limits<float>::max()))
            return false;
        max = std::max(max, magnitude);
    }
    float const nearest = max == 0 ? 1.0f : static_cast<float>(static_cast<double>(max) / 127.0);
    float const scales[3] = {nearest, std::nextafter(nearest, 0.0f), std::nextafter(nearest, 2.0f * nearest)};
    std::int8_t* const codes = reinterpret_cast<std::int8_t*>(out + sizeof(float));
    for (float const scale : scales) {
        if (!(scale > 0))
            continue;
        bool exact = true;
        for (std::size_t d = 0; exact && d != dimensions; ++d) {
            double const code = std::nearbyint(static_cast<double>(vector[d]) / scale);
            exact = std::fabs(code) <= 127;
            if (exact) {
                codes[d] = static_cast<std::int8_t>(code);
                exact = same_bits(scale * static_cast<float>(codes[d]), vector[d]);
            }
        }
        if (exact) {
            std::memcpy(out, &scale, sizeof(scale));
            return true;
        }
    }
    return false;
}

/// The floats a row encodes (the vector `encode` was given).
void decode(std::uint8_t const* row, std::size_t dimensions, float* out) {
    float scale;
    std::memcpy(&scale, row, sizeof(scale));
    std::int8_t const* const codes = reinterpret_cast<std::int8_t const*>(row + sizeof(float));
    // 16 codes a step with WASM SIMD (clang leaves the plain loop scalar): widen to 4 × i32x4,
    // convert, scale. Each lane is the same single f32 product as the scalar tail.
    v128_t const scales = wasm_f32x4_splat(scale);
    std::size_t d = 0;
    for (; d + 16 <= dimensions; d += 16) {
        v128_t const bytes = wasm_v128_load(codes + d);
        v128_t const low = wasm_i16x8_extend_low_i8x16(bytes);
        v128_t const high = wasm_i16x8_extend_high_i8x16(bytes);
        wasm_v128_store(out + d, wasm_f32x4_mul(scales, wasm_f32x4_convert_i32x4(wasm_i32x4_extend_low_i16x8(low))));
        wasm_v128_store(out + d + 4, wasm_f32x4_mul(scales, wasm_f32x4_convert_i32x4(wasm_i32x4_extend_high_i16x8(low))));
        wasm_v128_store(out + d + 8, wasm_f32x4_mul(scales, wasm_f32x4_convert_i32x4(wasm_i32x4_extend_low_i16x8(high))));
        wasm_v128_store(out + d + 12, wasm_f32x4_mul(scales, wasm_f32x4_convert_i32x4(wasm_i32x4_extend_high_i16x8(high))));
    }
    for (; d != dimensions; ++d)
        out[d] = scale * static_cast<float>(codes[d]);
}

/// The largest dimension whose estimates cannot overflow: a lane of `estimate` sums dim / 4 products
/// of at most 127 × 32,767.
constexpr std::size_t max_dimensions = 2048;

/// A query as 16-bit integers and their step (max |q| / 32,767): `estimate`'s side of a product.
struct quantized_query_t {
    std::int16_t* steps;
    float step;
};

quantized_query_t quantize(float const* query, std::size_t dimensions, std::int16_t* out) {
    float max = 0;
    for (std::size_t d = 0; d != dimensions; ++d)
        max = std::max(max, std::fabs(query[d]));
    float const step = max == 0 ? 1.0f : max / 32767.0f;
    for (std::size_t d = 0; d != dimensions; ++d)
        out[d] = static_cast<std::int16_t>(std::max(-32767.0f, std::min(32767.0f, std::nearbyint(query[d] / step))));
    return {out, step};
}

/// `sums` plus the products of the 16 codes in `bytes` and their query steps (`low` for the first
/// eight, `high` for the rest), four lanes of them.
inline v128_t add_products(v128_t sums, v128_t bytes, v128_t low, v128_t high) {
    sums = wasm_i32x4_add(sums, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_low_i8x16(bytes), low));
    return wasm_i32x4_add(sums, wasm_i32x4_dot_i16x8(wasm_i16x8_extend_high_i8x16(bytes), high));
}

/// The four lanes of `sums` added up.
inline std::int64_t lane_total(v128_t sums) {
    return std::int64_t(wasm_i32x4_extract_lane(sums, 0)) + wasm_i32x4_extract_lane(sums, 1) + wasm_i32x4_extract_lane(sums, 2) +
           wasm_i32x4_extract_lane(sums, 3);
}

/// An integer sum of products of `row`'s codes and the query's steps, times both scales.
inline float scaled(std::int64_t sum, std::uint8_t const* row, quantized_query_t const& query) {
    float scale;
    std::memcpy(&scale, row, sizeof(scale));
    return static_cast<float>(static_cast<double>(sum) * scale * query.step);
}

/// The row's inner product with the quantized query, exact in integers (i16 × i8 dot products in
/// WASM SIMD), times both scales: within `scale · 127 · dim · step / 2` of the row's true inner
/// product with the query (each component of the query moved by at most step / 2).
float estimate(std::uint8_t const* row, quantized_query_t const& query, std::size_t dimensions) {
    std::int8_t const* const codes = reinterpret_cast<std::int8_t const*>(row + sizeof(float));
    v128_t sums = wasm_i32x4_splat(0);
    std::size_t d = 0;
    for (; d + 16 <= dimensions; d += 16)
        sums = add_products(sums, wasm_v128_load(codes + d), wasm_v128_load(query.steps + d), wasm_v128_load(query.steps + d + 8));
    std::int64_t sum = lane_total(sums);
    for (; d != dimensions; ++d)
        sum += std::int32_t(codes[d]) * query.steps[d];
    return scaled(sum, row, query);
}

/// Rows `estimate_rows` scores at once.
constexpr std::size_t rows_at_once = 4;

/// `estimate` of the `rows_at_once` rows at `rows`, for dimensions a multiple of 16: each load of
/// the query serves every row, where a row at a time spent most of its steps reloading it. A scan
/// of 317K rows of 384 dimensions took 31–32 ms in V8 one row at a time and 21 ms this way (merely
/// reading the rows takes 14 ms on that machine). The same integer sums as `estimate`, so the same
/// estimates, bit for bit.
void estimate_rows(std::uint8_t const* const* rows, quantized_query_t const& query, std::size_t dimensions, float* out) {
    v128_t sums[rows_at_once];
    for (std::size_t k = 0; k != rows_at_once; ++k)
        sums[k] = wasm_i32x4_splat(0);
    for (std::size_t d = 0; d != dimensions; d += 16) {
        v128_t const low = wasm_v128_load(query.steps + d);
        v128_t const high = wasm_v128_load(query.steps + d + 8);
        for (std::size_t k = 0; k != rows_at_once; ++k)
            sums[k] = add_products(sums[k], wasm_v128_load(rows[k] + sizeof(float) + d), low, high);
    }
    for (std::size_t k = 0; k != rows_at_once; ++k)
        out[k] = scaled(lane_total(sums[k]), rows[k], query);
}

} // namespace i8_rows

/// A vector as an f32 scale and one half byte a dimension (low half first), PRISM's default store
/// encoding (src/store/vector-codec.ts, `i4`): half byte k of 0 … 14 is the i8 code
/// ±round(|k − 7| × 127 / 7), 15 is no level. Its i8 record has the same scale and those codes,
/// so an open hands a store's i4 bytes to the index as they are, at half the bytes of i8, and
/// they are expanded here rather than one vector at a time in JavaScript.
namespace i4_records {

std::size_t record_bytes(std::size_t dimensions) { return sizeof(float) + (dimensions + 1) / 2; }

/// The fewest dimensions the stores keep at i4 (src/store/vector-codec.ts, `I4_MIN_DIM`): below it
/// an i4 record's length can equal an i8 one's, and rows are read back by their length.
constexpr std::size_t min_dimensions = 8;

/// The i8 code of each half byte (15: none, left 0).
constexpr std::int8_t codes[16] = {-127, -109, -91, -73, -54, -36, -18, 0, 18, 36, 54, 73, 91, 109, 127, 0};

/// Whether every half byte the record uses names a level (an odd dimension's last high half is unused).
bool valid(std::uint8_t const* record, std::size_t dimensions) {
    std::uint8_t const* const halves = record + sizeof(float);
    std::uint32_t bad = 0;
    for (std::size_t j = 0; j != dimensions / 2; ++j)
        bad |= (halves[j] & 0x0f) == 0x0f || (halves[j] >> 4) == 0x0f;
    if (dimensions & 1)
        bad |= (halves[dimensions / 2] & 0x0f) == 0x0f;
    return bad == 0;
}

/// Writes the i8 record (`i8_rows::row_bytes` bytes) a valid i4 record names at `out`, and returns
/// `out`. 32 codes a
/// step with WASM SIMD (a swizzle looks 16 half bytes up in `codes` at once, then the low and high
/// halves' codes are interleaved): an open expands every vector of a memory, 464K of them at 100K
/// messages, which took ~650 ms one half byte at a time.
std::uint8_t* expand(std::uint8_t const* record, std::size_t dimensions, std::uint8_t* out) {
    std::memcpy(out, record, sizeof(float));
    std::uint8_t const* const halves = record + sizeof(float);
    std::int8_t* const codes_out = reinterpret_cast<std::int8_t*>(out + sizeof(float));
    v128_t const table = wasm_v128_load(codes);
    v128_t const low_bits = wasm_i8x16_splat(0x0f);
    std::size_t d = 0;
    for (; d + 32 <= dimensions; d += 32) {
        v128_t const bytes = wasm_v128_load(halves + d / 2);
        v128_t const low = wasm_i8x16_swizzle(table, wasm_v128_and(bytes, low_bits));
        v128_t const high = wasm_i8x16_swizzle(table, wasm_u8x16_shr(bytes, 4));
        wasm_v128_store(codes_out + d, wasm_i8x16_shuffle(low, high, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23));
        wasm_v128_store(codes_out + d + 16, wasm_i8x16_shuffle(low, high, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31));
    }
    for (; d != dimensions; ++d)
        codes_out[d] = codes[(halves[d >> 1] >> ((d & 1) * 4)) & 0x0f];
    return out;
}

/// The half byte of each i8 code (as its byte, 0 … 255) that is a level's, 0xff for the rest.
struct levels_t {
    std::uint8_t half[256];
    constexpr levels_t() : half() {
        for (int byte = 0; byte != 256; ++byte)
            half[byte] = 0xff;
        for (int k = 0; k != 15; ++k)
            half[static_cast<std::uint8_t>(codes[k])] = static_cast<std::uint8_t>(k);
    }
};
constexpr levels_t levels;

/// Writes the i4 record of the i8 record at `row` (`i8_rows::row_bytes` bytes) at `out` when every
/// code is a level's, which `expand` turns back into the same i8 record; false otherwise. An odd
/// dimension's last high half is written as 0 (the zero level's 7 would do as well: it is unused).
bool pack(std::uint8_t const* row, std::size_t dimensions, std::uint8_t* out) {
    std::uint8_t const* const row_codes = row + sizeof(float);
    std::uint8_t* const halves = out + sizeof(float);
    std::uint8_t bad = 0;
    for (std::size_t d = 0; d + 1 < dimensions; d += 2) {
        std::uint8_t const low = levels.half[row_codes[d]];
        std::uint8_t const high = levels.half[row_codes[d + 1]];
        bad |= (low | high) & 0x80;
        halves[d / 2] = static_cast<std::uint8_t>(low | (high << 4));
    }
    if (dimensions & 1) {
        std::uint8_t const low = levels.half[row_codes[dimensions - 1]];
        bad |= low & 0x80;
        halves[dimensions / 2] = low & 0x0f;
    }
    if (bad)
        return false;
    std::memcpy(out, row, sizeof(float));
    return true;
}

/// Rows `estimate_rows` scores at once: one load of the query serves eight i4 rows, where the i8
/// rows' four suit their larger loads (a scan of 480K rows of 384 dimensions, made-up rows: i8 four
/// at a time 28–33 ms, i4 four at a time 23–25 ms, i4 eight at a time 16 ms; i8 eight at a time 36 ms).
constexpr std::size_t rows_at_once = 8;

/// The query's steps reordered for `estimate_rows`: in each run of 32 dimensions, the 16 even ones
/// (the low halves of the run's 16 bytes) and then the 16 odd ones (their high halves), so the codes
/// a swizzle looks up meet their steps with no interleaving. `dimensions` is a multiple of 32.
void interleave_steps(std::int16_t const* steps, std::size_t dimensions, std::int16_t* out) {
    for (std::size_t d = 0; d != dimensions; d += 32)
        for (std::size_t j = 0; j != 16; ++j) {
            out[d + j] = steps[d + 2 * j];
            out[d + 16 + j] = steps[d + 2 * j + 1];
        }
}

/// `i8_rows::estimate` of the i8 records that the `rows_at_once` i4 records at `records` name, for
/// dimensions a multiple of 32, with `steps` from `interleave_steps`: the same products added in
/// integers (so the same sums, bit for bit), from half the bytes.
void estimate_rows(std::uint8_t const* const* records, std::int16_t const* steps, i8_rows::quantized_query_t const& query,
                   std::size_t dimensions, float* out) {
    v128_t sums[rows_at_once];
    for (std::size_t k = 0; k != rows_at_once; ++k)
        sums[k] = wasm_i32x4_splat(0);
    v128_t const table = wasm_v128_load(codes);
    v128_t const low_bits = wasm_i8x16_splat(0x0f);
    for (std::size_t d = 0; d != dimensions; d += 32) {
        v128_t const even_low = wasm_v128_load(steps + d);
        v128_t const even_high = wasm_v128_load(steps + d + 8);
        v128_t const odd_low = wasm_v128_load(steps + d + 16);
        v128_t const odd_high = wasm_v128_load(steps + d + 24);
        for (std::size_t k = 0; k != rows_at_once; ++k) {
            v128_t const bytes = wasm_v128_load(records[k] + sizeof(float) + d / 2);
            sums[k] = i8_rows::add_products(sums[k], wasm_i8x16_swizzle(table, wasm_v128_and(bytes, low_bits)), even_low, even_high);
            sums[k] = i8_rows::add_products(sums[k], wasm_i8x16_swizzle(table, wasm_u8x16_shr(bytes, 4)), odd_low, odd_high);
        }
    }
    for (std::size_t k = 0; k != rows_at_once; ++k)
        out[k] = i8_rows::scaled(i8_rows::lane_total(sums[k]), records[k], query);
}

} // namespace i4_records

/// A vector's sketch: one bit a dimension, set where the component is positive, in 64-bit words
/// (the last padded with zeros). Two sketches differ in as many bits as their vectors differ in
/// signs, which ranks rows by the angle to a query roughly (random-hyperplane hashing, one
/// hyperplane a coordinate axis) in a quarter of the bytes of an i4 row of MiniLM: what a search of
/// a large index ranks every row by before it scores the nearest (`flat_index_t::set_prefilter`).
namespace sketches {

std::size_t words(std::size_t dimensions) { return (dimensions + 63) / 64; }
std::size_t bytes(std::size_t dimensions) { return words(dimensions) * sizeof(std::uint64_t); }

/// The sketch of a vector given as i8 codes (scales are positive, so a code's sign is its component's).
void of_codes(std::uint8_t const* codes, std::size_t dimensions, std::uint64_t* out) {
    std::memset(out, 0, bytes(dimensions));
    std::size_t d = 0;
    for (; d + 16 <= dimensions; d += 16) {
        // Lane i's bit is bit i of the mask, so on little-endian WASM these 16 bits land as dimensions d … d + 15.
        std::uint16_t const bits = static_cast<std::uint16_t>(wasm_i8x16_bitmask(wasm_i8x16_gt(wasm_v128_load(codes + d), wasm_i8x16_splat(0))));
        std::memcpy(reinterpret_cast<std::uint8_t*>(out) + d / 8, &bits, sizeof(bits));
    }
    for (; d != dimensions; ++d)
        if (static_cast<std::int8_t>(codes[d]) > 0)
            out[d / 64] |= std::uint64_t(1) << (d % 64);
}

/// The sketch of a vector given as floats.
void of_floats(float const* vector, std::size_t dimensions, std::uint64_t* out) {
    std::memset(out, 0, bytes(dimensions));
    for (std::size_t d = 0; d != dimensions; ++d)
        if (vector[d] > 0)
            out[d / 64] |= std::uint64_t(1) << (d % 64);
}

/// How many bits two sketches of `count` words differ in: two words at a time in WASM SIMD, each
/// byte's counts added up over at most 16 steps (128 at most, so no byte overflows) before they are
/// widened and summed, then any last word alone.
inline std::uint32_t distance(std::uint64_t const* a, std::uint64_t const* b, std::size_t count) {
    std::uint32_t bits = 0;
    std::size_t w = 0;
    while (w + 2 <= count) {
        v128_t counts = wasm_i8x16_splat(0);
        for (std::size_t steps = 0; steps != 16 && w + 2 <= count; ++steps, w += 2)
            counts = wasm_i8x16_add(counts, wasm_i8x16_popcnt(wasm_v128_xor(wasm_v128_load(a + w), wasm_v128_load(b + w))));
        v128_t const wide = wasm_u32x4_extadd_pairwise_u16x8(wasm_u16x8_extadd_pairwise_u8x16(counts));
        bits += wasm_i32x4_extract_lane(wide, 0) + wasm_i32x4_extract_lane(wide, 1) + wasm_i32x4_extract_lane(wide, 2) + wasm_i32x4_extract_lane(wide, 3);
    }
    if (w != count)
        bits += static_cast<std::uint32_t>(__builtin_popcountll(a[w] ^ b[w]));
    return bits;
}

/// Two u16x8 vectors' lanes added in neighbouring pairs: the first's four sums, then the second's.
inline v128_t pair_sums(v128_t a, v128_t b) {
    return wasm_i16x8_add(wasm_i16x8_shuffle(a, b, 0, 2, 4, 6, 8, 10, 12, 14), wasm_i16x8_shuffle(a, b, 1, 3, 5, 7, 9, 11, 13, 15));
}

/// Each of eight sketches' `lanes` × 128 bits' differences from `query`, as eight u16 totals: the
/// query's lanes are loaded once, a row's byte counts (at most 8 × `lanes`) widened once, and the
/// eight rows' lanes summed together in three rounds of pairwise adds, not one row's lanes
/// extracted and added apart (the facts of 100K messages of chat, 317K sketches: ~6 ms a search
/// one row at a time, ~2.3 ms this way).
template <std::size_t lanes> inline void eight_distances(std::uint64_t const* rows, v128_t const* query, std::uint16_t* out) {
    v128_t counts[8];
    for (std::size_t i = 0; i != 8; ++i) {
        std::uint64_t const* row = rows + i * 2 * lanes;
        v128_t bytes = wasm_i8x16_popcnt(wasm_v128_xor(wasm_v128_load(row), query[0]));
        for (std::size_t l = 1; l != lanes; ++l)
            bytes = wasm_i8x16_add(bytes, wasm_i8x16_popcnt(wasm_v128_xor(wasm_v128_load(row + 2 * l), query[l])));
        counts[i] = wasm_u16x8_extadd_pairwise_u8x16(bytes);
    }
    v128_t const quarters[4] = {pair_sums(counts[0], counts[1]), pair_sums(counts[2], counts[3]), pair_sums(counts[4], counts[5]), pair_sums(counts[6], counts[7])};
    v128_t const totals = pair_sums(pair_sums(quarters[0], quarters[1]), pair_sums(quarters[2], quarters[3]));
    wasm_v128_store(out, totals);
}

/// `distance` of `rows` sketches of `count` words laid end to end, each from `query`, into `out`:
/// eight at a time (`eight_distances`) where a sketch is a whole number of 128-bit lanes, up to 8
/// (1,024 dimensions: MiniLM's 384 are 3), the rest one at a time.
inline void distances(std::uint64_t const* sketches, std::size_t rows, std::uint64_t const* query, std::size_t count, std::uint16_t* out) {
    std::size_t r = 0;
    std::size_t const lanes = count / 2;
    if (count % 2 == 0 && lanes >= 1 && lanes <= 8) {
        v128_t query_lanes[8];
        for (std::size_t l = 0; l != lanes; ++l)
            query_lanes[l] = wasm_v128_load(query + 2 * l);
        using eight_t = void (*)(std::uint64_t const*, v128_t const*, std::uint16_t*);
        constexpr eight_t by_lanes[8] = {eight_distances<1>, eight_distances<2>, eight_distances<3>, eight_distances<4>,
                                         eight_distances<5>, eight_distances<6>, eight_distances<7>, eight_distances<8>};
        eight_t const eight = by_lanes[lanes - 1];
        for (; r + 8 <= rows; r += 8)
            eight(sketches + r * count, query_lanes, out + r);
    }
    for (; r != rows; ++r)
        out[r] = static_cast<std::uint16_t>(distance(sketches + r * count, query, count));
}

} // namespace sketches

/// `realloc` for `count` elements of `element_at`: null on overflow or exhaustion, when the old
/// block stays valid, so a failed growth leaves what it held as it was.
template <typename element_at> element_at* grow(element_at* old, std::size_t count) {
    checked_size_result_t bytes = checked_mul(count, sizeof(element_at));
    return bytes ? static_cast<element_at*>(std::realloc(old, bytes.value)) : nullptr;
}

/// `needed` and an eighth more, what a large reserve allocates: a memory opens with one add of all
/// its vectors, and an exact fit would reallocate at its first later add, growing WASM memory by a
/// fifth then (25 MB at 100K messages, measured), which V8 answers with a full collection of the
/// JS heap in the middle of that add.
std::size_t with_room(std::size_t needed) { return needed + needed / 8; }

/// Reservations smaller than this are left to grow WASM memory as they allocate.
constexpr std::size_t grow_once_from_bytes = 1u << 20;
/// Room a growth leaves besides the reservation's own bytes for the copies its adds come in: the
/// caller copies rows a chunk of 4 MB at a time, with their keys (src/vector/usearch-wasm.ts).
constexpr std::size_t batch_copy_bytes = 8u << 20;

/// Grows WASM memory once, where `bytes` do not fit past the allocator's break, to hold them and
/// `batch_copy_bytes` more, for a reservation about to allocate `bytes` in parts (an index's rows block by block, its keys, its
/// lookup and its sketches). Allocated one by one, the parts grew memory by a fifth at a time: 13 growths while a
/// memory of 100K messages opened, each of which V8 counts as external memory and answers with a
/// collection of the whole JS heap (~0.4 GB then). The allocator then moves its break within the
/// grown memory; room it never uses is never touched, so it is not resident. A failed growth
/// leaves the parts to grow memory as before (and fail as they would).
void grow_once_for(std::size_t bytes) {
    if (bytes < grow_once_from_bytes)
        return;
    std::uintptr_t const top = reinterpret_cast<std::uintptr_t>(sbrk(0));
    std::size_t const room = bytes + batch_copy_bytes;
    if (room > bytes && room <= std::numeric_limits<std::uintptr_t>::max() - top && top + bytes > emscripten_get_heap_size())
        emscripten_resize_heap(top + room);
}

/// Rows of one byte width in blocks of ~4 MB. Growth allocates one more block and never moves a
/// row: a single matrix grown by doubling copies itself on every growth, and because WASM memory
/// never shrinks, that copy's high-water mark stays resident (185 MB of WASM memory for 83 MB of
/// vectors, measured). Only the first block grows by doubling, up to one block, so a small index
/// stays small; a large reserve gets an eighth more room (see `with_room`).
class row_blocks_t {
    static constexpr std::size_t block_bytes = 4u << 20;
    static constexpr std::size_t first_block_rows = 64;

    std::size_t row_bytes_;
    std::size_t rows_per_block_;
    std::uint8_t** blocks_ = nullptr;
    std::size_t block_count_ = 0;
    std::size_t block_slots_ = 0;
    /// Rows the blocks hold room for.
    std::size_t capacity_ = 0;

  public:
    explicit row_blocks_t(std::size_t row_bytes)
        : row_bytes_(row_bytes), rows_per_block_(std::max<std::size_t>(1, block_bytes / row_bytes)) {}
    ~row_blocks_t() {
        for (std::size_t b = 0; b != block_count_; ++b)
            std::free(blocks_[b]);
        std::free(blocks_);
    }
    row_blocks_t(row_blocks_t const&) = delete;
    row_blocks_t& operator=(row_blocks_t const&) = delete;
    void swap(row_blocks_t& other) noexcept {
        std::swap(row_bytes_, other.row_bytes_);
        std::swap(rows_per_block_, other.rows_per_block_);
        std::swap(blocks_, other.blocks_);
        std::swap(block_count_, other.block_count_);
        std::swap(block_slots_, other.block_slots_);
        std::swap(capacity_, other.capacity_);
    }

    std::size_t row_bytes() const { return row_bytes_; }
    std::size_t rows_per_block() const { return rows_per_block_; }
    /// The bytes `reserve(needed)` allocates, as it allocates them: a first block of the rows needed
    /// and an eighth more, up to a whole block (a first block short of one is grown to a whole
    /// one, counted whole here), then whole blocks.
    std::size_t bytes_to_reserve(std::size_t needed) const {
        if (needed <= capacity_)
            return 0;
        // Rows of the blocks allocated (or grown) for them, and the rows held after the first block.
        std::size_t rows = 0;
        std::size_t held = capacity_;
        if (block_count_ == 0)
            rows = held = std::min(rows_per_block_, std::max(with_room(needed), first_block_rows));
        else if (block_count_ == 1 && capacity_ < rows_per_block_)
            rows = held = rows_per_block_;
        if (needed > held)
            rows += (needed - held + rows_per_block_ - 1) / rows_per_block_ * rows_per_block_;
        return rows * row_bytes_;
    }
    std::uint8_t* row(std::size_t r) const { return blocks_[r / rows_per_block_] + (r % rows_per_block_) * row_bytes_; }
    std::uint8_t const* block(std::size_t b) const { return blocks_[b]; }

    /// Room for `needed` rows; false when memory is exhausted, the rows already held untouched.
    bool reserve(std::size_t needed) {
        while (capacity_ < needed) {
            if (block_count_ == 1 && capacity_ < rows_per_block_) {
                std::size_t const rows = std::min(rows_per_block_, std::max(with_room(needed), capacity_ * 2));
                std::uint8_t* block = grow(blocks_[0], rows * row_bytes_);
                if (!block)
                    return false;
                blocks_[0] = block;
                capacity_ = rows;
                continue;
            }
            if (block_count_ == block_slots_) {
                std::size_t const slots = std::max<std::size_t>(4, block_slots_ * 2);
                std::uint8_t** table = grow(blocks_, slots);
                if (!table)
                    return false;
                blocks_ = table;
                block_slots_ = slots;
            }
            std::size_t const rows =
                block_count_ == 0 ? std::min(rows_per_block_, std::max(with_room(needed), first_block_rows)) : rows_per_block_;
            std::uint8_t* block = grow(static_cast<std::uint8_t*>(nullptr), rows * row_bytes_);
            if (!block)
                return false;
            blocks_[block_count_++] = block;
            capacity_ = (block_count_ - 1) * rows_per_block_ + rows;
        }
        return true;
    }

};

/// How a flat index keeps its rows, narrowest first: the vector's i4 record (4 + ⌈dim / 2⌉ bytes)
/// while every vector added is one, as every vector of a memory on a SQL or IndexedDB store at
/// their default precision is; else its i8 encoding (dim + 4 bytes) while every vector has one that
/// rebuilds it bit for bit, as on those stores at i8; else f32 (4 × dim bytes).
enum class row_form_t { i4, i8, f32 };

/// The exact kind: row r holds the vector of `keys_[r]`. Rows stay packed (a removed row is filled
/// by the last one), so a search streams a few large contiguous runs. Rows start in the narrowest
/// form the dimensions allow (`row_form_t`), and the first vector that form cannot hold exactly turns
/// every row into the next. Whatever the form, a row is scored as its floats with usearch's kernel.
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
    /// What `append` returns when a row of the current form cannot hold the vector exactly.
    static constexpr std::int32_t status_too_narrow = -1;

    metric_punned_t metric_;
    std::size_t dimensions_;
    row_form_t form_;
    /// The largest scale of any i4 or i8 row added (removals leave it: it only widens a search's margin).
    float max_scale_ = 0;
    /// One i8 record: what a vector is encoded into before its i4 row is packed, and what an i4 row
    /// is expanded into to be read (the index runs single-threaded).
    std::uint8_t* i8_scratch_ = nullptr;
    row_blocks_t rows_;
    default_key_t* keys_ = nullptr;
    std::size_t key_capacity_ = 0;
    std::size_t size_ = 0;
    flat_hash_multi_set_gt<key_and_row_t, key_hash_t, key_same_t> row_of_;
    /// The sketch prefilter (`set_prefilter`): above `exact_up_to_` rows a search scores only the
    /// rows whose sketches are nearest the query's, `candidates_per_hit_` a hit wanted and at least
    /// `least_candidates_`. Off until set.
    std::size_t exact_up_to_ = std::numeric_limits<std::uint32_t>::max();
    std::size_t candidates_per_hit_ = 0;
    std::size_t least_candidates_ = 0;
    /// Row r's sketch (`write_sketch`), kept from the add that takes the index over
    /// `exact_up_to_` rows on: a search ranks rows by it before scoring any.
    row_blocks_t sketches_;
    bool sketched_ = false;

    /// Blocks that hold vectors, and how many rows of block b do.
    std::size_t used_blocks() const { return size_ == 0 ? 0 : (size_ - 1) / rows_.rows_per_block() + 1; }
    std::size_t rows_in_block(std::size_t b) const { return std::min(rows_.rows_per_block(), size_ - b * rows_.rows_per_block()); }

    /// The i8 record of the i4 or i8 row at `row`: the row itself (i8), or expanded into `i8_scratch_` (i4).
    std::uint8_t const* i8_record_of(std::uint8_t const* row) const {
        return form_ == row_form_t::i8 ? row : i4_records::expand(row, dimensions_, i8_scratch_);
    }

    /// The floats of the row at `row`: the row itself (f32), or decoded into `scratch`.
    float const* floats_of(std::uint8_t const* row, float* scratch) const {
        if (form_ == row_form_t::f32)
            return reinterpret_cast<float const*>(row);
        i8_rows::decode(i8_record_of(row), dimensions_, scratch);
        return scratch;
    }

    static std::size_t row_bytes_of(row_form_t form, std::size_t dimensions) {
        return form == row_form_t::i4 ? i4_records::record_bytes(dimensions)
               : form == row_form_t::i8 ? i8_rows::row_bytes(dimensions)
                                        : dimensions * sizeof(float);
    }

    /// The key capacity `reserve_keys(needed)` leaves.
    std::size_t key_capacity_for(std::size_t needed) const {
        return needed <= key_capacity_ ? key_capacity_ : std::max(with_room(needed), key_capacity_ * 2);
    }

    bool reserve_keys(std::size_t needed) {
        if (needed <= key_capacity_)
            return true;
        std::size_t const capacity = key_capacity_for(needed);
        default_key_t* keys = grow(keys_, capacity);
        if (!keys)
            return false;
        keys_ = keys;
        key_capacity_ = capacity;
        return true;
    }

    /// Rewrites every row in the next wider form (i4 to i8, i8 to f32); false (rows untouched) when
    /// memory is exhausted.
    bool widen_rows() {
        row_form_t const wider = form_ == row_form_t::i4 ? row_form_t::i8 : row_form_t::f32;
        row_blocks_t wide(row_bytes_of(wider, dimensions_));
        if (!wide.reserve(std::max<std::size_t>(size_, 1)))
            return false;
        for (std::size_t r = 0; r != size_; ++r) {
            if (wider == row_form_t::i8)
                i4_records::expand(rows_.row(r), dimensions_, wide.row(r));
            else
                i8_rows::decode(rows_.row(r), dimensions_, reinterpret_cast<float*>(wide.row(r)));
        }
        rows_.swap(wide);
        form_ = wider;
        return true;
    }

    /// Writes the i8 record `record` as a row of the current form; false when an i4 row cannot hold it.
    bool write_i8(std::uint8_t const* record, std::uint8_t* row) const {
        if (form_ == row_form_t::i4)
            return i4_records::pack(record, dimensions_, row);
        if (form_ == row_form_t::i8)
            std::memcpy(row, record, i8_rows::row_bytes(dimensions_));
        else
            i8_rows::decode(record, dimensions_, reinterpret_cast<float*>(row));
        return true;
    }

    /// Undoes the lookup entries of the first `count` rows appended after `size_` (rows need nothing).
    void forget_appended(std::size_t count) {
        key_and_row_t popped;
        for (std::size_t i = 0; i != count; ++i)
            row_of_.pop_first(keys_[size_ + i], popped);
    }

    /// Writes one row after the `appended` rows already written past `size_` (room is reserved) with
    /// `write(row)`; status_invalid when its key is already present, status_out_of_memory when the
    /// lookup cannot grow, status_too_narrow when `write` cannot hold the vector in a row of the current form.
    template <typename write_at> std::int32_t append(std::size_t appended, default_key_t key, write_at&& write) {
        std::size_t const r = size_ + appended;
        if (row_of_.contains(key))
            return status_invalid;
        if (!write(rows_.row(r)))
            return status_too_narrow;
        if (!row_of_.try_emplace(key_and_row_t{key, static_cast<std::uint32_t>(r)}))
            return status_out_of_memory;
        keys_[r] = key;
        if (form_ != row_form_t::f32)
            max_scale_ = std::max(max_scale_, std::fabs(read_le<float>(rows_.row(r))));
        if (sketched_)
            write_sketch(r);
        return status_ok;
    }

    /// All or nothing: `count` rows keyed by `key_of(i)`, row i written by `write(i, row)` (false:
    /// the vector has no exact row of the current form, so every row is widened and the batch is
    /// added again).
    /// A key over `max_key` or already present is status_invalid.
    template <typename key_of_at, typename write_at>
    std::int32_t add_rows(std::size_t count, key_of_at const& key_of, write_at const& write) {
        if (!reserve(count))
            return fail(status_out_of_memory, "cannot reserve memory for the new vectors");
        for (std::size_t i = 0; i != count; ++i) {
            default_key_t const key = key_of(i);
            std::int32_t const status =
                key > max_key ? status_invalid : append(i, key, [&](std::uint8_t* row) { return write(i, row); });
            if (status == status_ok)
                continue;
            forget_appended(i);
            if (status != status_too_narrow)
                return fail(static_cast<status_t>(status), status == status_invalid ? "a key is out of range or already in the index"
                                                                                    : "cannot grow the key lookup");
            if (!widen_rows() || !reserve(count))
                return fail(status_out_of_memory, "cannot widen the index's rows");
            return add_rows(count, key_of, write);
        }
        size_ += count;
        if (!sketched_ && size_ > exact_up_to_)
            start_sketches();
        return status_ok;
    }

    /// Row r's sketch, from its row as it is now (a widening keeps every component, so every sketch).
    void write_sketch(std::size_t r) {
        std::uint8_t const* const row = rows_.row(r);
        std::uint64_t* const out = reinterpret_cast<std::uint64_t*>(sketches_.row(r));
        if (form_ == row_form_t::f32)
            sketches::of_floats(reinterpret_cast<float const*>(row), dimensions_, out);
        else
            sketches::of_codes(i8_record_of(row) + sizeof(float), dimensions_, out);
    }

    /// Sketches every row, once the index has grown past `exact_up_to_` rows. Only speed is at
    /// stake: where their memory cannot be had, searches stay full scans.
    void start_sketches() {
        if (!sketches_.reserve(std::max(size_, key_capacity_)))
            return;
        sketched_ = true;
        for (std::size_t r = 0; r != size_; ++r)
            write_sketch(r);
    }

    /// `add_rows` of row-major floats: each vector as a row of the narrowest form that holds it exactly.
    template <typename key_of_at> std::int32_t add_floats(std::size_t count, key_of_at const& key_of, float const* vectors) {
        return add_rows(count, key_of, [this, vectors](std::size_t i, std::uint8_t* row) {
            float const* vector = vectors + i * dimensions_;
            if (form_ == row_form_t::i8)
                return i8_rows::encode(vector, dimensions_, row);
            if (form_ == row_form_t::i4)
                return i8_rows::encode(vector, dimensions_, i8_scratch_) && i4_records::pack(i8_scratch_, dimensions_, row);
            std::memcpy(row, vector, dimensions_ * sizeof(float));
            return true;
        });
    }

    /// The form a new index's rows start in: i8 needs dimensions `estimate` cannot overflow at, and
    /// i4 as many as the stores keep at i4 (store/vector-codec.ts, `I4_MIN_DIM`).
    static row_form_t narrowest_form(std::size_t dimensions) {
        if (dimensions > i8_rows::max_dimensions)
            return row_form_t::f32;
        return dimensions >= i4_records::min_dimensions ? row_form_t::i4 : row_form_t::i8;
    }

  public:
    /// `valid()` is false when the index's scratch record cannot be allocated.
    explicit flat_index_t(std::size_t dimensions)
        : metric_(inner_product(dimensions)), dimensions_(dimensions), form_(narrowest_form(dimensions)),
          i8_scratch_(grow(static_cast<std::uint8_t*>(nullptr), i8_rows::row_bytes(dimensions))),
          rows_(row_bytes_of(form_, dimensions)), sketches_(sketches::bytes(dimensions)) {}
    ~flat_index_t() override {
        std::free(keys_);
        std::free(i8_scratch_);
    }
    bool valid() const { return i8_scratch_ != nullptr; }
    flat_index_t(flat_index_t const&) = delete;
    flat_index_t& operator=(flat_index_t const&) = delete;

    kind_t kind() const override { return kind_flat; }
    std::size_t size() const override { return size_; }
    std::size_t dimensions() const override { return dimensions_; }
    std::size_t row_bytes() const override { return row_bytes_of(form_, dimensions_); }

    /// Room for `extra` more rows, WASM memory grown once for them where it must grow (`grow_once_for`).
    bool reserve(std::size_t extra) override {
        checked_size_result_t needed = checked_add(size_, extra);
        if (!needed)
            return false;
        grow_once_for(bytes_to_reserve(needed.value));
        return reserve_keys(needed.value) && rows_.reserve(needed.value) && (!sketched_ || sketches_.reserve(needed.value)) &&
               (needed.value <= row_of_.capacity() || row_of_.try_reserve(needed.value));
    }

    /// At most the bytes `reserve` allocates for `needed` rows in all, and `start_sketches` after
    /// it where they take the index past `exact_up_to_` (each with the allocator's overhead aside).
    std::size_t bytes_to_reserve(std::size_t needed) const {
        std::size_t const keys = key_capacity_for(needed);
        std::size_t bytes = rows_.bytes_to_reserve(needed);
        if (keys > key_capacity_)
            bytes += keys * sizeof(default_key_t);
        if (sketched_ || needed > exact_up_to_)
            bytes += sketches_.bytes_to_reserve(std::max(needed, keys));
        // The lookup's new table (three slots for two keys, a power of two) beside its old one while rehashing.
        if (needed > row_of_.capacity())
            bytes += (ceil2(needed * 3 / 2 + 1) + row_of_.capacity() * 3 / 2) * (sizeof(key_and_row_t) + 1);
        return bytes;
    }

    std::int32_t add(double const* keys, float const* vectors, std::size_t count) override {
        return add_floats(count, [keys](std::size_t i) { return static_cast<default_key_t>(keys[i]); }, vectors);
    }

    /// i8 records are copied as rows as they are (packed while the rows are i4, decoded once they are f32).
    std::int32_t add_i8(double const* keys, std::uint8_t const* records, std::size_t count) override {
        std::size_t const record_bytes = i8_rows::row_bytes(dimensions_);
        return add_rows(
            count, [keys](std::size_t i) { return static_cast<default_key_t>(keys[i]); },
            [this, records, record_bytes](std::size_t i, std::uint8_t* row) { return write_i8(records + i * record_bytes, row); });
    }

    /// i4 records are copied as rows as they are (expanded straight into the rows once they are i8;
    /// expanded, then decoded, once they are f32).
    std::int32_t add_valid_i4(double const* keys, std::uint8_t const* records, std::size_t count) override {
        std::size_t const record_bytes = i4_records::record_bytes(dimensions_);
        return add_rows(
            count, [keys](std::size_t i) { return static_cast<default_key_t>(keys[i]); },
            [this, records, record_bytes](std::size_t i, std::uint8_t* row) {
                std::uint8_t const* record = records + i * record_bytes;
                if (form_ == row_form_t::i4)
                    std::memcpy(row, record, record_bytes);
                else if (form_ == row_form_t::i8)
                    i4_records::expand(record, dimensions_, row);
                else
                    return write_i8(i4_records::expand(record, dimensions_, i8_scratch_), row);
                return true;
            });
    }

    std::int32_t remove(double const* keys, std::size_t count) override {
        std::int32_t removed = 0;
        key_and_row_t gone;
        for (std::size_t i = 0; i != count; ++i) {
            if (!row_of_.pop_first(static_cast<default_key_t>(keys[i]), gone))
                continue;
            std::size_t const last = --size_;
            if (gone.row != last) {
                std::memcpy(rows_.row(gone.row), rows_.row(last), row_bytes());
                if (sketched_)
                    std::memcpy(sketches_.row(gone.row), sketches_.row(last), sketches_.row_bytes());
                keys_[gone.row] = keys_[last];
                row_of_.find(keys_[last])->row = gone.row;
            }
            ++removed;
        }
        return removed;
    }

    std::uint8_t const* row_of(default_key_t key) const override {
        auto const found = row_of_.find(key);
        return found == row_of_.end() ? nullptr : rows_.row(found->row);
    }

    /// Writes query q's `held` hits of the heap `top`, best first, at row q of the outputs (`search`'s).
    static void write_hits(hit_t* top, std::size_t held, std::size_t q, std::size_t k, double* out_keys, float* out_scores, std::uint32_t* out_found) {
        std::sort_heap(top, top + held, better);
        for (std::size_t i = 0; i != held; ++i) {
            out_keys[q * k + i] = static_cast<double>(top[i].key);
            out_scores[q * k + i] = top[i].score;
        }
        out_found[q] = static_cast<std::uint32_t>(held);
    }

    /// Keeps `hit` if it is among the `wanted` best so far: a bounded heap whose front is the worst.
    static void offer(hit_t const& hit, hit_t* top, std::size_t& held, std::size_t wanted) {
        if (held < wanted) {
            top[held++] = hit;
            std::push_heap(top, top + held, better);
        } else if (better(hit, top[0])) {
            std::pop_heap(top, top + held, better);
            top[held - 1] = hit;
            std::push_heap(top, top + held, better);
        }
    }

    /// `estimates[0 … count)` of the `count` rows at `row_at(0 … count)` (see `i8_rows::estimate`; i4
    /// rows as the i8 records they name): whole groups of rows at once where the dimensions allow,
    /// then the rest one at a time; rows a block's run (a full scan) or scattered (a prefilter's
    /// candidates: 4,096 of them took ~1.5 ms one at a time, ~1.0 ms in groups, a search of the
    /// facts of 100K messages of chat, mostly waiting on their rows' memory).
    /// `interleaved` is `query`'s steps as `i4_records::interleave_steps` orders them.
    template <typename row_at_t>
    void estimate_each(row_at_t const& row_at, std::size_t count, i8_rows::quantized_query_t const& query, std::int16_t const* interleaved,
                       float* estimates) const {
        bool const i4 = form_ == row_form_t::i4;
        std::size_t const at_once = i4 ? i4_records::rows_at_once : i8_rows::rows_at_once;
        std::size_t const grouped = dimensions_ % (i4 ? 32 : 16) == 0 ? count - count % at_once : 0;
        static_assert(i4_records::rows_at_once >= i8_rows::rows_at_once, "a group's rows fit the larger group");
        std::uint8_t const* group[i4_records::rows_at_once];
        std::size_t i = 0;
        for (; i != grouped; i += at_once) {
            for (std::size_t k = 0; k != at_once; ++k)
                group[k] = row_at(i + k);
            if (i4)
                i4_records::estimate_rows(group, interleaved, query, dimensions_, estimates + i);
            else
                i8_rows::estimate_rows(group, query, dimensions_, estimates + i);
        }
        for (; i != count; ++i)
            estimates[i] = i8_rows::estimate(i8_record_of(row_at(i)), query, dimensions_);
    }

    /// The query quantized for `estimate_each` into `steps` (room for twice the dimensions: the
    /// steps, then their interleaved order, which the returned pointer names).
    std::pair<i8_rows::quantized_query_t, std::int16_t const*> quantize_for_estimates(float const* query, std::int16_t* steps) const {
        i8_rows::quantized_query_t const quantized = i8_rows::quantize(query, dimensions_, steps);
        std::int16_t* const interleaved = steps + dimensions_;
        if (form_ == row_form_t::i4 && dimensions_ % 32 == 0)
            i4_records::interleave_steps(steps, dimensions_, interleaved);
        return {quantized, interleaved};
    }

    /// i4 or i8 rows, first pass: every row's estimated score (`estimates[r]`, see `i8_rows::estimate`)
    /// and the lowest estimate a row of the exact top `wanted` can have. An estimate sits within
    /// `largest scale · 127 · dim · step / 2` of the true inner product, and the kernel's score
    /// within γ·Σ|q·x| of it (γ ≈ (dim + 2)·2⁻²⁴ for any order of summation, Σ|q·x| ≤
    /// ‖q‖₁ · 127 · the largest scale); so a row whose estimate is more than twice their sum below
    /// the k-th best estimate has k rows scoring better and cannot make the cut.
    /// `steps` has room for twice the dimensions: the query's steps, then their interleaved order.
    float estimate_floor(float const* query, std::size_t wanted, std::int16_t* steps, float* estimates, hit_t* top) const {
        auto const [quantized, interleaved] = quantize_for_estimates(query, steps);
        std::size_t const stride = row_bytes();
        std::size_t held = 0;
        for (std::size_t b = 0, r = 0, blocks = used_blocks(); b != blocks; ++b) {
            std::size_t const rows = rows_in_block(b);
            std::uint8_t const* const first = rows_.block(b);
            estimate_each([&](std::size_t i) { return first + i * stride; }, rows, quantized, interleaved, estimates + r);
            for (std::size_t end = r + rows; r != end; ++r) {
                hit_t const hit{estimates[r], r};
                // Most rows do not beat the worst kept: checked here, not in a call per row.
                if (held < wanted || better(hit, top[0]))
                    offer(hit, top, held, wanted);
            }
        }
        return held < wanted || wanted == 0 ? -std::numeric_limits<float>::infinity() : floor_below(top[0].score, query, quantized);
    }

    /// The lowest estimate a row can have and still score at least as well as a row estimated at
    /// `kth` (see `estimate_floor`).
    float floor_below(float kth, float const* query, i8_rows::quantized_query_t const& quantized) const {
        double l1 = 0;
        for (std::size_t d = 0; d != dimensions_; ++d)
            l1 += std::fabs(query[d]);
        double const largest = 127.0 * max_scale_;
        double const estimate_error = largest * static_cast<double>(dimensions_) * quantized.step / 2;
        double const kernel_error = static_cast<double>(dimensions_ + 8) * std::ldexp(1.0, -24) * (largest * l1 + 1.0);
        // Twice the two bounds, with room for the roundings of the estimate's own last products.
        return static_cast<float>(kth - 2.5 * (estimate_error + kernel_error) - 1e-6);
    }

    /// Sets the sketch prefilter: a search of more than `exact_up_to` rows ranks every row by its
    /// sketch's distance to the query's and scores only the nearest max(`least`, `per_hit` × k) as
    /// a full scan would (so its hits are the exact ones unless a row of the exact top k was not
    /// among those); at most `exact_up_to` rows, every row is scored. Sketches are kept from when
    /// the index first holds more than `exact_up_to` rows (one more row of 8 bytes a 64 dimensions).
    /// An index of more than 65,535 dimensions (its distances would not fit their 16 bits) stays exact.
    void set_prefilter(std::size_t exact_up_to, std::size_t per_hit, std::size_t least) override {
        if (dimensions_ > std::numeric_limits<std::uint16_t>::max())
            return;
        exact_up_to_ = exact_up_to;
        candidates_per_hit_ = per_hit;
        least_candidates_ = least;
        if (!sketched_ && size_ > exact_up_to_)
            start_sketches();
    }

    /// How many rows a search for `wanted` hits scores: every row, or the prefilter's candidates.
    std::size_t scored_rows(std::size_t wanted) const {
        if (!sketched_ || size_ <= exact_up_to_ || wanted == 0)
            return size_;
        std::size_t const by_hits = candidates_per_hit_ != 0 && wanted > size_ / candidates_per_hit_ ? size_ : wanted * candidates_per_hit_;
        // Never fewer than the hits wanted, whatever the settings.
        return std::min(size_, std::max({wanted, least_candidates_, by_hits}));
    }

    /// `search` of the `candidates` rows whose sketches are nearest each query's, ties to the
    /// earlier row: they are ranked as a full scan ranks every row (estimates first where rows are
    /// i4 or i8, then usearch's kernel on those that can make the cut).
    std::int32_t search_candidates(float const* queries, std::size_t count, std::size_t k, std::size_t wanted, std::size_t candidates,
                                   double* out_keys, float* out_scores, std::uint32_t* out_found) const {
        std::size_t const words = sketches::words(dimensions_);
        bool const narrow = form_ != row_form_t::f32;
        hit_t* const top = grow(static_cast<hit_t*>(nullptr), wanted);
        float* const scratch = grow(static_cast<float*>(nullptr), dimensions_);
        std::uint16_t* const distances = grow(static_cast<std::uint16_t*>(nullptr), size_);
        std::uint32_t* const histogram = grow(static_cast<std::uint32_t*>(nullptr), 4 * (dimensions_ + 1));
        std::uint32_t* const chosen = grow(static_cast<std::uint32_t*>(nullptr), candidates);
        std::uint64_t* const query_sketch = grow(static_cast<std::uint64_t*>(nullptr), words);
        float* const estimates = narrow ? grow(static_cast<float*>(nullptr), candidates) : nullptr;
        std::int16_t* const steps = narrow ? grow(static_cast<std::int16_t*>(nullptr), 2 * dimensions_) : nullptr;
        auto release = [&] {
            std::free(top);
            std::free(scratch);
            std::free(distances);
            std::free(histogram);
            std::free(chosen);
            std::free(query_sketch);
            std::free(estimates);
            std::free(steps);
        };
        if (!top || !scratch || !distances || !histogram || !chosen || !query_sketch || (narrow && (!estimates || !steps))) {
            release();
            return fail(status_out_of_memory, "cannot allocate the search buffer");
        }
        for (std::size_t q = 0; q != count; ++q) {
            float const* query = queries + q * dimensions_;
            sketches::of_floats(query, dimensions_, query_sketch);
            for (std::size_t b = 0, r = 0; r != size_; ++b) {
                std::size_t const rows = std::min(size_ - r, sketches_.rows_per_block());
                sketches::distances(reinterpret_cast<std::uint64_t const*>(sketches_.block(b)), rows, query_sketch, words, distances + r);
                r += rows;
            }
            // Counted apart from the distances, into four histograms in turn: rows in a run often
            // share a distance, and one histogram's increments would then wait on each other.
            std::fill(histogram, histogram + 4 * (dimensions_ + 1), 0u);
            for (std::size_t r = 0; r != size_; ++r)
                ++histogram[(r % 4) * (dimensions_ + 1) + distances[r]];
            for (std::size_t d = 0; d <= dimensions_; ++d)
                histogram[d] += histogram[dimensions_ + 1 + d] + histogram[2 * (dimensions_ + 1) + d] + histogram[3 * (dimensions_ + 1) + d];
            // The nearest distance within which `candidates` rows lie; every row nearer is chosen,
            // then the first rows at it until there are `candidates`.
            std::size_t nearer = 0, at = 0;
            while (nearer + histogram[at] < candidates)
                nearer += histogram[at++];
            std::size_t chosen_count = 0, left_at = candidates - nearer;
            for (std::size_t r = 0; r != size_ && chosen_count != candidates; ++r) {
                if (distances[r] > at || (distances[r] == at && left_at == 0))
                    continue;
                if (distances[r] == at)
                    --left_at;
                chosen[chosen_count++] = static_cast<std::uint32_t>(r);
            }
            std::size_t held = 0;
            float floor = -std::numeric_limits<float>::infinity();
            if (narrow) {
                auto const [quantized, interleaved] = quantize_for_estimates(query, steps);
                estimate_each([&](std::size_t i) { return rows_.row(chosen[i]); }, chosen_count, quantized, interleaved, estimates);
                for (std::size_t i = 0; i != chosen_count; ++i)
                    offer(hit_t{estimates[i], i}, top, held, wanted);
                if (held == wanted)
                    floor = floor_below(top[0].score, query, quantized);
                held = 0;
            }
            for (std::size_t i = 0; i != chosen_count; ++i) {
                if (narrow && estimates[i] < floor)
                    continue;
                byte_t const* vector = reinterpret_cast<byte_t const*>(floats_of(rows_.row(chosen[i]), scratch));
                offer(hit_t{score_of(metric_(vector, reinterpret_cast<byte_t const*>(query))), keys_[chosen[i]]}, top, held, wanted);
            }
            write_hits(top, held, q, k, out_keys, out_scores, out_found);
        }
        release();
        return status_ok;
    }

    /// Scores every row with usearch's kernel (an i4 or i8 row decoded to its floats first; only the
    /// rows whose estimate reaches `estimate_floor`), keeping the k best; then sorts them best first.
    /// So i4 and i8 rows give the very hits and scores their f32 rows would. Past the prefilter's
    /// size (`set_prefilter`), only its candidates are scored (`search_candidates`).
    std::int32_t search(float const* queries, std::size_t count, std::size_t k, double* out_keys, float* out_scores,
                        std::uint32_t* out_found) const override {
        std::size_t const wanted = std::min(k, size_);
        std::size_t const scored = scored_rows(wanted);
        if (scored < size_)
            return search_candidates(queries, count, k, wanted, scored, out_keys, out_scores, out_found);
        hit_t* const top = grow(static_cast<hit_t*>(nullptr), std::max<std::size_t>(wanted, 1));
        float* const scratch = grow(static_cast<float*>(nullptr), dimensions_);
        bool const narrow = form_ != row_form_t::f32;
        float* const estimates = narrow ? grow(static_cast<float*>(nullptr), std::max<std::size_t>(size_, 1)) : nullptr;
        std::int16_t* const steps = narrow ? grow(static_cast<std::int16_t*>(nullptr), 2 * dimensions_) : nullptr;
        if (!top || !scratch || (narrow && (!estimates || !steps))) {
            std::free(top);
            std::free(scratch);
            std::free(estimates);
            std::free(steps);
            return fail(status_out_of_memory, "cannot allocate the search buffer");
        }
        std::size_t const stride = row_bytes();
        for (std::size_t q = 0; q != count; ++q) {
            float const* query = queries + q * dimensions_;
            float const floor = narrow ? estimate_floor(query, wanted, steps, estimates, top) : 0;
            std::size_t held = 0;
            for (std::size_t b = 0, r = 0, blocks = used_blocks(); b != blocks; ++b) {
                std::uint8_t const* row = rows_.block(b);
                default_key_t const* key = keys_ + b * rows_.rows_per_block();
                for (std::size_t i = 0, rows = rows_in_block(b); i != rows; ++i, ++r, row += stride) {
                    if (narrow && estimates[r] < floor)
                        continue;
                    byte_t const* vector = reinterpret_cast<byte_t const*>(floats_of(row, scratch));
                    offer(hit_t{score_of(metric_(vector, reinterpret_cast<byte_t const*>(query))), key[i]}, top, held, wanted);
                }
            }
            write_hits(top, held, q, k, out_keys, out_scores, out_found);
        }
        std::free(top);
        std::free(scratch);
        std::free(estimates);
        std::free(steps);
        return status_ok;
    }

    std::size_t payload_length() const override {
        return sizeof(std::uint64_t) + size_ * (sizeof(default_key_t) + dimensions_ * sizeof(float));
    }

    bool write_payload(std::uint8_t* out) const override {
        float* const scratch = grow(static_cast<float*>(nullptr), dimensions_);
        if (!scratch) {
            fail(status_out_of_memory, "cannot allocate the serialization buffer");
            return false;
        }
        write_le<std::uint64_t>(out, size_);
        out += sizeof(std::uint64_t);
        std::memcpy(out, keys_, size_ * sizeof(default_key_t));
        out += size_ * sizeof(default_key_t);
        for (std::size_t r = 0; r != size_; ++r, out += dimensions_ * sizeof(float))
            std::memcpy(out, floats_of(rows_.row(r), scratch), dimensions_ * sizeof(float));
        std::free(scratch);
        return true;
    }

    /// Fills an empty index from a version-2 payload; a status other than ok means the bytes are bad.
    std::int32_t read_payload(std::uint8_t const* payload, std::size_t length) {
        std::size_t const per_row = sizeof(default_key_t) + dimensions_ * sizeof(float);
        if (length < sizeof(std::uint64_t))
            return fail(status_corrupt, "flat index payload is truncated");
        std::uint64_t const rows = read_le<std::uint64_t>(payload);
        if (rows > (length - sizeof(std::uint64_t)) / per_row || sizeof(std::uint64_t) + rows * per_row != length)
            return fail(status_corrupt, "flat index row count does not match its length");
        std::uint8_t const* stored_keys = payload + sizeof(std::uint64_t);
        // The rows start 8 + 8n bytes into a payload that follows the 32-byte header, so they are
        // as aligned as the bytes handed in.
        float const* stored_rows = reinterpret_cast<float const*>(stored_keys + rows * sizeof(default_key_t));
        std::int32_t const status = add_floats(
            rows, [stored_keys](std::size_t r) { return read_le<default_key_t>(stored_keys + r * sizeof(default_key_t)); },
            stored_rows);
        if (status == status_out_of_memory)
            return status;
        if (status != status_ok)
            return fail(status_corrupt, "flat index keys are out of range or repeated");
        return status_ok;
    }
};

/// Converts `count` records into one buffer of `per_record` elements each (`convert(i, out)`),
/// adds them with `add(buffer)`, and frees it; `what` names the buffer if it cannot be allocated.
template <typename element_at, typename convert_at, typename add_at>
std::int32_t add_converted(std::size_t count, std::size_t per_record, char const* what, convert_at const& convert, add_at const& add) {
    element_at* const converted = grow(static_cast<element_at*>(nullptr), std::max<std::size_t>(count * per_record, 1));
    if (!converted)
        return fail(status_out_of_memory, what);
    for (std::size_t i = 0; i != count; ++i)
        convert(i, converted + i * per_record);
    std::int32_t const status = add(converted);
    std::free(converted);
    return status;
}

std::int32_t prism_index_t::add_i8(double const* keys, std::uint8_t const* records, std::size_t count) {
    std::size_t const dims = dimensions();
    return add_converted<float>(
        count, dims, "cannot allocate the decoded vectors",
        [records, dims](std::size_t i, float* out) { i8_rows::decode(records + i * i8_rows::row_bytes(dims), dims, out); },
        [this, keys, count](float const* vectors) { return add(keys, vectors, count); });
}

std::int32_t prism_index_t::add_i4(double const* keys, std::uint8_t const* records, std::size_t count) {
    std::size_t const dims = dimensions();
    for (std::size_t i = 0; i != count; ++i)
        if (!i4_records::valid(records + i * i4_records::record_bytes(dims), dims))
            return fail(status_invalid, "an i4 record has a half byte of 15, which no level is");
    return add_valid_i4(keys, records, count);
}

std::int32_t prism_index_t::add_valid_i4(double const* keys, std::uint8_t const* records, std::size_t count) {
    std::size_t const dims = dimensions();
    return add_converted<std::uint8_t>(
        count, i8_rows::row_bytes(dims), "cannot allocate the expanded records",
        [records, dims](std::size_t i, std::uint8_t* out) { i4_records::expand(records + i * i4_records::record_bytes(dims), dims, out); },
        [this, keys, count](std::uint8_t const* expanded) { return add_i8(keys, expanded, count); });
}

/// The approximate kind: usearch's HNSW `index_dense_t`.
class hnsw_index_t final : public prism_index_t {
    index_dense_t index_;

  public:
    explicit hnsw_index_t(index_dense_t index) : index_(std::move(index)) {}

    kind_t kind() const override { return kind_hnsw; }
    std::size_t size() const override { return index_.size(); }
    std::size_t dimensions() const override { return index_.dimensions(); }
    std::size_t row_bytes() const override { return index_.dimensions() * sizeof(float); }

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

/// A new flat index, or null (the last error set) when its scratch record cannot be allocated.
flat_index_t* make_flat(std::size_t dimensions) {
    flat_index_t* index = new flat_index_t(dimensions);
    if (index->valid())
        return index;
    delete index;
    fail(status_out_of_memory, "cannot allocate a flat index");
    return nullptr;
}

prism_index_t* load_flat(std::size_t dimensions, std::uint8_t const* payload, std::size_t length) {
    flat_index_t* index = make_flat(dimensions);
    if (index && index->read_payload(payload, length) != status_ok) {
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
        return make_flat(dimensions);
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
EMSCRIPTEN_KEEPALIVE std::uint32_t prism_index_row_bytes(prism_index_t const* handle) {
    return static_cast<std::uint32_t>(handle->row_bytes());
}

EMSCRIPTEN_KEEPALIVE std::uint32_t prism_index_kind(prism_index_t const* handle) { return handle->kind(); }

// Lets the caller add one large batch in chunks, or several batches, without reallocating between them.
EMSCRIPTEN_KEEPALIVE std::int32_t prism_index_reserve(prism_index_t* handle, std::uint32_t extra) {
    return handle->reserve(extra) ? status_ok : fail(status_out_of_memory, "cannot reserve memory for the new vectors");
}

// All-or-nothing: a key already present fails the whole batch and leaves the index as it was.
EMSCRIPTEN_KEEPALIVE std::int32_t prism_index_add(prism_index_t* handle, double const* keys, float const* vectors,
                                                  std::uint32_t count) {
    return handle->add(keys, vectors, count);
}

// `prism_index_add` for i8 records (f32 scale, then a signed byte a dimension), all or nothing.
EMSCRIPTEN_KEEPALIVE std::int32_t prism_index_add_i8(prism_index_t* handle, double const* keys, std::uint8_t const* records,
                                                     std::uint32_t count) {
    return handle->add_i8(keys, records, count);
}

// `prism_index_add` for i4 records (f32 scale, then a half byte a dimension), all or nothing.
EMSCRIPTEN_KEEPALIVE std::int32_t prism_index_add_i4(prism_index_t* handle, double const* keys, std::uint8_t const* records,
                                                     std::uint32_t count) {
    return handle->add_i4(keys, records, count);
}

// The row of one key (the vector as added: an i8 record or its floats, as `prism_index_row_bytes`
// tells), valid until the index next changes; 0 when the key is absent or the kind is hnsw. Lets
// the caller read a vector back instead of keeping a copy of its own.
EMSCRIPTEN_KEEPALIVE std::uint8_t const* prism_index_row(prism_index_t const* handle, double key) {
    return key >= 0 && key <= static_cast<double>(max_key) ? handle->row_of(static_cast<default_key_t>(key)) : nullptr;
}

// The flat kind's sketch prefilter (`flat_index_t::set_prefilter`); an hnsw index ignores it.
EMSCRIPTEN_KEEPALIVE void prism_index_set_prefilter(prism_index_t* handle, std::uint32_t exact_up_to, std::uint32_t per_hit, std::uint32_t least) {
    handle->set_prefilter(exact_up_to, per_hit, least);
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
