import { shareTurnTexts } from './chunk-text.ts';
import { DERIVED_EDGE_TYPES, derivedEdge, derivedTarget, isDerivedEdgeType, isDerivedFrom, isRelationEdgeId, keptDerivedEdge, DerivedEdgeKeys, type DerivedEdgeType } from './derived-edges.ts';
import { RecordsByKey } from './records-by-key.ts';
import { columnFact, FACT_ID_PREFIX, factNode, WholeFactsBuilder, type FactColumns, type WholeFacts } from './fact-columns.ts';
import { VectorTable } from './vector-table.ts';
import { EDGE_TYPES, edgeId, episodeIdOf, type Chunk, type EdgeType, type EntityMention, type EntityNode, type EpisodeNode, type EpisodeFact, type FacetPointNode, type GraphEdge, type GraphNode, type Layer, type MemorySnapshot } from './types.ts';

/**
 * What changed in a graph's nodes since `MemoryGraph.takeChanges` was last called: enough for the
 * lexical index to catch up with a write without walking every node (its documents are the nodes'
 * texts and the Episodes' turns).
 */
export interface GraphChanges {
  /** Ids of the nodes new to the graph, in the order `nodes` holds them (one deleted since is not here). */
  readonly added: ReadonlySet<string>;
  /** Keys of the nodes deleted. */
  readonly deletedKeys: ReadonlySet<number>;
  /** Ids of the Episodes already in the graph that were put again, or whose chunk was put or deleted. */
  readonly episodes: ReadonlySet<string>;
}

/** The graph's changes to relation edges left as the open read them (`StoredRelations.asOpened`). */
export interface RelationChanges {
  /** `edge` (a relation type's) was put, in place of any edge of its id. */
  put(edge: GraphEdge): void;
  /** The relation edge `id`, if any, was deleted. */
  delete(id: string): void;
}

/**
 * The relation edges (`RELATION_EDGE_TYPES`) a graph leaves in its store until something reads
 * them (`MemoryGraph.leaveRelations`): the store's as they are now, read synchronously, or as the
 * open read them and told the graph's changes since (`asOpened`).
 */
export interface StoredRelations {
  /** Where these are the edges as the open read them: told each relation edge the graph puts or deletes since (see `StoredRelationEdges.asOpened`). Absent: read as the store holds them at each call. */
  readonly asOpened?: RelationChanges;
  /** Every relation edge the store holds, in key order, each checked against the graph. */
  all(): GraphEdge[];
  /** The relation edge `id`, checked, when the store holds it. */
  get(id: string): GraphEdge | undefined;
  /** The relation edges of a chunk of `chunkIds` or with an end in `nodeIds`, checked, in key order. */
  owned(chunkIds: ReadonlySet<string>, nodeIds: ReadonlySet<string>): GraphEdge[];
  /** How many relation edges of each relation type the store holds. */
  counts(): Partial<Record<EdgeType, number>>;
}

/** Changes `takeChanges` keeps before it gives up on them (a walk of the graph is then as cheap). */
const CHANGES_KEPT = 1 << 16;

/**
 * The in-memory working set of a memory: nodes, edges and chunks with adjacency, built
 * from a snapshot and kept in step with every committed batch. Retrieval reads it; it
 * does no I/O.
 */
export class MemoryGraph {
  /**
   * Every node by id: the nodes held as objects, and the facts an open left as columns
   * (`putFactColumns`), each made a node object when it is read. Read-only: change nodes through
   * `putNode` and `deleteNode`. Listed in the order they came, as a Map lists its entries.
   */
  readonly nodes: ReadonlyMap<string, GraphNode> = new RecordView<GraphNode>({ size: () => this.nodeCount(), get: (id) => this.node(id), has: (id) => this.hasNode(id), all: () => this.allNodes() });
  /** The nodes held as objects: all but the facts left as columns. */
  private readonly heldNodes = new Map<string, GraphNode>();
  /**
   * The FacetPoints an open read as columns (store/record-plan.ts): two in three nodes of a memory
   * of chat, of which a search reads those of ~60 chunks. As objects (with their content strings
   * and their entries in the maps by id) they were ~80 MB of the heap at 100K messages, and
   * filing them most of building the graph at an open. A fact a write changes or deletes is
   * held as an object from then on (`wakeFact`).
   */
  private facts: ColumnFacts | null = null;
  /**
   * The key a node put again under another key was first put under: where `nodes` lists it, as
   * a Map keeps an entry where it was first set (`listed`).
   */
  private readonly listedAt = new Map<string, number>();
  /** The chunk `episodeIdOfChunk` was last asked about, and its Episode's id: a chunk's facts are read together. */
  private readonly lastEpisodeOfChunk: SharedId = { asked: '', shared: '' };
  /**
   * Every edge by id. A derived edge (graph/derived-edges.ts) is kept as its key by its node
   * (`derivedKeys`), and read as a new object each time: as objects in maps and lists they were a
   * third of the heap of a memory of chat (131 of 405 MB at 30K messages). Read-only: change
   * edges through `putEdge` and `deleteEdge`.
   */
  readonly edges: ReadonlyMap<string, GraphEdge> = new RecordView<GraphEdge>({ size: () => this.edgeCount(), get: (id) => this.edge(id), has: (id) => this.hasEdge(id), all: () => this.allEdges() });
  /** The edges held as objects: every edge but the derived ones. */
  private readonly heldEdges = new Map<string, GraphEdge>();
  /**
   * The keys of derived edges by type, by the node they run from. A node in here derives that
   * edge as it is now: one replaced so that it no longer does, or deleted, hands the edge (which
   * outlives it) to `heldEdges` as it was.
   */
  private readonly derivedKeys = new DerivedEdgeKeys();
  /** How many held edges have a derived edge's type: while none, a derived edge put replaces no held one (and its id need not be looked up). */
  private heldOfDerivedTypes = 0;
  /** The ids of the nodes with a derived edge to each node, by type, in the order the edges came. */
  private readonly derivedSources: Record<DerivedEdgeType, Map<string, string[]>> = { belongs_to: new Map(), involves_entity: new Map() };
  private readonly chunkById = new Map<string, Chunk>();
  /**
   * The last id `shareStrings` looked up for each field a node names, and the string it gave: a
   * chunk's records name one Episode, a Facet's facts one Facet, and often one Entity, in runs,
   * and at 100K messages an open looked up ~950K of them. An equal string is as good as the one
   * the graph holds, so what is remembered never goes stale.
   */
  private readonly lastShared: Record<'episode' | 'facet' | 'entity', SharedId> = {
    episode: { asked: '', shared: '' },
    facet: { asked: '', shared: '' },
    entity: { asked: '', shared: '' },
  };
  /** Chunks by id; changed through `putChunk` and `deleteChunk` only, which keep the turn indexes below. */
  readonly chunks: ReadonlyMap<string, Chunk> = this.chunkById;
  /**
   * How many stored turns hold each dialog id, and the turns per session: every add plans message
   * ids against them, and gathering them from every chunk per add grew the add with the scope
   * (~10 ms a call at 10,000 messages). Made by the first add that asks (`turnCounts`), then kept
   * as chunks come and go: a search asks neither, and at 100K messages an open counted ~110K
   * turns into them.
   */
  private counted: TurnCounts | null = null;
  /** How many stored turns each speaker has: every search asks which speakers its query names, and walking every Episode for them cost ~4 ms a search at 30K messages. */
  private readonly turnsBySpeaker = new Map<string, number>();
  readonly vectors: Map<string, Float32Array>;
  /**
   * Nodes and held edges by key: derived edges have no vector, so no index asks for theirs. A
   * table by key, not a map: keys are small integers given out in order (an open puts them in key
   * order), and setting ~744K of them in a map was ~0.2 s of an open at 100K messages. A fact held
   * as columns is its ordinal there.
   */
  private readonly byKey = new RecordsByKey<GraphNode | GraphEdge>();
  /** How many nodes each layer holds. */
  private readonly layerCounts = new Map<Layer, number>();
  /**
   * Node ids per layer, in the order the nodes came, for each layer listed since the graph was made
   * (`nodesOfLayer`: a search lists the Episodes), so it is listed again without scanning every node.
   * Made by the first listing, not as nodes come: an open put ~440K facts and Facets at 100K
   * messages, which only `list` and `get` list. But the Episodes', kept from the start: a search
   * by date or by name lists them, and the first such listing scanned every node (~50 ms of one
   * search at 100K messages) for ~10K Episodes.
   */
  private readonly byLayer = new Map<Layer, Set<string>>([['episode', new Set()]]);
  /** Entities by lower-cased name (the §2.4 exact-name merge), kept as nodes come and go. */
  private readonly entitiesByName = new Map<string, string>();
  /** The chunks' `mentions` by lower-cased name, each with its chunk's id, kept as chunks come and go. */
  private readonly mentionsByName = new Map<string, { chunkId: string; mention: EntityMention }>();
  /**
   * Adjacency by edge type, each list in insertion order, as typed lookups return it: retrieval
   * asks for one type per hop, many times per query, and must not scan or copy a hub's other
   * edges for it. A node's lists sit in a plain object, not a Map: on a 10K-message memory a Map
   * per node and a second, untyped set of edge ids per node were ~50 MB of heap.
   */
  private readonly outgoingByType = new Map<string, EdgeLists>();
  private readonly incomingByType = new Map<string, EdgeLists>();
  /**
   * Whether the lists hold the relation edges (every held edge of a type no node derives: temporal,
   * evolution, causal, semantic), made from `heldEdges` by the first reader of one (`listRelations`).
   * A search follows only `belongs_to` and `involves_entity` unless relation paths are switched on,
   * and an add writes relation edges but reads none: at 100K messages an open filed ~280K of them
   * twice over, ~1 s of building the graph with the collection of their lists, for nothing a search
   * reads. `heldEdges` keeps them in the order they came, a replaced one in its place, which is the
   * lists' own order.
   */
  private relationsListed = false;
  /**
   * Where the relation edges are while the graph holds none of them but those with a vector (an
   * index may name their keys), and they are only counted: a SQL store's open leaves them there
   * (~280K at 100K messages, ~2 s of the open's reading, checking and building), since a search
   * follows none by default and an add only asks whether one exists. The first reader of the
   * lists, or of every edge, reads them all (`holdRelations`); until then an edge put or
   * deleted is the store's to keep, as a commit reaches the store before the graph.
   */
  private storedRelations: StoredRelations | null = null;
  /**
   * `facetPointsOf` by Episode id, until a node or edge changes: retrieval reads the FacetPoints
   * of every Episode it scores, every query, and the walk costs more than their cosines.
   */
  private readonly pointsByEpisode = new Map<string, readonly EpisodeFact[]>();
  /**
   * Episodes in time order (`compareEpisodes`), kept sorted as they come and go: each add links
   * its Episode between its neighbours in time (design §2.4), and finding them by scanning every
   * Episode grew each add with the memory.
   */
  private readonly episodeChain: EpisodeNode[] = [];
  /**
   * What changed since `takeChanges` last ran; null before it first runs (an open puts every
   * record), after more than `CHANGES_KEPT` changes, or once a node was put again under another
   * key (where it sits in `nodes` then differs from where it was added).
   */
  private changes: { added: Set<string>; deletedKeys: Set<number>; episodes: Set<string> } | null = null;

