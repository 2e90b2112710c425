import type { MemoryGraph } from '../graph/memory-graph.ts';
import type { EntityNode, GraphEdge, MemoryMeta } from '../graph/types.ts';
import type { WriteBatch } from '../store/types.ts';

/**
 * Everything owned by the given chunks: their nodes and edges, edges touching those nodes,
 * and Entities no remaining chunk mentions. Entities still mentioned lose the chunk ids; one
 * left with the chunk whose mention it was made from (`Chunk.mentions`) is that mention again:
 * its node and vector go, and the edges its facts have to it stay, as if the chunks deleted had
 * never come.
 */
export function deletionBatch(graph: MemoryGraph, meta: MemoryMeta, chunkIds: Set<string>): WriteBatch & { deleteNodes: string[] } {
  const deleteNodes = new Set<string>();
  const mentionsAgain: string[] = [];
  const putNodes: EntityNode[] = [];
  // By id, layer and chunk: a fact the graph holds as columns is not made a node to be passed over.
  graph.forEachNodeBrief((id, _key, layer, chunkId) => {
    if (layer !== 'entity') {
      if (chunkIds.has(chunkId as string)) deleteNodes.add(id);
      return;
    }
    const node = graph.nodes.get(id) as EntityNode;
    const remaining = node.chunkIds.filter((chunk) => !chunkIds.has(chunk));
    if (remaining.length === 0) deleteNodes.add(node.id);
    else if (remaining.length === 1 && isMentionOf(graph, remaining[0] as string, node.id)) mentionsAgain.push(node.id);
    else if (remaining.length !== node.chunkIds.length) putNodes.push({ ...node, chunkIds: remaining });
  });
  const deleteEdges: GraphEdge[] = graph.edgesOwnedBy(chunkIds, deleteNodes);
  const nodesGone = [...deleteNodes, ...mentionsAgain];
  return {
    deleteNodes: nodesGone,
    putNodes,
    deleteEdges: deleteEdges.map((e) => e.id),
    deleteChunks: [...chunkIds],
    deleteHashes: [...chunkIds],
    deleteVectors: [...nodesGone, ...deleteEdges.map((e) => e.id)].filter((id) => graph.vectors.has(id)),
    meta,
  };
}

function isMentionOf(graph: MemoryGraph, chunkId: string, entityId: string): boolean {
  return graph.chunks.get(chunkId)?.mentions?.some((mention) => mention.id === entityId) ?? false;
}
