import createUsearchModule from '../../wasm/usearch.mjs';
import type { UsearchModule } from '../../wasm/usearch.mjs';
import { PrismError, type PrismErrorCode } from '../errors.ts';
import { decodeVector, i4RecordDot, i4RecordPairDot, i8RecordDot, i8RecordPairDot } from '../store/vector-codec.ts';
import { dot } from '../util/vectors.ts';
import { recordBytes, type IndexKind, type IndexRows, type RecordForm, type SearchHit, type VectorIndex } from './types.ts';
import { checkK, checkKeys, checkRecords, checkRows, compareHits } from './validate.ts';

/**
 * Where the usearch WASM comes from: its bytes (Node reads them from disk), a precompiled
 * `WebAssembly.Module` (workerd imports `.wasm` files as one), or a URL to fetch (browser;
 * e.g. a bundler's `?url` import).
 */
export type UsearchWasmSource = ArrayBuffer | Uint8Array | WebAssembly.Module | URL | string;

export interface IndexOptions {
  dim: number;
  /**
   * 'flat' (default) is exact search, like FAISS IndexFlatIP: the vectors in row-major blocks of
   * about 4 MB plus their keys, every row scored as its floats by usearch's inner-product kernel.
   * Adding is an encode or a copy, and the index holds little beyond `bytesPerVector` per vector
   * (4 + ⌈dim / 2⌉ for vectors a store rounded to i4, dim + 4 for i8 ones, else 4 × dim). 'hnsw' is approximate:
   * usearch's HNSW graph, which costs a graph insertion per add and memory for the graph.
   */
  kind?: IndexKind;
  /** HNSW graph degree; 0 or absent = usearch's default (16). */
  connectivity?: number;
  /** HNSW beam width while adding; 0 or absent = usearch's default (128). */
  expansionAdd?: number;
  /** HNSW beam width while searching; 0 or absent = usearch's default (64). */
  expansionSearch?: number;
  /**
   * Flat kind: the sketch prefilter, which takes over from the full scan in large indexes. A
   * search of an index with more than `exactUpTo` rows first ranks every row by its sketch (one
   * sign bit a dimension: 48 bytes a MiniLM vector, a quarter of its i4 row) by how many bits differ from the
   * query's, then scores only the nearest max(`least`, `perHit` × k) rows as the full scan
   * scores every row. Its hits are then the exact ones unless one of the exact top k was not among
   * those rows (see the README's *What takes over above the flat index* for the recall measured).
   * Up to `exactUpTo` rows, or with `false`, every search is exact, as is every search of an
   * index of more than 65,535 dimensions. Sketches cost 8 bytes a 64 dimensions a row, kept from
   * when the index first outgrows `exactUpTo`.
   * Default `DEFAULT_PREFILTER`: past 65,536 rows, 32 a hit, at least 4,096.
   */
  prefilter?: Partial<Prefilter> | false;
}

/** The flat kind's sketch prefilter (`IndexOptions.prefilter`). */
export interface Prefilter {
  /** The most rows an index searches exactly; 0 = prefilter every search. */
  exactUpTo: number;
  /** Rows scored a hit wanted. */
  perHit: number;
  /** The fewest rows scored. */
  least: number;
}

/**
 * The prefilter a flat index gets. On 100K real MiniLM vectors (sentences of LongMemEval chat, i4
 * as the stores keep them; `npm run bench`, bench/prefilter.bench.ts) it returns 0.999 of the
 * exact top 30 and 0.997 of the top 240 in 0.39–0.49× the full scan's time; past 65,536 rows a
 * full scan takes ~2 ms a search in Node, and ~10 ms for the 317K facts of 100K messages of chat.
 * No memory of the LoCoMo or LongMemEval benchmarks reaches it (the pooled LoCoMo memory holds
 * 17,423 vectors over its four layers), so their results are the exact search's.
 */
export const DEFAULT_PREFILTER: Readonly<Prefilter> = { exactUpTo: 65_536, perHit: 32, least: 4096 };

/** One instantiated WASM module; every index it makes lives in its memory. */
export interface UsearchWasm {
  createIndex(options: IndexOptions): UsearchIndex;
  /** Restores an index from `UsearchIndex.serialize()` bytes; bad bytes → CORRUPT_CHECKPOINT. */
  loadIndex(bytes: Uint8Array): UsearchIndex;
}