  constructor(snapshot: Pick<MemorySnapshot, 'nodes' | 'edges' | 'chunks' | 'vectors'>) {
    this.vectors = snapshot.vectors;
    // Vectors an open lends its indexes by key are found through the records that hold the keys.
    if (this.vectors instanceof VectorTable) this.vectors.attachOwners({ keyOf: (id) => this.keyOfRecord(id), idOf: (key) => this.idForKey(key) });
    for (const chunk of snapshot.chunks) this.putChunk(chunk);
    for (const node of snapshot.nodes) this.putNode(node);
    for (const edge of snapshot.edges) this.putEdge(edge);
  }

  putChunk(chunk: Chunk): void {
    this.deleteChunk(chunk.id);
    shareTurnTexts(chunk);
    this.noteEpisode(episodeIdOf(chunk.id));
    this.chunkById.set(chunk.id, chunk);
    this.countTurns(chunk, 1);
    for (const mention of chunk.mentions ?? []) this.mentionsByName.set(mention.name.toLowerCase(), { chunkId: chunk.id, mention });
  }

  deleteChunk(id: string): void {
    const chunk = this.chunks.get(id);
    if (!chunk) return;
    this.noteEpisode(episodeIdOf(id));
    this.chunkById.delete(id);
    this.countTurns(chunk, -1);
    for (const { name } of chunk.mentions ?? []) {
      const key = name.toLowerCase();
      if (this.mentionsByName.get(key)?.chunkId === id) this.mentionsByName.delete(key);
    }
  }

  /** The dialog ids of the turns the graph's chunks hold, to ask of (the graph's own count of each, kept as chunks come and go). */
  dialogIds(): Pick<ReadonlySet<string>, 'has'> {
    return this.turnCounts().dialogIds;
  }

  /** The speakers of the graph's chunks' turns, in the order they first spoke. */
  speakers(): Iterable<string> {
    return this.turnsBySpeaker.keys();
  }

  /** Whether any turn of the memory is this speaker's. */
  speaks(speaker: string): boolean {
    return this.turnsBySpeaker.has(speaker);
  }

  /** How many nodes of `layer` the graph holds. */
  countOfLayer(layer: Layer): number {
    return this.layerCounts.get(layer) ?? 0;
  }

  private countLayer(layer: Layer, step: number): void {
    this.layerCounts.set(layer, (this.layerCounts.get(layer) ?? 0) + step);
  }

  /** How many turns the graph's chunks hold in session `sessionId`. */
  turnsInSession(sessionId: string): number {
    return this.turnCounts().sessions.get(sessionId) ?? 0;
  }

  /** The turn counts by dialog id and by session (`counted`), made from every chunk when first asked. */
  private turnCounts(): TurnCounts {
    if (this.counted === null) {
      this.counted = { dialogIds: new Map(), sessions: new Map() };
      for (const chunk of this.chunkById.values()) countChunkTurns(this.counted, chunk, 1);
    }
    return this.counted;
  }

  private countTurns(chunk: Chunk, step: 1 | -1): void {
    for (const { speaker } of chunk.turns) addCount(this.turnsBySpeaker, speaker, step);
    if (this.counted !== null) countChunkTurns(this.counted, chunk, step);
  }

  /** Puts `node` in place of any node of its id; true when the graph held none (an open puts ~464K nodes at 100K messages, and asking first was a second lookup of each). */
  putNode(node: GraphNode): boolean {
    const previous = this.heldNode(node.id);
    this.place(node, previous);
    return previous === undefined;
  }

  /**
   * `putNode` of a node whose id the graph does not hold, without looking it up: an open puts
   * every node of a checked memory (distinct ids) into a graph that holds none, and at 100K
   * messages those ~464K lookups, each a miss in a large table, were ~0.3 s of it.
   */
  putNewNode(node: GraphNode): void {
    this.place(node, undefined);
  }

