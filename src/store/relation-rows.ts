import { RELATION_EDGE_TYPES, relationTypeOf } from '../graph/derived-edges.ts';
import type { EdgeType, GraphEdge } from '../graph/types.ts';
import { decodeEdge } from './record-codec.ts';
import type { StoredRow } from './record-plan.ts';
import type { StoredRelationEdges } from './types.ts';

/**
 * What a delete of `chunkIds`, whose records are `nodeIds`, takes along of the relation edges
 * (`StoredRelationEdges.owned`): a row is first told from its id and JSON alone (`mayOwn`, so that
 * of ~280K rows at 100K messages only a few are decoded), then decoded and kept if it `owns`.
 */
export function ownedRows(chunkIds: ReadonlySet<string>, nodeIds: ReadonlySet<string>): { mayOwn(id: string, json: string): boolean; owns(edge: GraphEdge): boolean } {
  const chunks = [...chunkIds];
  return {
    mayOwn: (id, json) => chunks.some((chunkId) => json.includes(chunkId)) || mayEndAt(id, nodeIds),
    owns: (edge) => chunkIds.has(edge.chunkId) || nodeIds.has(edge.from) || nodeIds.has(edge.to),
  };
}

/**
 * Whether the edge `id` (`type:from>to`) may end at one of `nodeIds`: its ends, where it holds one
 * `>`; any edge whose ends hold one themselves.
 */
function mayEndAt(id: string, nodeIds: ReadonlySet<string>): boolean {
  const arrow = id.indexOf('>');
  if (arrow < 0 || id.indexOf('>', arrow + 1) >= 0) return true;
  return nodeIds.has(id.slice(id.indexOf(':') + 1, arrow)) || nodeIds.has(id.slice(arrow + 1));
}

/**
 * The relation edge rows an open read (each its edge's id and JSON, the later of two of one id
 * winning), left undecoded as `WorkingSnapshot.relations` until something reads them: for a
 * store whose reads cannot wait for a caller that reads synchronously (IndexedDB's). The store's
 * later commits do not reach them, so the graph tells them its own changes (`asOpened`): an edge
 * put is kept as it is, a deleted one leaves. `rows` are taken at the first call, and a row is
 * decoded when read, each time.
 */
export function relationsAsOpened(rows: Iterable<StoredRow>, revision: number): StoredRelationEdges {
  // Taken from `rows` when first needed, once: IndexedDB splits its groups of relation edges then.
  let rowsById: Map<string, string | GraphEdge> | null = null;
  const byId = (): Map<string, string | GraphEdge> => (rowsById ??= new Map(rows));
  const edgeOf = (id: string, held: string | GraphEdge): GraphEdge => (typeof held === 'string' ? decodeEdge(held, id) : held);
  const decoded = (keep: (id: string, held: string | GraphEdge) => boolean): GraphEdge[] => {
    const edges: GraphEdge[] = [];
    for (const [id, row] of byId()) if (keep(id, row)) edges.push(edgeOf(id, row));
    return edges;
  };
  return {
    asOpened: {
      put: (edge) => void byId().set(edge.id, edge),
      delete: (id) => void byId().delete(id),
    },
    all: () => ({ revision, edges: decoded(() => true) }),
    owned: (chunkIds, nodeIds) => {
      const { mayOwn, owns } = ownedRows(chunkIds, nodeIds);
      return { revision, edges: decoded((id, held) => typeof held !== 'string' || mayOwn(id, held)).filter(owns) };
    },
    get: (id) => {
      const row = byId().get(id);
      return { revision, edge: row === undefined ? undefined : edgeOf(id, row) };
    },
    counts: () => {
      const counts: Partial<Record<EdgeType, number>> = {};
      for (const type of RELATION_EDGE_TYPES) counts[type] = 0;
      for (const id of byId().keys()) {
        const type = relationTypeOf(id);
        if (type) counts[type] = (counts[type] ?? 0) + 1;
      }
      return counts;
    },
  };
}