const KIND_CODE: Record<IndexKind, number> = { flat: 0, hnsw: 1 };
const KIND_BY_CODE: readonly IndexKind[] = ['flat', 'hnsw'];

/** Status codes of usearch_binding.cpp. */
const STATUS_ERROR: Record<number, PrismErrorCode> = { 1: 'INVALID_INPUT', 2: 'OUT_OF_MEMORY', 3: 'CORRUPT_CHECKPOINT' };

/** Bytes of rows copied into WASM per add call, so a large batch does not need a second full copy in memory. */
const ADD_CHUNK_BYTES = 4 << 20;

/**
 * The scan warm-up (`warmUpScan`): the rows and searches of its throwaway index, and the size of
 * a flat index that calls for it. V8 starts a WASM function at its baseline tier and runs
 * optimised code only from its next call on, so the first search of an opened memory scanned
 * every row at the baseline tier: in Node, one index of 140K i8 rows (the vectors of 30,000
 * messages of chat) took 25–43 ms for its first search and 10–14 ms for the next; with the
 * scan warmed as the index filled, 15–17 ms for the first. The warm-up costs 10–25 ms, once a
 * module, so it runs only when a flat index first reaches `fromRows` (the facts of some 7,000
 * messages of chat), while the memory is still opening.
 */
const WARM_UP = { dim: 384, rows: 2048, searches: 8, fromRows: 20_000 } as const;

export async function loadUsearchWasm(source: UsearchWasmSource): Promise<UsearchWasm> {
  let module: UsearchModule;
  try {
    const compiled = await compile(source);
    // Emscripten's ready promise never settles if instantiation fails inside the hook, so the
    // failure races it.
    let reportFailure: (error: unknown) => void = () => {};
    const failed = new Promise<never>((_, reject) => (reportFailure = reject));
    module = await Promise.race([
      createUsearchModule({
        instantiateWasm(imports, receive) {
          WebAssembly.instantiate(compiled, imports).then((instance) => receive(instance, compiled), reportFailure);
          return {};
        },
        // Never consulted (we instantiate ourselves) but keeps the loader from resolving a URL
        // against `import.meta.url`, which some runtimes do not provide.
        locateFile: (path) => path,
      }),
      failed,
    ]);
  } catch (error) {
    if (error instanceof PrismError) throw error;
    throw new PrismError('WASM_LOAD_FAILED', 'cannot load the usearch WASM module', { cause: error });
  }
  return new UsearchWasmRuntime(module);
}

/**
 * Runs the flat scan over rows of `form`, as an opened memory's first search does, on made-up rows
 * (see `WARM_UP`): each form has its own first-pass kernel.
 */
function warmUpScan(runtime: UsearchWasmRuntime, form: RecordForm): void {
  const { dim, rows, searches } = WARM_UP;
  const bytes = recordBytes(dim, form);
  const records = new Uint8Array(rows * bytes);
  const view = new DataView(records.buffer);
  // A record is its scale, then its codes in −127…127 (i8) or two half bytes in 0…14 a byte (i4;
  // store/vector-codec.ts). Sixteen rows that differ, repeated, so that the scan's bound passes
  // over some rows and scores others.
  const distinct = 16;
  for (let row = 0; row < distinct; row++) {
    view.setFloat32(row * bytes, 1 / 127, true);
    for (let i = 4; i < bytes; i++) {
      const seed = row * 31 + i * 7;
      records[row * bytes + i] = form === 'i8' ? ((seed % 255) - 127) & 0xff : (seed % 15) | ((seed % 13) << 4);
    }
  }
  for (let filled = distinct; filled < rows; filled *= 2) records.copyWithin(filled * bytes, 0, Math.min(filled, rows - filled) * bytes);
  const index = runtime.createIndex({ dim });
  try {
    index.addRecords(Array.from({ length: rows }, (_, row) => row), records, form);
    const query = new Float32Array(dim).map((_, i) => Math.sin(i));
    for (let i = 0; i < searches; i++) index.search(query, 10);
  } finally {
    index.dispose();
  }
}