  /** Puts `node` in place of `previous`, the node of its id the graph holds, if any. */
  private place(node: GraphNode, previous: GraphNode | undefined): void {
    if (previous) {
      this.holdDerived(previous, node);
      this.rekeyDerived(previous, node);
      // Its vector stays in its index under the key it was lent by.
      if (previous.key !== node.key && this.vectors instanceof VectorTable) this.vectors.rekeyLent(node.id, previous.key);
      // Listed where it was first put, as a Map keeps an entry (a woken fact is listed among the columns).
      if (previous.key !== node.key && !this.listedAt.has(node.id) && !this.facts?.woken.has(node.id)) this.listedAt.set(node.id, previous.key);
    }
    this.notePut(node, previous);
    this.shareStrings(node, previous);
    this.forgetPoints();
    if (previous?.layer === 'episode') this.unchain(previous);
    if (node.layer === 'episode') this.episodeChain.splice(searchChain(this.episodeChain, node, false), 0, node);
    this.heldNodes.set(node.id, node);
    this.byKey.set(node.key, node);
    if (previous?.layer !== node.layer) {
      if (previous) this.unlist(previous);
      this.countLayer(node.layer, 1);
    }
    this.byLayer.get(node.layer)?.add(node.id);
    if (node.layer === 'entity') this.entitiesByName.set(node.name.toLowerCase(), node.id);
  }

  deleteNode(id: string): void {
    const node = this.heldNode(id);
    if (!node) return;
    // First, while the node's key still finds a vector lent by key.
    this.vectors.delete(id);
    this.holdDerived(node, null);
    this.noteDelete(node);
    this.forgetPoints();
    if (node.layer === 'episode') this.unchain(node);
    this.heldNodes.delete(id);
    this.listedAt.delete(id);
    this.facts?.woken.delete(id);
    this.byKey.delete(node.key);
    this.unlist(node);
    if (node.layer === 'entity' && this.entitiesByName.get(node.name.toLowerCase()) === id) this.entitiesByName.delete(node.name.toLowerCase());
  }

  /** The derived edges `previous` keeps (and so `next`, which replaces it, derives alike), kept by `next` from now on, whose key may differ. */
  private rekeyDerived(previous: GraphNode, next: GraphNode): void {
    if (previous.key === next.key) return;
    for (const type of DERIVED_EDGE_TYPES) {
      const key = this.derivedKeys.get(type, previous);
      if (key === undefined) continue;
      this.derivedKeys.delete(type, previous);
      this.derivedKeys.set(type, next, key);
    }
  }

  /** Takes `node` out of its layer's count and listing. */
  private unlist(node: GraphNode): void {
    this.countLayer(node.layer, -1);
    this.byLayer.get(node.layer)?.delete(node.id);
  }

  /**
   * What changed since the last call (see `GraphChanges`), and a fresh start for the next; null
   * where that is not known (the first call, too many changes, a node put again under another
   * key): a reader then walks the graph.
   */
  takeChanges(): GraphChanges | null {
    const taken = this.changes;
    this.changes = { added: new Set(), deletedKeys: new Set(), episodes: new Set() };
    return taken;
  }

  private notePut(node: GraphNode, previous: GraphNode | undefined): void {
    if (!this.changes) return;
    if (!previous) this.changes.added.add(node.id);
    else if (previous.key !== node.key) this.changes = null;
    else if (node.layer === 'episode') this.changes.episodes.add(node.id);
    this.keepChanges();
  }

  private noteDelete(node: GraphNode): void {
    if (!this.changes) return;
    this.changes.added.delete(node.id);
    this.changes.deletedKeys.add(node.key);
    this.keepChanges();
  }

  private noteEpisode(id: string): void {
    if (!this.changes) return;
    this.changes.episodes.add(id);
    this.keepChanges();
  }

  private keepChanges(): void {
    const changes = this.changes;
    if (changes && changes.added.size + changes.deletedKeys.size + changes.episodes.size > CHANGES_KEPT) this.changes = null;
  }

  /** Drops `facetPointsOf`'s answers. Only when there are any: clearing a Map makes a new table, and an open puts every record. */
  private forgetPoints(): void {
    if (this.pointsByEpisode.size > 0) this.pointsByEpisode.clear();
  }

  private unchain(episode: EpisodeNode): void {
    const at = this.episodeChain.indexOf(episode, searchChain(this.episodeChain, episode, true));
    if (at >= 0) this.episodeChain.splice(at, 1);
  }

  /** Every Episode in time order (`compareEpisodes`; equal ones in the order they came). Read-only: the list is the graph's own. */
  episodesInTime(): readonly EpisodeNode[] {
    return this.episodeChain;
  }

  /** The Episodes nearest before and after `episode` in time order, other than itself (it need not be in the graph). */
  episodeNeighbours(episode: EpisodeNode): { before: EpisodeNode | null; after: EpisodeNode | null } {
    const chain = this.episodeChain;
    const nearest = (from: number, step: 1 | -1) => {
      let at = from;
      while (chain[at]?.id === episode.id) at += step;
      return chain[at] ?? null;
    };
    const at = searchChain(chain, episode, true);
    return { before: nearest(at - 1, -1), after: nearest(at, 1) };
  }

  /** The Entity named `name` (case-insensitive), if any. */
  entityNamed(name: string): EntityNode | undefined {
    const id = this.entitiesByName.get(name.toLowerCase());
    const node = id === undefined ? undefined : this.heldNodes.get(id);
    return node?.layer === 'entity' ? node : undefined;
  }

  /**
   * The name `name` (case-insensitive) a chunk mentions that is not an Entity node yet, with that
   * chunk's id; undefined when none is, or when its Entity has been made.
   */
  mentionNamed(name: string): { chunkId: string; mention: EntityMention } | undefined {
    const held = this.mentionsByName.get(name.toLowerCase());
    return held && !this.hasNode(held.mention.id) ? held : undefined;
  }

  /** Leaves the relation edges in `stored` (see `storedRelations`): the graph must hold none yet but those with a vector. */
  leaveRelations(stored: StoredRelations): void {
    this.storedRelations = stored;
  }

  putEdge(edge: GraphEdge): void {
    if (this.storedRelations) {
      if (this.storedRelations.asOpened && !isDerivedEdgeType(edge.type)) this.storedRelations.asOpened.put(edge);
      if (this.leftStored(edge)) return;
    }
    // The start node is looked up once, for its id string and for what it derives (an open puts ~280K edges at 100K messages).
    const from = this.node(edge.from);
    if (from) edge.from = from.id;
    edge.to = this.nodeId(edge.to);
    edge.chunkId = this.chunkId(edge.chunkId);
    this.forgetPoints();
    // An edge with a vector stays an object: an index may name its key (`belongs_to` is never indexed).
    if (from && isDerivedFrom(edge, from) && (edge.type === 'belongs_to' || !this.vectors.has(edge.id))) {
      this.keepDerived(edge.type, from, edge.to, edge.key, edge.id);
      return;
    }
    this.dropDerived(edge.id);
    const previous = this.heldEdges.get(edge.id);
    this.hold(edge, previous);
    // A replaced edge keeps its place in its list.
    const keepsPlace = previous !== undefined && previous.from === edge.from && previous.to === edge.to && previous.type === edge.type;
    if (previous && !keepsPlace) this.unlinkTyped(previous);
    if (!this.listsHold(edge.type)) return;
    if (keepsPlace) {
      replaceIn(this.outgoingByType.get(edge.from)?.[edge.type], previous, edge);
      replaceIn(this.incomingByType.get(edge.to)?.[edge.type], previous, edge);
    } else {
      linkTyped(this.outgoingByType, edge.from, edge);
      linkTyped(this.incomingByType, edge.to, edge);
    }
  }

