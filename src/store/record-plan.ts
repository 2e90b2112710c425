import { canDeriveEdges, DERIVED_EDGE_TYPES, derivedEdge, derivedEdgeSources, derivedEdgesOf, derivedTarget, type DerivedEdgeType, type NodeEdgeKeys } from '../graph/derived-edges.ts';
import { edgeId, type Chunk, type GraphEdge, type GraphNode } from '../graph/types.ts';
import { FactColumns, factNode } from '../graph/fact-columns.ts';
import { addPlainFact, decodeEdge, decodeNode, encodeNode, ENTITY_PAGE_IDS, entityPaging, storedPageCount, ReadSharing, withoutFoldedEdge, type WrittenList } from './record-codec.ts';
import { noFoldedEdges, type FoldedEdgeLists } from './types.ts';

/**
 * Which rows a store writes for a batch's nodes and edges, and how it reads them back, in the
 * compact forms of record-codec: derived edges folded into their nodes, long Entity chunk lists in
 * pages. Pure functions over plain records, so that every store (SQL, IndexedDB) writes the same
 * rows and only fetches records its own way. Planning a batch reads a few stored records, all
 * named by the batch itself: a store fetches `recordReads(batch)` inside its transaction (or
 * under its writer lock), then `planRecords` says what to write.
 */

/** The stored records planning a batch reads: node JSON by id, and the chunks of the nodes it puts. */
export interface RecordReads {
  nodeIds: string[];
  chunkIds: string[];
}

/** An Entity's pages (see record-codec) a batch writes, and the first stored page that goes (null: none). */
export interface PageWrite {
  id: string;
  put: Array<[page: number, json: string]>;
  dropFrom: number | null;
}

/** What a batch writes for its nodes and edges, in their stored forms. */
export interface RecordPlan {
  /** Entity pages to write and to drop: those of Entities put (what changed) and of Entities deleted (all). */
  pages: PageWrite[];
  /** Node rows to write, as stored JSON by node id: the batch's puts, and stored nodes that drop a folded edge the batch deletes. */
  nodes: Map<string, string>;
  /** Edge rows to write: edges no node folds in. */
  edges: GraphEdge[];
  /** Edge ids now folded into a node: any row of theirs goes. */
  folded: string[];
}

/** Nodes a batch replaces or deletes whose folded edges may survive it: only Facets and FacetPoints fold edges in. */
function replacedOrDeleted(batch: PlannedBatch): string[] {
  const replaced = (batch.putNodes ?? []).filter((n) => canDeriveEdges(n)).map((n) => n.id);
  return [...new Set([...(batch.deleteNodes ?? []), ...replaced])];
}

/**
 * The pages of Entities the batch puts (only what changed) or deletes (all), given their stored
 * records; and each paged Entity's list with its digest, which `written` (the writer's memo of
 * the lists it wrote last) now remembers.
 */
function pageWrites(batch: PlannedBatch, storedNodes: ReadonlyMap<string, string>, written: Map<string, WrittenList>): { writes: PageWrite[]; paged: Map<string, WrittenList> } {
  const writes: PageWrite[] = [];
  const paged = new Map<string, WrittenList>();
  for (const node of batch.putNodes ?? []) {
    if (node.layer !== 'entity') continue;
    const paging = entityPaging(node, storedNodes.get(node.id), written.get(node.id));
    const pageCount = node.chunkIds.length > ENTITY_PAGE_IDS ? Math.ceil(node.chunkIds.length / ENTITY_PAGE_IDS) : 0;
    if (paging.pages.length > 0 || paging.storedPages > pageCount) writes.push({ id: node.id, put: paging.pages, dropFrom: paging.storedPages > pageCount ? pageCount : null });
    if (paging.paged) paged.set(node.id, paging.paged);
  }
  const put = new Set((batch.putNodes ?? []).map((n) => n.id));
  for (const id of batch.deleteNodes ?? []) {
    const stored = storedNodes.get(id);
    if (!put.has(id) && stored !== undefined && storedPageCount(stored) > 0) writes.push({ id, put: [], dropFrom: 0 });
  }
  // Remembered before the commit lands: a memo the store does not hold is told apart by the stored digest.
  for (const id of [...(batch.deleteNodes ?? []), ...put]) written.delete(id);
  for (const [id, list] of paged) written.set(id, list);
  return { writes, paged };
}