async function compile(source: UsearchWasmSource): Promise<WebAssembly.Module> {
  if (source instanceof WebAssembly.Module) return source;
  if (source instanceof ArrayBuffer) return WebAssembly.compile(source);
  // Copying (150 KB) also turns a view over a SharedArrayBuffer into the plain buffer compile() requires.
  if (source instanceof Uint8Array) return WebAssembly.compile(new Uint8Array(source));
  const response = await fetch(source);
  if (!response.ok) throw new PrismError('WASM_LOAD_FAILED', `fetching ${String(source)}: HTTP ${response.status}`);
  return WebAssembly.compile(await response.arrayBuffer());
}

class UsearchWasmRuntime implements UsearchWasm {
  private readonly module: UsearchModule;
  /** `memoryViews`' views, of the buffer the linear memory had when they were made. */
  private views: { codes: Int8Array; view: DataView } | undefined;
  /** The row forms whose scan has been warmed (see `warmUpScan`). */
  private readonly warmedForms = new Set<RecordForm>();

  constructor(module: UsearchModule) {
    this.module = module;
  }

  createIndex(options: IndexOptions): UsearchIndex {
    const { dim, kind = 'flat', connectivity = 0, expansionAdd = 0, expansionSearch = 0, prefilter = {} } = options;
    // `false`: never past any size (rows are counted in 32 bits).
    const sketched = prefilter === false ? { ...DEFAULT_PREFILTER, exactUpTo: 0xffff_ffff } : { ...DEFAULT_PREFILTER, ...prefilter };
    const integers = { dim, connectivity, expansionAdd, expansionSearch, 'prefilter.exactUpTo': sketched.exactUpTo, 'prefilter.perHit': sketched.perHit, 'prefilter.least': sketched.least };
    for (const [name, value] of Object.entries(integers)) {
      if (!Number.isSafeInteger(value) || value < 0 || value > 0xffff_ffff) {
        throw new PrismError('INVALID_INPUT', `${name} must be a non-negative 32-bit integer, got ${value}`);
      }
    }
    if (dim === 0) throw new PrismError('INVALID_INPUT', 'dim must be positive');
    if (!Object.hasOwn(KIND_CODE, kind)) throw new PrismError('INVALID_INPUT', `unknown index kind ${String(kind)}`);
    const handle = this.module._prism_index_create(dim, KIND_CODE[kind], connectivity, expansionAdd, expansionSearch);
    if (handle === 0) throw this.lastError('INVALID_INPUT');
    return this.indexOf(handle, sketched);
  }

  /** A loaded flat index gets `DEFAULT_PREFILTER`. */
  loadIndex(bytes: Uint8Array): UsearchIndex {
    if (!(bytes instanceof Uint8Array)) throw new PrismError('INVALID_INPUT', 'index bytes must be a Uint8Array');
    const handle = this.withCopy(bytes, (pointer) => this.module._prism_index_load(pointer, bytes.length));
    if (handle === 0) throw this.lastError('CORRUPT_CHECKPOINT');
    return this.indexOf(handle, DEFAULT_PREFILTER);
  }

  /** The index of a new handle, given `prefilter` (which only the flat kind acts on). */
  private indexOf(handle: number, prefilter: Prefilter): UsearchIndex {
    this.module._prism_index_set_prefilter(handle, prefilter.exactUpTo, prefilter.perHit, prefilter.least);
    return new UsearchIndex(this, handle);
  }

  /** @internal The module the indexes call into. */
  get wasm(): UsearchModule {
    return this.module;
  }

  /** @internal Allocates `bytes` of WASM memory for the duration of `use`. */
  withAllocation<T>(bytes: number, use: (pointer: number) => T): T {
    const pointer = this.module._malloc(Math.max(bytes, 1));
    if (pointer === 0) throw new PrismError('OUT_OF_MEMORY', `WASM memory cannot grow by ${bytes} bytes`);
    try {
      return use(pointer);
    } finally {
      this.module._free(pointer);
    }
  }