  /**
   * What `putEdge` does with the edge each node of `from` derives for `type` under `keys[i]`
   * (graph/derived-edges.ts), without the edges made: an open puts three in four edges this way,
   * in key order, from the keys the store kept. Each node must be one the graph holds (the object
   * itself), named once, deriving such an edge, and the edge have no vector (`putEdge` holds an
   * edge with one). Into a graph that keeps none of the type yet (an open's), each is filed with
   * no lookup of what it might replace: ~650K of them at 100K messages.
   */
  putDerivedEdges(type: DerivedEdgeType, from: readonly GraphNode[], keys: readonly number[]): void {
    this.forgetPoints();
    const fresh = this.derivedKeys.size(type) === 0 && this.heldOfDerivedTypes === 0;
    const runs = new SourceRuns(this.derivedSources[type]);
    try {
      for (let i = 0; i < keys.length; i++) {
        const node = from[i] as GraphNode;
        const to = derivedTarget(node, type);
        if (to === null) throw new Error(`node ${node.id} derives no ${type} edge`);
        if (!fresh) {
          this.keepDerived(type, node, to, keys[i] as number);
          continue;
        }
        runs.add(to, node.id);
        this.derivedKeys.set(type, node, keys[i] as number);
      }
    } finally {
      runs.flush();
    }
  }

  /** Keeps the derived edge `type` from node `from` (the graph's own) to `to` as its key, in place of any edge of its id. */
  private keepDerived(type: DerivedEdgeType, from: GraphNode, to: string, key: number, id?: string): void {
    if (this.heldOfDerivedTypes > 0) this.dropHeld(id ?? edgeId(type, from.id, to));
    if (this.derivedKeys.has(type, from)) this.derivedKeys.set(type, from, key);
    else {
      fileSources(this.derivedSources[type], to, [from.id]);
      this.derivedKeys.set(type, from, key);
    }
  }

  /** Whether `edge` is one the store keeps for the graph while it leaves its relation edges there: one of a relation type with no vector. */
  private leftStored(edge: GraphEdge): boolean {
    return !isDerivedEdgeType(edge.type) && !this.vectors.has(edge.id);
  }

  /**
   * Holds every relation edge from now on, reading those the graph left in its store: for a
   * caller about to change the graph ahead of its store (re-extraction takes a chunk's records
   * out before it commits), which the edges left there would not follow.
   */
  holdRelations(): void {
    const stored = this.storedRelations;
    if (!stored) return;
    this.storedRelations = null;
    // In key order, as an open puts edges; one held already (it has a vector) is the same edge, and takes its place in that order.
    for (const edge of stored.all()) {
      const held = this.heldEdges.get(edge.id);
      if (!held) this.putEdge(edge);
      else {
        this.heldEdges.delete(edge.id);
        this.heldEdges.set(edge.id, held);
      }
    }
  }

  deleteEdge(id: string): void {
    this.forgetPoints();
    this.vectors.delete(id);
    if (this.storedRelations?.asOpened && isRelationEdgeId(id)) this.storedRelations.asOpened.delete(id);
    if (!this.dropHeld(id)) this.dropDerived(id);
  }

  /** Keeps `edge` as an object in place of `previous` (its id's held edge, if any); the typed lists are the caller's to change. */
  private hold(edge: GraphEdge, previous: GraphEdge | undefined): void {
    // Its vector stays in its index under the key it was lent by.
    if (previous && previous.key !== edge.key && this.vectors instanceof VectorTable) this.vectors.rekeyLent(edge.id, previous.key);
    this.heldEdges.set(edge.id, edge);
    this.byKey.set(edge.key, edge);
    this.heldOfDerivedTypes += Number(isDerivedEdgeType(edge.type)) - Number(previous !== undefined && isDerivedEdgeType(previous.type));
  }

  /** Whether the typed lists hold the held edges of `type` now: a derived type's always, a relation type's once listed. */
  private listsHold(type: EdgeType): boolean {
    return this.relationsListed || isDerivedEdgeType(type);
  }

  /** The held edges of `type` at `id` in one direction's lists (a relation type's listed first, if they are not yet). Read-only. */
  private heldListed(lists: ReadonlyMap<string, EdgeLists>, id: string, type: EdgeType): readonly GraphEdge[] {
    if (!this.listsHold(type)) this.listRelations();
    return lists.get(id)?.[type] ?? NO_EDGES;
  }

  /** Files every held relation edge in the typed lists, in the order they came, before the first reader of one. */
  private listRelations(): void {
    if (this.relationsListed) return;
    this.holdRelations();
    this.relationsListed = true;
    for (const edge of this.heldEdges.values()) {
      if (isDerivedEdgeType(edge.type)) continue;
      linkTyped(this.outgoingByType, edge.from, edge);
      linkTyped(this.incomingByType, edge.to, edge);
    }
  }

  /** Takes the held edge `id` out; false when there is none. */
  private dropHeld(id: string): boolean {
    const edge = this.heldEdges.get(id);
    if (!edge) return false;
    this.heldEdges.delete(id);
    this.byKey.delete(edge.key);
    if (isDerivedEdgeType(edge.type)) this.heldOfDerivedTypes--;
    this.unlinkTyped(edge);
    return true;
  }

  /** Takes the derived edge `id` out, if the graph keeps it so. */
  private dropDerived(id: string): void {
    const found = this.derivedById(id);
    if (!found) return;
    this.derivedKeys.delete(found.type, found.node);
    const target = derivedTarget(found.node, found.type);
    const sources = target === null ? undefined : this.derivedSources[found.type].get(target);
    const at = sources?.indexOf(found.node.id) ?? -1;
    if (at >= 0) sources?.splice(at, 1);
    if (target !== null && sources?.length === 0) this.derivedSources[found.type].delete(target);
  }

  /**
   * Before `node` is replaced by `next` (or deleted, when `next` is null): each derived edge it
   * has that `next` would not derive alike becomes a held edge, as it was, since an edge
   * outlives the node it runs from until it is deleted itself.
   */
  private holdDerived(node: GraphNode, next: GraphNode | null): void {
    for (const type of DERIVED_EDGE_TYPES) {
      const key = this.derivedKeys.get(type, node);
      const edge = key === undefined ? null : derivedEdge(node, type, key);
      if (!edge || (next && isDerivedFrom(edge, next))) continue;
      this.dropDerived(edge.id);
      this.hold(edge, undefined);
      linkTyped(this.outgoingByType, edge.from, edge);
      linkTyped(this.incomingByType, edge.to, edge);
    }
  }

  /** The derived edge kept under `id`: its type and the node it runs from. */
  private derivedById(id: string): { type: DerivedEdgeType; node: GraphNode } | undefined {
    return keptDerivedEdge(id, (type, node) => this.derivedKeys.has(type, node), this.nodes);
  }

  /** The edge `id` (see `edges`). */
  edge(id: string): GraphEdge | undefined {
    const held = this.heldEdges.get(id);
    if (held) return held;
    if (this.storedRelations && isRelationEdgeId(id)) return this.storedRelations.get(id);
    const found = this.derivedById(id);
    return found ? (this.derivedFromNode(found.node.id, found.type) ?? undefined) : undefined;
  }