/** A store's memo of the long Entity lists it wrote last, per partition (see record-codec's `WrittenList`). */
export class WrittenLists {
  private readonly byPartition = new Map<string | number, Map<string, WrittenList>>();

  of(partition: string | number): Map<string, WrittenList> {
    let lists = this.byPartition.get(partition);
    if (!lists) this.byPartition.set(partition, (lists = new Map()));
    return lists;
  }
}

/** The parts of a write batch planning looks at. */
export interface PlannedBatch {
  putNodes?: readonly GraphNode[];
  deleteNodes?: readonly string[];
  putEdges?: readonly GraphEdge[];
  deleteEdges?: readonly string[];
  putChunks?: readonly Chunk[];
}

/** The stored records `planRecords` needs for `batch` (chunks the batch carries itself are not read). */
export function recordReads(batch: PlannedBatch): RecordReads {
  const inBatch = new Set((batch.putChunks ?? []).map((chunk) => chunk.id));
  const chunkIds = new Set<string>();
  for (const node of batch.putNodes ?? []) if ('chunkId' in node && !inBatch.has(node.chunkId)) chunkIds.add(node.chunkId);
  const nodeIds = new Set(replacedOrDeleted(batch));
  // An Entity's stored record says which of its pages still hold.
  for (const node of batch.putNodes ?? []) if (node.layer === 'entity') nodeIds.add(node.id);
  const written = new Set((batch.putNodes ?? []).map((n) => n.id));
  for (const id of aloneOrDeleted(batch, written)) {
    for (const from of derivedEdgeSources(id)?.candidates ?? []) if (!written.has(from)) nodeIds.add(from);
  }
  return { nodeIds: [...nodeIds], chunkIds: [...chunkIds] };
}

/**
 * Ids of the batch's edges that a stored node may fold in and that leave it: those deleted, and
 * those put without their node, not among the nodes `put` (the edge's row holds them from then
 * on; left folded in as well, the node would bring back its own copy, key and all, when put again).
 */
function aloneOrDeleted(batch: PlannedBatch, put: ReadonlySet<string>): string[] {
  return [...(batch.deleteEdges ?? []), ...(batch.putEdges ?? []).filter((edge) => !put.has(edge.from)).map((edge) => edge.id)];
}

/**
 * The node and edge rows `batch` writes, with derived edges folded into their nodes, so that
 * reading gives back exactly what the batch leaves:
 * - an edge put with its from-node is folded in when the node rebuilds it;
 * - an edge a stored node folded in, neither deleted nor put again, survives its node being put
 *   again (folded again, or as a row when the new node no longer rebuilds it) or deleted (as a row);
 * - a folded edge deleted, or put on its own, while its node stays is taken out of the node's row
 *   (put on its own, it is written as a row).
 * `storedNodes` and `storedChunks` hold what the store has of `recordReads(batch)` (absent: none);
 * `written` is the store's memo of the long Entity lists it wrote (see `WrittenList`), kept up to date here.
 * Every store keys a node's record by its id, so the rows are written in record-codec's keyed form.
 * The store applies the batch's deletes first, then these rows, then deletes the rows of `folded`.
 */