  /** @internal Copies a typed array into WASM memory for the duration of `use`. */
  withCopy<T>(data: Uint8Array | Float32Array | Float64Array, use: (pointer: number) => T): T {
    return this.withAllocation(data.byteLength, (pointer) => {
      this.module.HEAPU8.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), pointer);
      return use(pointer);
    });
  }

  /** @internal The binding's last error message as a PrismError. */
  lastError(code: PrismErrorCode): PrismError {
    const heap = this.module.HEAPU8;
    const start = this.module._prism_last_error();
    const end = heap.indexOf(0, start);
    return new PrismError(code, `usearch: ${new TextDecoder().decode(heap.subarray(start, end))}`);
  }

  /**
   * @internal The linear memory as signed bytes and as a view for scales, made again only when
   * memory grows (growth replaces the buffer): a search reads thousands of rows one at a time.
   */
  memoryViews(): { codes: Int8Array; view: DataView } {
    const buffer = this.module.HEAPU8.buffer;
    if (this.views?.codes.buffer !== buffer) this.views = { codes: new Int8Array(buffer), view: new DataView(buffer) };
    return this.views;
  }

  /**
   * @internal Warms the flat scan of `index`'s row form (`WARM_UP`) the first time a flat index of
   * this module with rows of that form holds `WARM_UP.fromRows` rows or more (f32 rows have no
   * first pass to warm).
   */
  warmScanAfterAdd(index: UsearchIndex): void {
    if (index.kind !== 'flat' || index.size < WARM_UP.fromRows) return;
    const form = index.rowForm;
    if (form === 'f32' || this.warmedForms.has(form)) return;
    this.warmedForms.add(form);
    try {
      warmUpScan(this, form);
    } catch {
      // Only speed is at stake, and the add that called it has happened: a module that cannot
      // spare the throwaway index's 800 KB scans at the baseline tier first, as before.
    }
  }

  /** @internal Throws for a non-zero binding status. */
  check(status: number): void {
    if (status !== 0) throw this.lastError(STATUS_ERROR[status] ?? 'INVALID_INPUT');
  }
}

/**
 * An inner-product index over f32 vectors living in WASM memory (usearch_binding.cpp): the flat kind
 * is an exact scan over packed rows, the hnsw kind is usearch's `index_dense`. Call `dispose()` when done.
 */
export class UsearchIndex implements VectorIndex {
  readonly dim: number;
  readonly kind: IndexKind;
  /** The flat kind's rows, read in place; usearch's HNSW graph keeps none to hand out. */
  readonly rows: IndexRows | undefined;
  private readonly runtime: UsearchWasmRuntime;
  private handle: number;

  /** @internal Use `UsearchWasm.createIndex` or `loadIndex`. */
  constructor(runtime: UsearchWasmRuntime, handle: number) {
    this.runtime = runtime;
    this.handle = handle;
    this.dim = runtime.wasm._prism_index_dimensions(handle);
    this.kind = KIND_BY_CODE[runtime.wasm._prism_index_kind(handle)] ?? 'flat';
    this.rows = this.kind === 'flat' ? { vector: (key) => this.vectorOf(key), dot: (key, query) => this.dotOf(key, query), pairDot: (a, b) => this.pairDotOf(a, b) } : undefined;
  }

  get size(): number {
    return this.runtime.wasm._prism_index_size(this.live());
  }

  /**
   * Bytes one vector's row takes in WASM memory. A flat index keeps a vector's i4 record
   * (4 + ⌈dim / 2⌉, src/store/vector-codec.ts) while every vector added is one, as the vectors of
   * a memory on a SQL or IndexedDB store at their default precision are; else its i8 encoding
   * (dim + 4) while every vector rebuilds bit for bit from one; else 4 × dim. HNSW keeps 4 × dim.
   */
  get bytesPerVector(): number {
    return this.runtime.wasm._prism_index_row_bytes(this.live());
  }

  /** How the rows hold vectors, told by their length (`bytesPerVector`). */
  get rowForm(): RecordForm | 'f32' {
    const bytes = this.bytesPerVector;
    if (bytes === this.dim * 4) return 'f32';
    // i4 rows exist only from 8 dimensions on, where their length differs from the other two.
    return bytes === recordBytes(this.dim, 'i8') ? 'i8' : 'i4';
  }

