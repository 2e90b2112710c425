import { isRelationEdgeId } from '../../src/graph/derived-edges.ts';
import type { GraphEdge, MemoryMeta, MemorySnapshot } from '../../src/graph/types.ts';
import { applyBatch, type MemoryState } from '../../src/ingest/pipeline.ts';
import { stateFrom, type PartitionHost } from '../../src/memory/partition.ts';
import { DEFAULT_PARTITION } from '../../src/scope.ts';
import type { GraphStore, WorkingSnapshot, WriteBatch } from '../../src/store/types.ts';
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
  /** The next batch applied to that graph after it held its relation edges (as a writer does under its lock): the whole load's after the batch. */
  held: boolean[];
  /** The same without holding them first: whether it still was (not where the batch changed relation edges). */
  unheld: boolean[];
}

/**
 * Commits the ingest-shaped sample's folding batches, then two that change relation edges, to
 * `store`; after each, builds a graph from `workingSet` (the store's working set, its relation
 * edges as the open read them) and compares it with the one the whole load builds; then applies
 * the next batch to it, holding those edges first and not, and compares again after the commit.
 */
export async function relationsAsOpenedSteps(store: GraphStore, host: PartitionHost, workingSet: () => Promise<WorkingSnapshot>): Promise<RelationsAsOpenedSteps> {
  const sample = ingestShapedSample();
  const batches = [...foldingBatches(sample), ...relationBatches(sample)];
  const steps: RelationsAsOpenedSteps = { atOpen: [], held: [], unheld: [] };
  // A fresh read for every graph: a graph takes over the records and the vector table it is built from.
  const now = async () => {
    const revision = await store.revision(DEFAULT_PARTITION);
    return (meta: MemoryMeta) => ({ name: DEFAULT_PARTITION, revision: () => revision, meta: () => meta });
  };
  const built = async (): Promise<MemoryState> => {
    const at = await now();
    const working = await workingSet();
    return stateFrom(working, host, at(working.meta));
  };
  const wholeView = async (): Promise<string> => {
    const at = await now();
    const whole = (await store.load(DEFAULT_PARTITION)) as MemorySnapshot;
    return JSON.stringify(graphView(stateFrom(whole, host, at(whole.meta))));
  };
  await store.commit(DEFAULT_PARTITION, batches[0] as WriteBatch);
  for (const next of [...batches.slice(1), null]) {
    steps.atOpen.push(JSON.stringify(graphView(await built())) === (await wholeView()));
    if (next === null) break;
    const held = await built();
    held.graph.holdRelationsAsOpened();
    const unheld = await built();
    await store.commit(DEFAULT_PARTITION, next);
    applyBatch(held, next);
    applyBatch(unheld, next);
    const after = await wholeView();
    steps.held.push(JSON.stringify(graphView(held)) === after);
    steps.unheld.push(JSON.stringify(graphView(unheld)) === after);
  }
  return steps;
}

/** The relation edges of `snapshot` as stored rows (id, JSON), as a store that leaves them undecoded reads them. */
export function relationRowsOf(snapshot: MemorySnapshot): Array<[string, string]> {
  return snapshot.edges.filter((edge) => isRelationEdgeId(edge.id)).map((edge) => [edge.id, JSON.stringify(edge)]);
}