export function planRecords(
  batch: PlannedBatch,
  storedNodes: ReadonlyMap<string, string>,
  storedChunks: ReadonlyMap<string, Chunk>,
  written: Map<string, WrittenList> = new Map(),
): RecordPlan {
  const pages = pageWrites(batch, storedNodes, written);
  const putEdges = batch.putEdges ?? [];
  const gone = new Set([...(batch.deleteEdges ?? []), ...putEdges.map((e) => e.id)]);
  const chunksInBatch = new Map((batch.putChunks ?? []).map((chunk) => [chunk.id, chunk]));
  const chunkOf = (id: string): Chunk | undefined => chunksInBatch.get(id) ?? storedChunks.get(id);
  const deletedNodes = new Set(batch.deleteNodes ?? []);
  const surviving = new Map<string, GraphEdge[]>();
  for (const id of replacedOrDeleted(batch)) {
    const stored = storedNodes.get(id);
    if (stored === undefined) continue;
    const { node, edgeKeys } = decodeNode(stored, new Map(), undefined, id);
    const kept = derivedEdgesOf(node, edgeKeys).filter((e) => !gone.has(e.id));
    if (kept.length > 0) surviving.set(id, kept);
  }
  const edgesFrom = new Map<string, GraphEdge[]>();
  for (const edge of putEdges) {
    const list = edgesFrom.get(edge.from);
    if (list) list.push(edge);
    else edgesFrom.set(edge.from, [edge]);
  }

  const nodes = new Map<string, string>();
  const folded = new Set<string>();
  for (const node of batch.putNodes ?? []) {
    const own = [...(edgesFrom.get(node.id) ?? []), ...(surviving.get(node.id) ?? [])];
    const encoded = encodeNode(node, own, 'chunkId' in node ? chunkOf(node.chunkId) : undefined, pages.paged.get(node.id), true);
    nodes.set(node.id, encoded.json);
    for (const id of encoded.folded) folded.add(id);
  }
  // A folded edge deleted, or put, on its own: its node stays, without it (a node put again was encoded without it above).
  const put = new Set((batch.putNodes ?? []).map((n) => n.id));
  for (const id of aloneOrDeleted(batch, put)) {
    for (const from of derivedEdgeSources(id)?.candidates ?? []) {
      const stored = nodes.get(from) ?? storedNodes.get(from);
      if (put.has(from) || deletedNodes.has(from) || stored === undefined) continue;
      const json = withoutFoldedEdge(stored, id, from);
      if (json !== null) nodes.set(from, json);
    }
  }
  // Put edges and survivors that no node folds in (a survivor of a deleted node, or of a node
  // put again that no longer rebuilds it) are written as rows, as any edge is.
  const rows = [...putEdges, ...[...surviving.values()].flat()].filter((e) => !folded.has(e.id));
  return { nodes, edges: rows, folded: [...folded], pages: pages.writes };
}

/** A partition's nodes and edges as its stored rows hold them, the derived edges its nodes fold in kept as keys. */
export interface StoredRecords {
  nodes: GraphNode[];
  /** Every edge but those in `folded`. */
  edges: GraphEdge[];
  folded: FoldedEdgeLists;
  /** Where read as columns (`StoredRecordsReader`'s `factColumns`): every FacetPoint, none of them in `nodes`, its derived edges' keys with it. */
  facts?: FactColumns;
}

/** A stored record: its key's id (which a keyed record's JSON leaves out) and its JSON. */
export type StoredRow = readonly [rowKey: string, json: string];

/**
 * A partition's nodes and edges from its stored rows: each node with the derived edges it folds
 * in, kept as keys, then the edge rows, which win over a folded edge of the same id. `chunks`
 * are the partition's chunks, `pages` each paged Entity's pages in order; with `factColumns`
 * the FacetPoints are read as columns where they allow it (`StoredRecordsReader`), or are those
 * columns, read from a fact image, and the rows hold none.
 *
 * A folded edge whose ends hold a `>` is made an edge rather than kept as a key: only there can
 * two edges' ids be equal (an id is `<type>:<from>><to>`), and such ids meet as they always did,
 * the later one winning. Graph building's ids (content hashes) hold none.
 */
export function readStoredRecords(
  nodeRows: Iterable<StoredRow>,
  edgeRows: Iterable<StoredRow>,
  chunks: ReadonlyMap<string, Chunk>,
  pages: ReadonlyMap<string, readonly string[]>,
  factColumns: boolean | FactColumns = false,
): StoredRecords {
  const reader = new StoredRecordsReader(chunks, pages, factColumns);
  reader.addNodes(nodeRows);
  reader.addEdges(edgeRows);
  return reader.finish();
}