  /** Whether the graph holds edge `id`, without making a derived one. */
  hasEdge(id: string): boolean {
    if (this.heldEdges.has(id)) return true;
    if (this.storedRelations && isRelationEdgeId(id)) return this.storedRelations.get(id) !== undefined;
    return this.derivedById(id) !== undefined;
  }

  /** The derived edge of `type` the graph keeps from node `from`, made afresh; null when it keeps none. */
  private derivedFromNode(from: string, type: DerivedEdgeType): GraphEdge | null {
    const ordinal = this.factOrdinal(from);
    if (ordinal >= 0) return this.factEdge(ordinal, type);
    const node = this.heldNodes.get(from);
    const key = node && this.derivedKeys.get(type, node);
    return node && key !== undefined ? derivedEdge(node, type, key) : null;
  }

  /**
   * The derived edge of `type` the fact of `ordinal` held as columns keeps, made from its columns
   * (`derivedEdge` of its node, without making the node): a search walks an Entity's facts by
   * their edges, and most of them no further.
   */
  private factEdge(ordinal: number, type: DerivedEdgeType): GraphEdge | null {
    const { columns } = this.facts as ColumnFacts;
    const key = this.derivedKeys.getByNodeKey(type, columns.keys[ordinal] as number);
    const to = type === 'belongs_to' ? columns.facetIds[ordinal] : columns.entityIds[ordinal];
    if (key === undefined || to === null || to === undefined) return null;
    const from = columns.ids[ordinal] as string;
    return { id: edgeId(type, from, to), key, type, from, to, chunkId: columns.chunkIds[ordinal] as string, description: null, confidence: null };
  }

  /** How many edges the graph holds, derived ones included. */
  edgeCount(): number {
    if (this.storedRelations) return Object.values(this.edgeCountsByType()).reduce((sum, count) => sum + count, 0);
    return this.heldEdges.size + this.derivedKeys.size('belongs_to') + this.derivedKeys.size('involves_entity');
  }

  /** How many edges of each type the graph holds: derived ones counted by their keys, not made (`stats` at 100K messages made ~650K). */
  edgeCountsByType(): Record<EdgeType, number> {
    const counts = Object.fromEntries(EDGE_TYPES.map((type) => [type, 0])) as Record<EdgeType, number>;
    // Relation edges left in the store are counted there, those held with a vector among them.
    const stored = this.storedRelations?.counts();
    for (const edge of this.heldEdges.values()) if (!stored || isDerivedEdgeType(edge.type)) counts[edge.type]++;
    for (const [type, count] of Object.entries(stored ?? {}) as Array<[EdgeType, number]>) counts[type] += count;
    for (const type of DERIVED_EDGE_TYPES) counts[type] += this.derivedKeys.size(type);
    return counts;
  }

  /**
   * The edges of chunks `chunkIds` or touching nodes `nodeIds`, where `nodeIds` holds every node
   * the chunks own (as a deletion's does): what deleting them takes along. The held edges in the
   * order they came (in key order, with those of the relation edges left in the store), then the
   * derived ones type by type, found from `nodeIds` through the graph's keys and sources rather
   * than by making every derived edge (~650K at 100K messages, ~0.35 s of a session's delete there).
   */
  edgesOwnedBy(chunkIds: ReadonlySet<string>, nodeIds: ReadonlySet<string>): GraphEdge[] {
    const edges = [...this.heldEdges.values()].filter((e) => chunkIds.has(e.chunkId) || nodeIds.has(e.from) || nodeIds.has(e.to));
    if (this.storedRelations) {
      // Found in the store without reading them all (~0.4 s at 100K messages, against ~2 s), in key order with the held ones, as an open holds them.
      edges.push(...this.storedRelations.owned(chunkIds, nodeIds).filter((edge) => !this.heldEdges.has(edge.id)));
      edges.sort((a, b) => a.key - b.key);
    }
    for (const type of DERIVED_EDGE_TYPES) {
      // A derived edge runs from a node of a chunk (a Facet or FacetPoint), so one a chunk owns starts at one of `nodeIds`.
      const from = new Set<string>();
      for (const id of nodeIds) {
        const key = this.keyOfNode(id);
        if (key !== undefined && this.derivedKeys.getByNodeKey(type, key) !== undefined) from.add(id);
        for (const source of this.derivedSources[type].get(id) ?? []) from.add(source);
      }
      for (const id of from) {
        const edge = this.derivedFromNode(id, type);
        if (edge) edges.push(edge);
      }
    }
    return edges;
  }

  /** Every edge: the held ones in the order they came, then the derived ones, type by type, each type's in the order their nodes came. */
  *allEdges(): IterableIterator<GraphEdge> {
    this.holdRelations();
    yield* this.heldEdges.values();
    for (const type of DERIVED_EDGE_TYPES) {
      for (const node of this.allNodes()) {
        const key = this.derivedKeys.get(type, node);
        const edge = key === undefined ? null : derivedEdge(node, type, key);
        if (edge) yield edge;
      }
    }
  }

  private unlinkTyped(edge: GraphEdge): void {
    if (!this.listsHold(edge.type)) return;
    removeFrom(this.outgoingByType.get(edge.from)?.[edge.type], edge);
    removeFrom(this.incomingByType.get(edge.to)?.[edge.type], edge);
  }

  /**
   * Points the ids `node` names at the strings the graph already holds for them (equal strings,
   * so nothing a reader sees changes): a store decodes every record's ids afresh, and on a
   * 10K-message memory of chat their copies were ~15 MB of heap. Nodes arrive after their chunk,
   * and in key order, so Episodes, Facets and Entities come before the FacetPoints naming them.
   * An Entity put again (a speaker's, with every add) keeps the ids it held, which are the
   * graph's already: only the chunks it gained, at the end of its list, are looked up.
   */
  private shareStrings(node: GraphNode, previous: GraphNode | undefined): void {
    if (node.layer === 'entity') {
      const held = previous?.layer === 'entity' ? previous.chunkIds.length : 0;
      for (let i = held; i < node.chunkIds.length; i++) node.chunkIds[i] = this.chunkId(node.chunkIds[i] as string);
      return;
    }
    node.chunkId = this.chunkId(node.chunkId);
    if (node.layer === 'episode') return;
    node.episodeId = this.nodeId(node.episodeId, this.lastShared.episode);
    if (node.layer === 'facet') return;
    node.facetId = this.nodeId(node.facetId, this.lastShared.facet);
    if (node.entityId !== null) node.entityId = this.nodeId(node.entityId, this.lastShared.entity);
  }

  /** The graph's own string for chunk id `id` (`id` itself when the chunk is unknown). */
  private chunkId(id: string): string {
    return this.chunkById.get(id)?.id ?? id;
  }

  /** The graph's own string for node id `id` (`id` itself when the node is unknown). */
  private nodeId(id: string, last?: SharedId): string {
    if (last?.asked === id) return last.shared;
    const shared = this.idOfNode(id) ?? id;
    if (last) {
      last.asked = id;
      last.shared = shared;
    }
    return shared;
  }

  /** Node or edge id behind an index key. */
  idForKey(key: number): string | undefined {
    const held = this.byKey.get(key);
    return typeof held === 'number' ? this.facts?.columns.ids[held] : held?.id;
  }

  /** The node or held edge behind an index key. */
  recordForKey(key: number): GraphNode | GraphEdge | undefined {
    const held = this.byKey.get(key);
    return typeof held === 'number' ? this.factNodeAt(held) : held;
  }

  /**
   * The id of the node or held edge whose key is `key` now (undefined where none is, or where the
   * one there was put again under another key), without making the node of a fact held as columns:
   * what an open checks a stored vector's key against (memory/keyed-vectors.ts).
   */
  currentIdOfKey(key: number): string | undefined {
    const held = this.byKey.get(key);
    if (typeof held === 'number') return this.facts?.columns.ids[held];
    return held !== undefined && held.key === key ? held.id : undefined;
  }

