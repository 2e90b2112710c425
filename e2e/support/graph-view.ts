import { isRelationEdgeId } from '../../src/graph/derived-edges.ts';
import type { GraphEdge, MemorySnapshot } from '../../src/graph/types.ts';
import { applyBatch, type MemoryState } from '../../src/ingest/pipeline.ts';
import { stateAsRead, type PartitionHost } from '../../src/memory/partition.ts';
import { DEFAULT_PARTITION } from '../../src/scope.ts';
import type { GraphStore, StoredRelationEdges, WorkingSnapshot, WriteBatch } from '../../src/store/types.ts';
import type { IndexSpace } from '../../src/vector/index-set.ts';
import { foldingBatches, ingestShapedSample } from './sample-memory.ts';

const SPACES: IndexSpace[] = ['episode', 'facet', 'facetPoint', 'entity', 'edge_relation', 'edge_semantic'];

/** Everything a reader of the working graph can see, in the order it sees it. */
export function graphView(state: MemoryState): unknown {
  const { graph } = state;
  const nodeIds = [...graph.nodes.keys()].sort();
  // Counted before any reader lists the edges: a working set may leave its relation edges in the store until then.
  const edgeCount = graph.edges.size;
  const counts = graph.edgeCountsByType();
  return {
    edgeCount,
    counts,
    edges: [...graph.edges.values()].map((edge) => JSON.stringify(edge)).sort(),
    lists: nodeIds.map((id) => JSON.stringify([graph.edgesFrom(id), graph.edgesTo(id)])),
    points: graph.nodesOfLayer('episode').map((episode) => graph.facetPointsOf(episode.id).map((point) => point.id)),
    keys: Array.from({ length: state.meta.nextKey }, (_, key) => graph.idForKey(key) ?? null),
    indexed: SPACES.map((space) => state.indexes.size(space)),
  };
}

/** Batches after `foldingBatches` that change relation edges alone: one put between two Episodes, then one deleted. */
function relationBatches(sample: MemorySnapshot): WriteBatch[] {
  const temporal = sample.edges.find((edge) => edge.type === 'temporal') as GraphEdge;
  const [first, , third] = sample.nodes.filter((node) => node.layer === 'episode');
  const key = sample.meta.nextKey + 1000;
  const added: GraphEdge = { ...temporal, id: `temporal:${first?.id}>${third?.id}`, key, from: first?.id ?? '', to: third?.id ?? '' };
  return [{ putEdges: [added], meta: { ...sample.meta, nextKey: key + 1 } }, { deleteEdges: [added.id, temporal.id] }];
}

/** How the graphs built from working sets whose relation edges are as the open read them compare with the whole load's (`relationsAsOpenedSteps`). */
export interface RelationsAsOpenedSteps {
  /** After each batch: the graph a working set builds is the whole load's. */
  atOpen: boolean[];
  /** The next batch applied to that graph, as a writer does after its commit: the whole load's after the batch. */
  afterWrite: boolean[];
  /** The same with the graph's changes not told to the rows (`asOpened` taken away): whether it still was (not where the batch changed relation edges). */
  untold: boolean[];
}

/**
 * Commits the ingest-shaped sample's folding batches, then two that change relation edges, to
 * `store`; after each, builds a graph from `workingSet` (the store's working set, its relation
 * edges as the open read them) and compares it with the one the whole load builds; then applies
 * the next batch to it, and to one whose rows are not told the graph's changes, and compares
 * both again after the commit.
 */
export async function relationsAsOpenedSteps(store: GraphStore, host: PartitionHost, workingSet: () => Promise<WorkingSnapshot>): Promise<RelationsAsOpenedSteps> {
  const sample = ingestShapedSample();
  const batches = [...foldingBatches(sample), ...relationBatches(sample)];
  const steps: RelationsAsOpenedSteps = { atOpen: [], afterWrite: [], untold: [] };
  // A fresh read for every graph (a graph takes over the records and the vector table it is built
  // from), and what it is checked against as a partition has it: the revision read first, the meta the state's own.
  const stateOf = async (read: () => Promise<MemorySnapshot>): Promise<MemoryState> => {
    const revision = await store.revision(DEFAULT_PARTITION);
    const snapshot = await read();
    let state: MemoryState | null = null;
    // As an open builds it: the graph while the vectors are still read, where the store reads them last (IndexedDB).
    state = await stateAsRead(snapshot, host, { name: DEFAULT_PARTITION, revision: () => revision, meta: () => state?.meta ?? snapshot.meta }, () => undefined);
    // And its relation edges, where the open leaves them unread: a partition's every use but a search reads them first.
    await (snapshot as Partial<WorkingSnapshot>).relationsRead?.();
    return state;
  };
  const built = (told = true): Promise<MemoryState> =>
    stateOf(async () => {
      const working = await workingSet();
      const relations = working.relations;
      if (told || !relations) return working;
      const untold: StoredRelationEdges = { all: () => relations.all(), get: (id) => relations.get(id), owned: (chunkIds, nodeIds) => relations.owned(chunkIds, nodeIds), counts: () => relations.counts() };
      return { ...working, relations: untold };
    });
  const wholeView = async (): Promise<string> => JSON.stringify(graphView(await stateOf(async () => (await store.load(DEFAULT_PARTITION)) as MemorySnapshot)));
  await store.commit(DEFAULT_PARTITION, batches[0] as WriteBatch);
  for (const next of [...batches.slice(1), null]) {
    steps.atOpen.push(JSON.stringify(graphView(await built())) === (await wholeView()));
    if (next === null) break;
    const written = await built();
    const untold = await built(false);
    await store.commit(DEFAULT_PARTITION, next);
    applyBatch(written, next);
    applyBatch(untold, next);
    const after = await wholeView();
    steps.afterWrite.push(JSON.stringify(graphView(written)) === after);
    steps.untold.push(JSON.stringify(graphView(untold)) === after);
  }
  return steps;
}

/** The relation edges of `snapshot` as stored rows (id, JSON), as a store that leaves them undecoded reads them. */
export function relationRowsOf(snapshot: MemorySnapshot): Array<[string, string]> {
  return snapshot.edges.filter((edge) => isRelationEdgeId(edge.id)).map((edge) => [edge.id, JSON.stringify(edge)]);
}