/**
 * `readStoredRecords` a batch of rows at a time, as a read hands them over (every node row before
 * any edge row): IndexedDB's bulk read decodes each part of its values as it comes, while the
 * worker reads the next. `chunks` and `pages` must be whole before the first node row.
 */
export class StoredRecordsReader {
  private readonly edges = new Map<string, GraphEdge>();
  private readonly folded = noFoldedEdges();
  private readonly nodes: GraphNode[] = [];
  private readonly sharing = new ReadSharing();
  private readonly rowsOfDerivedTypes: GraphEdge[] = [];
  /**
   * The FacetPoints read so far as columns (`StoredRecords.facts`), while every one read is in
   * the plain keyed form (`addPlainFact`): all of a partition's facts are columns, or none are
   * (one that is not turns those read before into nodes), so that no Facet's or Entity's facts
   * are split between the two and their edges and vectors keep one order.
   */
  private facts: FactColumns | null;

  /**
   * `factColumns`: read the FacetPoints as columns where they allow it (an open's working set); or
   * the FacetPoints, as columns a fact image holds (store/fact-image.ts), where the rows hold none.
   */
  constructor(
    private readonly chunks: ReadonlyMap<string, Chunk>,
    private readonly pages: ReadonlyMap<string, readonly string[]>,
    factColumns: boolean | FactColumns = false,
  ) {
    this.facts = factColumns instanceof FactColumns ? factColumns : factColumns ? FactColumns.empty() : null;
  }

  addNodes(rows: Iterable<StoredRow>): void {
    for (const [rowKey, json] of rows) {
      if (this.facts !== null && addPlainFact(this.facts, json, rowKey, this.chunks, this.sharing)) continue;
      const { node, edgeKeys } = decodeNode(json, this.chunks, this.pages, rowKey, this.sharing);
      if (node.layer === 'facetPoint') this.factsAsNodes();
      this.addNode(node, edgeKeys);
    }
  }

  /** Adds `node`, with the derived edges it keeps the keys of. */
  private addNode(node: GraphNode, edgeKeys: NodeEdgeKeys): void {
    const { nodes, folded, edges } = this;
    const at = nodes.push(node) - 1;
    for (const type of DERIVED_EDGE_TYPES) {
      const key = edgeKeys[type];
      const to = key === undefined ? null : derivedTarget(node, type);
      if (key === undefined || to === null) continue;
      if (plainEnd(node.id) && plainEnd(to)) {
        folded[type].nodes.push(at);
        folded[type].keys.push(key);
      } else {
        const edge = derivedEdge(node, type, key) as GraphEdge;
        edges.set(edge.id, edge);
      }
    }
  }

  /** Makes the facts read as columns nodes, as `decodeNode` reads them, and reads every later fact so. */
  private factsAsNodes(): void {
    const { facts } = this;
    if (facts === null) return;
    this.facts = null;
    forEachFactNode(facts, this.chunks, this.sharing, (node, edgeKeys) => this.addNode(node, edgeKeys));
  }

  addEdges(rows: Iterable<StoredRow>): void {
    for (const [rowKey, json] of rows) {
      const edge = decodeEdge(json, rowKey);
      this.edges.set(edge.id, edge);
      if (typeof edge.id === 'string' && derivedEdgeSources(edge.id)) this.rowsOfDerivedTypes.push(edge);
    }
  }

  finish(): StoredRecords {
    // An edge row of a derived type replaces the folded edge of its id: rare enough to read the facts as nodes for.
    if (this.rowsOfDerivedTypes.length > 0) {
      this.factsAsNodes();
      dropOverwritten(this.rowsOfDerivedTypes, this.nodes, this.folded);
    }
    const { facts } = this;
    facts?.trim();
    return { nodes: this.nodes, edges: [...this.edges.values()], folded: this.folded, ...(facts !== null && facts.size > 0 ? { facts } : {}) };
  }
}

