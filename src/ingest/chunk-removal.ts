import type { GraphEdge } from '../graph/types.ts';
import type { WriteBatch } from '../store/types.ts';
import { edgeSpace } from '../vector/index-set.ts';
import type { MemoryState } from './pipeline.ts';

/**
 * Everything owned by the given chunks: their nodes and edges, edges touching those nodes,
 * and Entities no remaining chunk mentions. Entities still mentioned lose the chunk ids.
 */
export function deletionBatch(state: MemoryState, chunkIds: Set<string>): WriteBatch {
  const { graph } = state;
  const deleteNodes = new Set<string>();
  const putNodes = [];
  for (const node of graph.nodes.values()) {
    if (node.layer === 'entity') {
      const remaining = node.chunkIds.filter((id) => !chunkIds.has(id));
      if (remaining.length === 0) deleteNodes.add(node.id);
      else if (remaining.length !== node.chunkIds.length) putNodes.push({ ...node, chunkIds: remaining });
    } else if (chunkIds.has(node.chunkId)) deleteNodes.add(node.id);
  }
  const deleteEdges: GraphEdge[] = [...graph.edges.values()].filter((e) => chunkIds.has(e.chunkId) || deleteNodes.has(e.from) || deleteNodes.has(e.to));
  const deleteEdgeIds = deleteEdges.map((e) => e.id);
  return {
    deleteNodes: [...deleteNodes],
    putNodes,
    deleteEdges: deleteEdgeIds,
    deleteChunks: [...chunkIds],
    deleteHashes: [...chunkIds],
    deleteVectors: [...deleteNodes, ...deleteEdges.filter((e) => edgeSpace(e.type) !== null).map((e) => e.id)].filter((id) => graph.vectors.has(id)),
    meta: state.meta,
  };
}