  /** The layer of the node, or the type of the held edge, under key `key` (see `currentIdOfKey`). */
  kindOfKey(key: number): Layer | EdgeType | undefined {
    const held = this.byKey.get(key);
    if (typeof held === 'number') return 'facetPoint';
    return held === undefined ? undefined : 'layer' in held ? held.layer : held.type;
  }

  /** The node or held edge of id `id` (a derived edge, or one left in the store, is not held). */
  recordOf(id: string): GraphNode | GraphEdge | undefined {
    return this.node(id) ?? this.heldEdges.get(id);
  }

  /** The key of the node or held edge of id `id`, without making the node of a fact held as columns. */
  keyOfRecord(id: string): number | undefined {
    return this.keyOfNode(id) ?? this.heldEdges.get(id)?.key;
  }

  /** The ordinal of the fact of id `id` held as columns, or −1 (every lookup of a node by id asks it first). */
  private factOrdinal(id: string): number {
    return this.facts === null ? -1 : this.facts.liveOrdinal(id);
  }

  /** The node `id`, made of its columns for a fact held so (`nodes.get`). */
  node(id: string): GraphNode | undefined {
    // A fact's id is looked for among the columns first: most facts are there, and a miss in the map of objects costs more.
    const ordinal = this.factOrdinal(id);
    return ordinal < 0 ? this.heldNodes.get(id) : this.factNodeAt(ordinal);
  }

  /** Whether the graph holds node `id` (`nodes.has`). */
  hasNode(id: string): boolean {
    return this.factOrdinal(id) >= 0 || this.heldNodes.has(id);
  }

  /** How many nodes the graph holds (`nodes.size`). */
  nodeCount(): number {
    return this.heldNodes.size + (this.facts?.liveCount ?? 0);
  }

  /** The key of node `id`, without making the node of a fact held as columns. */
  private keyOfNode(id: string): number | undefined {
    const ordinal = this.factOrdinal(id);
    return ordinal < 0 ? this.heldNodes.get(id)?.key : this.facts?.columns.keys[ordinal];
  }

  /** The graph's own string for node id `id`, without making the node of a fact held as columns. */
  private idOfNode(id: string): string | undefined {
    const ordinal = this.factOrdinal(id);
    return ordinal < 0 ? this.heldNodes.get(id)?.id : this.facts?.columns.ids[ordinal];
  }

  /** Node `id` held as an object, a fact held as columns made one first (`wakeFact`): what a write changes or deletes. */
  private heldNode(id: string): GraphNode | undefined {
    const ordinal = this.factOrdinal(id);
    return ordinal < 0 ? this.heldNodes.get(id) : this.wakeFact(ordinal);
  }

  /**
   * Holds the fact of `ordinal` as an object from now on, in its place: a write is about to put it
   * again or delete it, which the graph does to objects. It stays listed where its columns were.
   */
  private wakeFact(ordinal: number): GraphNode {
    const facts = this.facts as ColumnFacts;
    const node = this.factNodeAt(ordinal);
    facts.sleepNoMore(ordinal);
    this.heldNodes.set(node.id, node);
    this.byKey.set(node.key, node);
    return node;
  }

  /** The node of the fact of `ordinal` held as columns, made as `decodeNode` reads its record, with the graph's own strings. */
  private factNodeAt(ordinal: number): FacetPointNode {
    const facts = this.facts as ColumnFacts;
    const made = facts.made.get(ordinal);
    if (made !== undefined) return made;
    const chunk = this.chunkOfFact(ordinal);
    const node = factNode(facts.columns, ordinal, chunk, this.episodeIdOfChunk(chunk.id), facts.columns.facetIds[ordinal] as string, facts.columns.entityIds[ordinal] as string | null);
    facts.remember(ordinal, node);
    return node;
  }

  /** The fact of `ordinal` held as columns as `facetPointsOf` reads it, its node not made (`ColumnFact`). */
  private columnFactAt(ordinal: number): EpisodeFact {
    const { columns } = this.facts as ColumnFacts;
    return columnFact(columns, ordinal, this.chunkOfFact(ordinal), columns.facetIds[ordinal] as string);
  }

  /** The chunk of the fact of `ordinal` held as columns (an open's check saw that the graph holds it). */
  private chunkOfFact(ordinal: number): Chunk {
    const { columns } = this.facts as ColumnFacts;
    const chunk = this.chunkById.get(columns.chunkIds[ordinal] as string);
    if (chunk === undefined) throw new Error(`fact ${columns.ids[ordinal]} is of chunk ${columns.chunkIds[ordinal]}, which the graph does not hold`);
    return chunk;
  }

  /** The graph's own string for the id of chunk `chunkId`'s Episode, the one the chunk's facts name. */
  private episodeIdOfChunk(chunkId: string): string {
    const shared = this.lastEpisodeOfChunk;
    if (shared.asked !== chunkId) {
      const id = episodeIdOf(chunkId);
      shared.asked = chunkId;
      shared.shared = this.heldNodes.get(id)?.id ?? id;
    }
    return shared.shared;
  }

  /**
   * Takes over `columns`, the FacetPoints of an open's working set (`WorkingSnapshot.facts`), as
   * columns: into a graph that holds its chunks and other nodes already (their strings are shared)
   * and no fact; `inKeyOrder` lists their ordinals by key. The derived edges they keep are filed
   * by `putFactEdges`.
   */
  putFactColumns(columns: FactColumns, inKeyOrder: Int32Array): void {
    if (this.facts !== null) throw new Error('the graph holds facts as columns already');
    const { facetIds, entityIds } = columns;
    for (let ordinal = 0; ordinal < columns.size; ordinal++) {
      // The graph's own strings in place of the read's (equal ones): at 100K messages the read's were ~15 MB of heap.
      facetIds[ordinal] = this.nodeId(facetIds[ordinal] as string, this.lastShared.facet);
      const entityId = entityIds[ordinal] as string | null;
      if (entityId !== null) entityIds[ordinal] = this.nodeId(entityId, this.lastShared.entity);
      this.byKey.set(columns.keys[ordinal] as number, ordinal);
    }
    this.facts = new ColumnFacts(columns, inKeyOrder);
    this.countLayer('facetPoint', columns.size);
    this.forgetPoints();
  }

  /**
   * Files the derived edges of `type` the facts held as columns keep, visiting their ordinals in
   * `ordinals` order (their edges' key order): as `putDerivedEdges` files those of nodes put into
   * a graph that keeps none of the facts' yet.
   */
  putFactEdges(type: DerivedEdgeType, ordinals: ArrayLike<number>): void {
    const facts = this.facts as ColumnFacts;
    const { columns } = facts;
    const keys = type === 'belongs_to' ? columns.belongsKeys : columns.involvesKeys;
    const targets = type === 'belongs_to' ? columns.facetIds : columns.entityIds;
    this.forgetPoints();
    const runs = new SourceRuns(this.derivedSources[type]);
    for (let i = 0; i < ordinals.length; i++) {
      const ordinal = ordinals[i] as number;
      const key = keys[ordinal] as number;
      const to = targets[ordinal] as string | null;
      if (key < 0 || to === null) continue;
      runs.add(to, columns.ids[ordinal] as string);
      this.derivedKeys.setByNodeKey(type, columns.keys[ordinal] as number, key);
    }
    runs.flush();
  }

