import { DERIVED_EDGE_TYPES, derivedEdgeSources } from '../graph/derived-edges.ts';
import { FactColumns, type WholeFacts } from '../graph/fact-columns.ts';
import type { MemoryGraph } from '../graph/memory-graph.ts';
import { FACT_IMAGE, factImageBytes } from '../store/fact-image.ts';
import { addPlainFact, encodeNode, ReadSharing } from '../store/record-codec.ts';
import type { GraphStore, WorkingSnapshot, WriteBatch } from '../store/types.ts';
import type { FacetPointNode, MemorySnapshot } from '../graph/types.ts';

/**
 * When a partition saves its fact image (store/fact-image.ts), which lets a SQL store's open read
 * the facts without their rows. The image is made from the graph (its facts held as columns, and
 * those a write put since as they were committed), so only while the graph's facts are known to
 * be what the rows read: from an open that read them as columns (or of a memory this process
 * began), through batches that rewrote no fact row behind the graph's back (`keepsFactRows`). It
 * is saved after the first search of an open that found none to read (once the search has
 * answered), and as the memory closes after a write.
 */
export interface FactImageState {
  /** The store holds an image of the partition's current revision, or a save of one is in flight. */
  saved: boolean;
  /** The graph's facts are the rows' as the store would read them at the partition's revision. */
  keepable: boolean;
  /** The save in flight, if any. */
  saving: Promise<void> | null;
  /** The open found no image to read: its first search saves one (`saveAfterSearch`). */
  afterSearch: boolean;
}

/** What of a partition (memory/partition.ts) its fact image is kept for. */
export interface FactImageHolder {
  readonly name: string;
  readonly state: { readonly graph: MemoryGraph };
  /** The store revision `state` reflects. */
  readonly revision: number;
  factImage: FactImageState | null;
}

/**
 * The fact image's state for a partition opened (or reloaded) from `snapshot` (null: the store
 * holds no memory there yet); null where the store reads no image.
 */
export function factImageStateOf(store: GraphStore, snapshot: MemorySnapshot | WorkingSnapshot | null): FactImageState | null {
  if (store.readsFactImage !== true) return null;
  const read = snapshot !== null && 'factImage' in snapshot ? snapshot.factImage : undefined;
  // Facts read as nodes (a form the image does not hold) make none: only those read as columns, or none read at all.
  const keepable = snapshot === null || ('facts' in snapshot && snapshot.facts !== undefined);
  return { saved: read === 'read', keepable, saving: null, afterSearch: read === 'missing' && keepable };
}

/** After the partition committed `batch`: the store's image is of an older revision now, and the graph may no longer make one. */
export function noteFactBatch(partition: FactImageHolder, batch: WriteBatch): void {
  const image = partition.factImage;
  if (!image) return;
  image.saved = false;
  image.keepable &&= keepsFactRows(batch);
}

/**
 * Whether committing `batch` leaves every fact row as the graph would write it: it deletes
 * nothing (a delete rewrites the nodes whose folded edges it takes, see record-plan's
 * `planRecords`), and every derived edge it puts is put with its node (one put alone is a row of
 * its own, where the graph would fold it in).
 */
function keepsFactRows(batch: WriteBatch): boolean {
  if ((batch.deleteNodes?.length ?? 0) > 0 || (batch.deleteChunks?.length ?? 0) > 0) return false;
  if ((batch.deleteEdges ?? []).some((id) => derivedEdgeSources(id) !== null)) return false;
  const put = new Set((batch.putNodes ?? []).map((node) => node.id));
  return (batch.putEdges ?? []).every((edge) => derivedEdgeSources(edge.id) === null || put.has(edge.from));
}

/**
 * After the first search of an open that found no image to read: saves one once the search has
 * answered (a timer, not the search's own task), so that the next open reads it.
 */
export function saveAfterSearch(store: GraphStore, partition: FactImageHolder): void {
  const image = partition.factImage;
  if (!image?.afterSearch) return;
  image.afterSearch = false;
  setTimeout(() => {
    saveFactImage(store, partition).catch(() => undefined);
  }, 0);
}

/**
 * Saves the partition's fact image where the store has none of its revision and the graph can
 * make one; waits for a save in flight first. A failed save is only a slower open later.
 */
export async function saveFactImage(store: GraphStore, partition: FactImageHolder): Promise<void> {
  const image = partition.factImage;
  if (!image) return;
  await image.saving;
  const saveDerived = store.saveDerived?.bind(store);
  if (image.saved || !image.keepable || !saveDerived) return;
  // The graph and its revision read together, with no await between: what the store refuses if a commit landed since.
  const revision = partition.revision;
  const facts = factsOf(partition.state.graph);
  const bytes = facts && factImageBytes(facts);
  if (!bytes) {
    image.keepable = false;
    return;
  }
  image.saved = true;
  image.saving = saveDerived(partition.name, FACT_IMAGE, revision, bytes)
    .then(
      (done) => {
        // Refused: a commit landed since (by another writer, or one whose batch this partition has not applied yet).
        if (!done && partition.revision === revision) image.saved = false;
      },
      () => undefined,
    )
    .finally(() => {
      image.saving = null;
    });
  await image.saving;
}

/** The graph's facts as their rows read (`MemoryGraph.factsAsColumns`): each a write put as its commit wrote it. */
function factsOf(graph: MemoryGraph): WholeFacts | null {
  const sharing = new ReadSharing();
  const held = FactColumns.empty();
  return graph.factsAsColumns((node: FacetPointNode) => {
    const chunk = graph.chunks.get(node.chunkId);
    if (chunk === undefined) return null;
    // The derived edges alone: asking for every type would read the relation edges an open left in the store.
    const edges = DERIVED_EDGE_TYPES.flatMap((type) => graph.edgesFrom(node.id, type));
    const { json } = encodeNode(node, edges, chunk, undefined, true);
    return addPlainFact(held, json, node.id, graph.chunks, sharing) ? held : null;
  });
}