  /**
   * Room for `count` more vectors, taken from WASM memory in one growth (`VectorIndex.reserve`):
   * V8 counts each growth of a WASM memory as external memory and answers it with a collection of
   * the whole JS heap, so an open whose adds grew it a block at a time collected a heap of ~0.4 GB
   * a dozen times at 100K messages. OUT_OF_MEMORY when the room cannot be had.
   */
  reserve(count: number): void {
    if (!Number.isSafeInteger(count) || count < 0 || count > 0xffff_ffff) throw new PrismError('INVALID_INPUT', `cannot reserve room for ${count} vectors`);
    this.runtime.check(this.runtime.wasm._prism_index_reserve(this.live(), count));
  }

  /** All or nothing: an invalid row, or a key already in the index, leaves the index unchanged. */
  add(keys: readonly number[], vectors: Float32Array): void {
    checkKeys(keys);
    checkRows(vectors, this.dim, keys.length);
    this.addInChunks(keys, vectors, this.dim, (wasm, handle, keysPointer, rowsPointer, count) => wasm._prism_index_add(handle, keysPointer, rowsPointer, count));
  }

  /**
   * `add` for records (see `VectorIndex.addRecords`): a flat index keeps an i4 record as an i4
   * row as it is, and packs an i8 record whose codes are all levels into one; i8 rows take i8
   * records as they are and i4 ones expanded, with no floats in between. All or nothing, as
   * `add`; an i4 half byte that names no level is INVALID_INPUT.
   */
  addRecords(keys: readonly number[], records: Uint8Array, form: RecordForm = 'i8'): void {
    checkKeys(keys);
    checkRecords(records, this.dim, keys.length, form);
    const addChunk = form === 'i4' ? '_prism_index_add_i4' : '_prism_index_add_i8';
    this.addInChunks(keys, records, recordBytes(this.dim, form), (wasm, handle, keysPointer, rowsPointer, count) => wasm[addChunk](handle, keysPointer, rowsPointer, count));
  }

  /** Copies the rows into WASM a chunk at a time and adds each chunk; a failing chunk undoes the ones before it. */
  private addInChunks<Rows extends Float32Array | Uint8Array>(
    keys: readonly number[],
    rows: Rows,
    perRow: number,
    addChunk: (wasm: UsearchModule, handle: number, keysPointer: number, rowsPointer: number, count: number) => number,
  ): void {
    const handle = this.live();
    if (keys.length === 0) return;
    const { runtime } = this;
    const wasm = runtime.wasm;
    runtime.withCopy(Float64Array.from(keys), (keysPointer) => {
      runtime.check(wasm._prism_index_reserve(handle, keys.length));
      const rowsPerChunk = Math.max(1, Math.floor((ADD_CHUNK_BYTES / rows.BYTES_PER_ELEMENT) / perRow));
      for (let start = 0; start < keys.length; start += rowsPerChunk) {
        const count = Math.min(rowsPerChunk, keys.length - start);
        const chunk = rows.subarray(start * perRow, (start + count) * perRow);
        const status = runtime.withCopy(chunk, (rowsPointer) => addChunk(wasm, handle, keysPointer + start * 8, rowsPointer, count));
        if (status !== 0) {
          // Each chunk is atomic in C++; undo the chunks before it so the whole batch is.
          const error = runtime.lastError(STATUS_ERROR[status] ?? 'INVALID_INPUT');
          wasm._prism_index_remove(handle, keysPointer, start);
          throw error;
        }
      }
    });
    runtime.warmScanAfterAdd(this);
  }

  /** Where the row of `key` starts in WASM memory (valid until the index next changes), or 0. */
  private rowOf(key: number): number {
    return Number.isSafeInteger(key) && key >= 0 ? this.runtime.wasm._prism_index_row(this.live(), key) : 0;
  }

  private vectorOf(key: number): Float32Array | undefined {
    const row = this.rowOf(key);
    return row === 0 ? undefined : decodeVector(this.runtime.wasm.HEAPU8.subarray(row, row + this.bytesPerVector), this.dim);
  }

  private dotOf(key: number, query: Float32Array): number | undefined {
    const row = this.rowOf(key);
    if (row === 0) return undefined;
    const form = this.rowForm;
    if (form === 'f32') return dot(this.runtime.wasm.HEAPF32.subarray(row / 4, row / 4 + this.dim), query);
    if (form === 'i8') {
      const { view, codes } = this.runtime.memoryViews();
      return i8RecordDot(view, codes, row, this.dim, query);
    }
    const { view } = this.runtime.memoryViews();
    return i4RecordDot(this.runtime.wasm.HEAPU8, view, row, this.dim, query);
  }