  /**
   * Every node as `nodes` lists it: in the order they came, as a Map lists its entries (an open
   * puts them in key order, so the facts held as columns fall in among the objects by key), a
   * fact held as columns as its ordinal.
   */
  private *listed(): Generator<GraphNode | number> {
    const facts = this.facts;
    const held = this.heldNodes.values();
    if (facts === null) {
      yield* held;
      return;
    }
    const keys = facts.columns.keys;
    const order = facts.inKeyOrder;
    let at = 0;
    // A fact woken from its columns is listed where its columns were, not where the Map holds it.
    const nextHeld = (): GraphNode | undefined => {
      for (let step = held.next(); !step.done; step = held.next()) if (!facts.woken.has(step.value.id)) return step.value;
      return undefined;
    };
    let node = nextHeld();
    while (node !== undefined || at < order.length) {
      const listedKey = node === undefined ? Infinity : this.listedAt.size > 0 ? (this.listedAt.get(node.id) ?? node.key) : node.key;
      if (at < order.length && (keys[order[at] as number] as number) < listedKey) {
        const ordinal = order[at++] as number;
        if (facts.live[ordinal] === 1) yield ordinal;
        else {
          const woken = facts.woken.has(facts.columns.ids[ordinal] as string) ? this.heldNodes.get(facts.columns.ids[ordinal] as string) : undefined;
          if (woken !== undefined) yield woken;
        }
        continue;
      }
      yield node as GraphNode;
      node = nextHeld();
    }
  }

  /**
   * Every fact, in `listed` order, a column a field, in record-codec's plain keyed form (what a fact
   * image holds, store/fact-image.ts): each held as columns as it is, with its derived edges' keys
   * as the graph holds them now; each held as an object as `asColumns` puts it in columns of its
   * own (null where it cannot), whose last fact is read. Null where one cannot be, or where a node
   * of another layer has a fact's id (`fp:`).
   */
  factsAsColumns(asColumns: (node: FacetPointNode) => FactColumns | null): WholeFacts | null {
    const out = new WholeFactsBuilder();
    const columns = this.facts?.columns;
    for (const listed of this.listed()) {
      if (typeof listed === 'number') {
        // A fact with no Entity keeps no involves_entity key (`putFactEdges` files none).
        const key = (columns as FactColumns).keys[listed] as number;
        out.copy(columns as FactColumns, listed, this.derivedKeys.getByNodeKey('belongs_to', key) ?? -1, this.derivedKeys.getByNodeKey('involves_entity', key) ?? -1);
      } else if (listed.layer === 'facetPoint') {
        const own = asColumns(listed);
        if (own === null) return null;
        const at = own.size - 1;
        out.copy(own, at, own.belongsKeys[at] as number, own.involvesKeys[at] as number);
      } else if (listed.id.startsWith(FACT_ID_PREFIX)) return null;
    }
    return out.finish();
  }

  /** Every node, in `listed` order, each fact held as columns made a node. */
  *allNodes(): Generator<GraphNode> {
    for (const node of this.listed()) yield typeof node === 'number' ? this.factNodeAt(node) : node;
  }

  /** The id, key and layer of every node, in `listed` order, without making the nodes of facts held as columns. */
  forEachNodeBrief(visit: (id: string, key: number, layer: Layer, chunkId: string | null) => void): void {
    const columns = this.facts?.columns;
    for (const node of this.listed()) {
      if (typeof node === 'number') visit(columns?.ids[node] as string, columns?.keys[node] as number, 'facetPoint', columns?.chunkIds[node] as string);
      else visit(node.id, node.key, node.layer, node.layer === 'entity' ? null : node.chunkId);
    }
  }

  /**
   * Edges leaving `id`: of one type in the order they came, or of every type, type by type in
   * `EDGE_TYPES` order. Read-only: a list may be the graph's own.
   */
  edgesFrom(id: string, type?: EdgeType): readonly GraphEdge[] {
    if (type === undefined) return EDGE_TYPES.flatMap((each) => this.edgesFrom(id, each));
    const held = this.heldListed(this.outgoingByType, id, type);
    if (!isDerivedEdgeType(type)) return held;
    const derived = this.derivedFromNode(id, type);
    return derived ? withHeld(held, [derived]) : held;
  }

  /**
   * Edges arriving at `id`: of one type in the order they came, or of every type, type by type in
   * `EDGE_TYPES` order. Read-only: a list may be the graph's own.
   */
  edgesTo(id: string, type?: EdgeType): readonly GraphEdge[] {
    if (type === undefined) return EDGE_TYPES.flatMap((each) => this.edgesTo(id, each));
    const held = this.heldListed(this.incomingByType, id, type);
    if (!isDerivedEdgeType(type)) return held;
    const sources = this.derivedSources[type].get(id);
    if (!sources) return held;
    const derived: GraphEdge[] = [];
    for (const from of sources) {
      const edge = this.derivedFromNode(from, type);
      if (edge) derived.push(edge);
    }
    return withHeld(held, derived);
  }

  /**
   * The nodes whose edges of `type` arrive at `id`, in `edgesTo`'s order: `edgesTo(id, type)`'s
   * sources, without making the derived edges (a search asks this of every Facet it reads).
   */
  sourcesTo(id: string, type: EdgeType): readonly string[] {
    const held = this.heldListed(this.incomingByType, id, type);
    const sources = isDerivedEdgeType(type) ? this.derivedSources[type].get(id) : undefined;
    if (!sources || held.length > 0) return this.edgesTo(id, type).map((edge) => edge.from);
    return sources.filter((from) => {
      const key = this.keyOfNode(from);
      return key !== undefined && this.derivedKeys.getByNodeKey(type as DerivedEdgeType, key) !== undefined;
    });
  }

  /** The FacetPoints under an Episode, through its Facets (`belongs_to` edges, in insertion order). Read-only: the list is the graph's own. */
  facetPointsOf(episodeId: string): readonly EpisodeFact[] {
    const known = this.pointsByEpisode.get(episodeId);
    if (known) return known;
    const points: EpisodeFact[] = [];
    for (const facet of this.sourcesTo(episodeId, 'belongs_to')) {
      for (const point of this.sourcesTo(facet, 'belongs_to')) {
        const ordinal = this.factOrdinal(point);
        if (ordinal >= 0) {
          points.push(this.columnFactAt(ordinal));
          continue;
        }
        const node = this.heldNodes.get(point);
        if (node?.layer === 'facetPoint') points.push(node);
      }
    }
    // Bounded: the lists hold the nodes made of facts held as columns, which a long run of searches would otherwise keep them all.
    if (this.pointsByEpisode.size >= POINTS_KEPT) this.pointsByEpisode.clear();
    this.pointsByEpisode.set(episodeId, points);
    return points;
  }

  /** Edges touching `id` in either direction. */
  edgesOf(id: string, type?: EdgeType): readonly GraphEdge[] {
    return [...this.edgesFrom(id, type), ...this.edgesTo(id, type)];
  }

  nodesOfLayer<L extends Layer>(layer: L): Array<Extract<GraphNode, { layer: L }>> {
    let ids = this.byLayer.get(layer);
    if (!ids) {
      const listing = new Set<string>();
      this.forEachNodeBrief((id, _key, nodeLayer) => {
        if (nodeLayer === layer) listing.add(id);
      });
      this.byLayer.set(layer, (ids = listing));
    }
    const out: Array<Extract<GraphNode, { layer: L }>> = [];
    for (const id of ids) {
      const node = this.node(id);
      if (node?.layer === layer) out.push(node as Extract<GraphNode, { layer: L }>);
    }
    return out;
  }
}