/** Each fact of `facts` as the node `decodeNode` makes of its record, with the keys of the derived edges it keeps; `chunks` by id hold every fact's chunk. */
function forEachFactNode(facts: FactColumns, chunks: ReadonlyMap<string, Chunk>, sharing: ReadSharing, visit: (node: GraphNode, edgeKeys: NodeEdgeKeys) => void): void {
  for (let at = 0; at < facts.size; at++) {
    const chunk = chunks.get(facts.chunkIds[at] as string) as Chunk;
    const node = factNode(facts, at, chunk, sharing.episodeIdOf(chunk.id), facts.facetIds[at] as string, facts.entityIds[at] as string | null);
    const edgeKeys: NodeEdgeKeys = {};
    if ((facts.belongsKeys[at] as number) >= 0) edgeKeys.belongs_to = facts.belongsKeys[at] as number;
    if ((facts.involvesKeys[at] as number) >= 0) edgeKeys.involves_entity = facts.involvesKeys[at] as number;
    visit(node, edgeKeys);
  }
}

/**
 * `records` with the facts it holds as columns (`StoredRecords.facts`) made nodes, each after
 * the others, its derived edges folded in as keys: what a read that takes no columns would have
 * handed over (an open that finds its vectors by id indexes them node by node).
 */
export function withFactsAsNodes<R extends { nodes: GraphNode[]; folded: FoldedEdgeLists; facts?: FactColumns; chunks: readonly Chunk[] }>(records: R): R {
  const { facts, ...rest } = records;
  if (facts === undefined) return records;
  const nodes = [...records.nodes];
  const copied = (type: DerivedEdgeType) => ({ nodes: [...records.folded[type].nodes], keys: [...records.folded[type].keys] });
  const folded: FoldedEdgeLists = { belongs_to: copied('belongs_to'), involves_entity: copied('involves_entity') };
  forEachFactNode(facts, new Map(records.chunks.map((chunk) => [chunk.id, chunk])), new ReadSharing(), (node, edgeKeys) => {
    const at = nodes.push(node) - 1;
    for (const type of DERIVED_EDGE_TYPES) {
      const key = edgeKeys[type];
      if (key === undefined) continue;
      folded[type].nodes.push(at);
      folded[type].keys.push(key);
    }
  });
  return { ...rest, nodes, folded } as unknown as R;
}

/** Whether an edge end is a string without `>`, so that the edge's id tells its ends apart. */
function plainEnd(id: unknown): id is string {
  return typeof id === 'string' && !id.includes('>');
}

/** Takes out of `folded` each edge that an edge row of the same id replaces. */
function dropOverwritten(rows: readonly GraphEdge[], nodes: readonly GraphNode[], folded: FoldedEdgeLists): void {
  const replaced = new Set(rows.map((row) => row.id));
  // Only a node a row's id names can run such an edge: the others' ids are not made.
  const named = new Set(rows.flatMap((row) => derivedEdgeSources(row.id)?.candidates ?? []));
  for (const type of DERIVED_EDGE_TYPES) {
    const list = folded[type];
    let kept = 0;
    for (let i = 0; i < list.nodes.length; i++) {
      const at = list.nodes[i] as number;
      const node = nodes[at] as GraphNode;
      const to = named.has(node.id) ? derivedTarget(node, type) : null;
      if (to !== null && replaced.has(edgeId(type, node.id, to))) continue;
      list.nodes[kept] = at;
      list.keys[kept] = list.keys[i] as number;
      kept++;
    }
    list.nodes.length = kept;
    list.keys.length = kept;
  }
}

/** Every edge of `records`, derived ones made from their keys. */
export function allStoredEdges(records: StoredRecords): GraphEdge[] {
  const derived: GraphEdge[] = [];
  for (const type of DERIVED_EDGE_TYPES) {
    const { nodes, keys } = records.folded[type];
    for (let i = 0; i < nodes.length; i++) {
      const edge = derivedEdge(records.nodes[nodes[i] as number] as GraphNode, type, keys[i] as number);
      if (edge) derived.push(edge);
    }
  }
  return [...derived, ...records.edges];
}
