import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { GraphEdge, MemoryMeta } from '../graph/types.ts';
import type { WriteBatch } from '../store/types.ts';

/**
 * Everything owned by the given chunks: their nodes and edges, edges touching those nodes,
 * and Entities no remaining chunk mentions. Entities still mentioned lose the chunk ids.
 */
export function deletionBatch(graph: MemoryGraph, meta: MemoryMeta, chunkIds: Set<string>): WriteBatch & { deleteNodes: string[] } {
  const deleteNodes = new Set<string>();
  const putNodes = [];
  for (const node of graph.nodes.values()) {
    if (node.layer === 'entity') {
      const remaining = node.chunkIds.filter((id) => !chunkIds.has(id));
      if (remaining.length === 0) deleteNodes.add(node.id);
      else if (remaining.length !== node.chunkIds.length) putNodes.push({ ...node, chunkIds: remaining });
    } else if (chunkIds.has(node.chunkId)) deleteNodes.add(node.id);
  }
  const deleteEdges: GraphEdge[] = graph.edgesOwnedBy(chunkIds, deleteNodes);
  return {
    deleteNodes: [...deleteNodes],
    putNodes,
    deleteEdges: deleteEdges.map((e) => e.id),
    deleteChunks: [...chunkIds],
    deleteHashes: [...chunkIds],
    deleteVectors: [...deleteNodes, ...deleteEdges.map((e) => e.id)].filter((id) => graph.vectors.has(id)),
    meta,
  };
}