/** Session time, then ingestion order: the order of the Episode chain. */
function compareEpisodes(a: EpisodeNode, b: EpisodeNode): number {
  return (a.time ?? '').localeCompare(b.time ?? '') || a.order - b.order;
}

/** The first index of `chain` (sorted) whose Episode comes after `episode`, or with `orEqual` the first that does not come before it. */
function searchChain(chain: readonly EpisodeNode[], episode: EpisodeNode, orEqual: boolean): number {
  const skip = orEqual ? 0 : 1;
  let low = 0;
  let high = chain.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (compareEpisodes(chain[mid] as EpisodeNode, episode) < skip) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** An id `MemoryGraph.nodeId` was asked for, and the graph's own string it gave. */
interface SharedId {
  asked: string;
  shared: string;
}

/** A node's edges in one direction, a list per type. */
type EdgeLists = Partial<Record<EdgeType, GraphEdge[]>>;

const NO_EDGES: readonly GraphEdge[] = Object.freeze([]);

/** Held and derived edges of one type as one list, in key order (the order graph building made them); each list is in key order already. */
function withHeld(held: readonly GraphEdge[], derived: readonly GraphEdge[]): readonly GraphEdge[] {
  if (held.length === 0) return derived;
  if (derived.length === 0) return held;
  return [...held, ...derived].sort((a, b) => a.key - b.key);
}

/** Nodes of facts a graph remembers having made of its columns (`ColumnFacts.made`): a search reads those of ~60 chunks, ~2,200 facts, several times each. */
const MADE_FACTS = 1 << 16;

/** Episodes whose FacetPoints `facetPointsOf` keeps listed: a search scores those of a few hundred. */
const POINTS_KEPT = 8192;

/** How many stored turns hold each dialog id, and how many each session has. */
interface TurnCounts {
  dialogIds: Map<string, number>;
  sessions: Map<string, number>;
}

/** Counts `chunk`'s turns into `counts` (`step` −1: out of them). */
function countChunkTurns(counts: TurnCounts, chunk: Chunk, step: 1 | -1): void {
  addCount(counts.sessions, chunk.sessionId, step * chunk.turns.length);
  for (const { dialogId } of chunk.turns) addCount(counts.dialogIds, dialogId, step);
}

/** Adds `step` to `key`'s count, which leaves the map at 0. */
function addCount(counts: Map<string, number>, key: string, step: number): void {
  const count = (counts.get(key) ?? 0) + step;
  if (count === 0) counts.delete(key);
  else counts.set(key, count);
}

/**
 * Files the ids of the nodes deriving edges of one type into their targets' lists (the graph's
 * `derivedSources`) a run at a time: an open's nodes of one target come together (a Facet's
 * facts, an Episode's Facets). A target with no list yet gets one made at its run's length, where
 * an array grown a push at a time holds room for 17 at least (V8 grows one to 1.5× + 16): at 100K
 * messages of chat the ~130K Facets' and Entities' lists held ~35 MB of heap for ~10 MB of ids.
 * `flush` files the last run.
 */
class SourceRuns {
  private target: string | null = null;
  private readonly run: string[] = [];

  constructor(private readonly sources: Map<string, string[]>) {}

  add(to: string, from: string): void {
    if (to !== this.target) {
      this.flush();
      this.target = to;
    }
    this.run.push(from);
  }

  flush(): void {
    if (this.target === null) return;
    fileSources(this.sources, this.target, this.run);
    this.run.length = 0;
    this.target = null;
  }
}

/** Files `ids` among the sources of `to` in `sources` (the graph's `derivedSources` of a type): a target's first list is made at their length. */
function fileSources(sources: Map<string, string[]>, to: string, ids: readonly string[]): void {
  const list = sources.get(to);
  if (list === undefined) sources.set(to, ids.slice());
  else for (const id of ids) list.push(id);
}

/** The facts a graph holds as columns (`MemoryGraph.putFactColumns`): which are still held so, and the nodes lately made of them. */
class ColumnFacts {
  /** By ordinal: 1 while the fact is held as columns (not woken by a write, nor deleted). */
  readonly live: Uint8Array;
  liveCount: number;
  /** Ids of the facts a write woke (`MemoryGraph.wakeFact`): held as objects, listed where their columns were. */
  readonly woken = new Set<string>();
  /**
   * Nodes made of facts, by ordinal, so that a fact read again is the same object; forgotten all at
   * once past `MADE_FACTS`, so that a walk of every node leaves no second copy of them all.
   */
  readonly made = new Map<number, FacetPointNode>();

  constructor(
    /** The facts, their Facets and Entities named by the graph's own strings. */
    readonly columns: FactColumns,
    /** The ordinals by key. */
    readonly inKeyOrder: Int32Array,
  ) {
    this.live = new Uint8Array(columns.size).fill(1);
    this.liveCount = columns.size;
  }

  /** The ordinal of the fact of id `id` held as columns, or −1. */
  liveOrdinal(id: string): number {
    const ordinal = this.columns.ordinalOf(id);
    return ordinal >= 0 && this.live[ordinal] === 1 ? ordinal : -1;
  }

  remember(ordinal: number, node: FacetPointNode): void {
    if (this.made.size >= MADE_FACTS) this.made.clear();
    this.made.set(ordinal, node);
  }

  /** The fact of `ordinal` is held as an object from now on. */
  sleepNoMore(ordinal: number): void {
    this.live[ordinal] = 0;
    this.liveCount--;
    this.made.delete(ordinal);
    this.woken.add(this.columns.ids[ordinal] as string);
  }
}

/** How a `RecordView` reads the records it lists: its graph's methods for nodes, or for edges. */
interface RecordAccess<R extends { id: string }> {
  size(): number;
  get(id: string): R | undefined;
  has(id: string): boolean;
  all(): IterableIterator<R>;
}

/**
 * `MemoryGraph.nodes` and `MemoryGraph.edges`: a read-only map over records the graph keeps in
 * other forms than one map by id (facts held as columns, derived edges kept as keys), each made
 * when read.
 */
class RecordView<R extends { id: string }> implements ReadonlyMap<string, R> {
  constructor(private readonly access: RecordAccess<R>) {}

  get size(): number {
    return this.access.size();
  }

  get(id: string): R | undefined {
    return this.access.get(id);
  }

  has(id: string): boolean {
    return this.access.has(id);
  }

  *values(): MapIterator<R> {
    yield* this.access.all();
  }

  *keys(): MapIterator<string> {
    for (const record of this.access.all()) yield record.id;
  }

  *entries(): MapIterator<[string, R]> {
    for (const record of this.access.all()) yield [record.id, record];
  }

  [Symbol.iterator](): MapIterator<[string, R]> {
    return this.entries();
  }

  forEach(callback: (value: R, key: string, map: ReadonlyMap<string, R>) => void, thisArg?: unknown): void {
    for (const record of this.access.all()) callback.call(thisArg, record, record.id, this);
  }
}

function linkTyped(map: Map<string, EdgeLists>, node: string, edge: GraphEdge): void {
  let lists = map.get(node);
  if (!lists) map.set(node, (lists = {}));
  (lists[edge.type] ??= []).push(edge);
}

function replaceIn(list: GraphEdge[] | undefined, previous: GraphEdge, edge: GraphEdge): void {
  const at = list?.indexOf(previous) ?? -1;
  if (at >= 0) list?.splice(at, 1, edge);
}

function removeFrom(list: GraphEdge[] | undefined, edge: GraphEdge): void {
  const at = list?.indexOf(edge) ?? -1;
  if (at >= 0) list?.splice(at, 1);
}