  private pairDotOf(a: number, b: number): number | undefined {
    const rowA = this.rowOf(a);
    const rowB = this.rowOf(b);
    if (rowA === 0 || rowB === 0) return undefined;
    const form = this.rowForm;
    if (form === 'f32') {
      const floats = this.runtime.wasm.HEAPF32;
      return dot(floats.subarray(rowA / 4, rowA / 4 + this.dim), floats.subarray(rowB / 4, rowB / 4 + this.dim));
    }
    if (form === 'i8') {
      const { view, codes } = this.runtime.memoryViews();
      return i8RecordPairDot(view, codes, rowA, view, codes, rowB, this.dim);
    }
    // i4 rows stay i4 in WASM memory (their half bytes were checked when they were added) and are read as they are.
    const { view } = this.runtime.memoryViews();
    const bytes = this.runtime.wasm.HEAPU8;
    return i4RecordPairDot(bytes, view, rowA, bytes, view, rowB, this.dim);
  }

  remove(keys: readonly number[]): number {
    const handle = this.live();
    checkKeys(keys);
    if (keys.length === 0) return 0;
    const { runtime } = this;
    const removed = runtime.withCopy(Float64Array.from(keys), (pointer) =>
      runtime.wasm._prism_index_remove(handle, pointer, keys.length),
    );
    if (removed < 0) runtime.check(-removed);
    return removed;
  }

  search(queries: Float32Array, k: number): SearchHit[][] {
    const handle = this.live();
    checkK(k);
    const queryCount = checkRows(queries, this.dim);
    const size = this.size;
    if (size === 0) return Array.from({ length: queryCount }, () => []);
    const wanted = Math.min(k, size);
    const { runtime } = this;
    const slots = queryCount * wanted;
    // One allocation for the outputs: keys (f64), then scores (f32), then per-query counts (u32).
    return runtime.withCopy(queries, (queriesPointer) =>
      runtime.withAllocation(slots * 8 + slots * 4 + queryCount * 4, (outPointer) => {
        const scoresPointer = outPointer + slots * 8;
        const foundPointer = scoresPointer + slots * 4;
        runtime.check(
          runtime.wasm._prism_index_search(
            handle,
            queriesPointer,
            queryCount,
            wanted,
            outPointer,
            scoresPointer,
            foundPointer,
          ),
        );
        const wasm = runtime.wasm;
        const outKeys = wasm.HEAPF64.subarray(outPointer / 8, outPointer / 8 + slots);
        const outScores = wasm.HEAPF32.subarray(scoresPointer / 4, scoresPointer / 4 + slots);
        const found = wasm.HEAPU32.subarray(foundPointer / 4, foundPointer / 4 + queryCount);
        const results: SearchHit[][] = [];
        for (let q = 0; q < queryCount; q++) {
          const hits: SearchHit[] = [];
          for (let i = 0; i < found[q]!; i++) hits.push({ key: outKeys[q * wanted + i]!, score: outScores[q * wanted + i]! });
          // The flat kind returns this order already; usearch's HNSW orders equal scores arbitrarily.
          results.push(hits.sort(compareHits));
        }
        return results;
      }),
    );
  }

  /** A self-describing, checksummed snapshot: kind, dim, then keys and vectors (flat) or usearch's graph (hnsw). */
  serialize(): Uint8Array {
    const handle = this.live();
    const { runtime } = this;
    const length = runtime.wasm._prism_index_serialized_length(handle);
    return runtime.withAllocation(length, (pointer) => {
      runtime.check(runtime.wasm._prism_index_serialize(handle, pointer, length));
      return runtime.wasm.HEAPU8.slice(pointer, pointer + length);
    });
  }

  dispose(): void {
    if (this.handle === 0) return;
    this.runtime.wasm._prism_index_destroy(this.handle);
    this.handle = 0;
  }

  private live(): number {
    if (this.handle === 0) throw new PrismError('INVALID_INPUT', 'the index has been disposed');
    return this.handle;
  }
}
