import cytoscape from 'cytoscape';
import { EDGE_TYPES, LAYERS } from '../src/graph/types.ts';
import type { EdgeType, GraphNodeView, Layer, NeighbourhoodView } from './protocol.ts';

/** How each layer and edge type looks; the legend and the graph share these. */
export const LAYER_STYLE: Record<Layer, { name: string; plural: string; colour: string; shape: cytoscape.Css.NodeShape; size: number }> = {
  episode: { name: 'Episode', plural: 'Episodes', colour: '#4f46e5', shape: 'round-rectangle', size: 34 },
  facet: { name: 'Facet', plural: 'Facets', colour: '#0891b2', shape: 'hexagon', size: 24 },
  facetPoint: { name: 'FacetPoint', plural: 'FacetPoints', colour: '#d97706', shape: 'ellipse', size: 18 },
  entity: { name: 'Entity', plural: 'Entities', colour: '#059669', shape: 'diamond', size: 22 },
};

export const EDGE_STYLE: Record<EdgeType, { name: string; colour: string; line: 'solid' | 'dashed' | 'dotted'; directed: boolean }> = {
  belongs_to: { name: 'belongs to', colour: '#94a3b8', line: 'solid', directed: false },
  involves_entity: { name: 'involves', colour: '#34d399', line: 'dotted', directed: false },
  temporal: { name: 'temporal', colour: '#2563eb', line: 'dashed', directed: true },
  causal: { name: 'causal', colour: '#dc2626', line: 'solid', directed: true },
  evolution: { name: 'evolution', colour: '#9333ea', line: 'dashed', directed: true },
  semantic: { name: 'semantic', colour: '#64748b', line: 'dotted', directed: false },
};

/** Layers left to right: the Episode hierarchy, then the Entities that cut across it. */
const COLUMN: Record<Layer, number> = { episode: 0, facet: 1, facetPoint: 2, entity: 3 };
const COLUMN_GAP = 270;
const ROW_GAP = 30;
const PADDING = 24;

/**
 * The neighbourhood of a query's retrieved units as a layered drawing (cytoscape.js): one
 * column per layer, each node beside the nodes it belongs to, edge types told apart by colour
 * and dash, and the winning retrieval paths drawn strong while the rest fades back.
 */
export class GraphView {
  private readonly cy: cytoscape.Core;

  constructor(
    private readonly container: HTMLElement,
    onSelect: (detail: string | null) => void,
  ) {
    this.cy = cytoscape({ container, style: stylesheet(), minZoom: 0.2, maxZoom: 2.5, boxSelectionEnabled: false });
    this.cy.on('tap', (event) => {
      const target = event.target as cytoscape.Core | cytoscape.SingularElementReturnValue;
      if (target === this.cy || !('isNode' in target)) return onSelect(null);
      const data = target.data() as { detail?: string; type?: EdgeType; description?: string | null };
      if (target.isNode()) return onSelect(data.detail ?? null);
      const style = data.type ? EDGE_STYLE[data.type] : null;
      onSelect(`${style?.name ?? 'edge'} edge${data.description ? `: ${data.description}` : ''}`);
    });
  }

  render(view: NeighbourhoodView): void {
    const { positions, rows } = layeredPositions(view);
    // The drawing keeps a readable scale: the box grows with the longest column instead.
    this.container.style.height = `${Math.min(900, Math.max(320, (rows + 2) * ROW_GAP + 2 * PADDING))}px`;
    this.cy.resize();
    this.cy.batch(() => {
      this.cy.elements().remove();
      this.cy.add([
        ...view.nodes.map((node) => ({
          group: 'nodes' as const,
          data: { id: node.id, layer: node.layer, label: node.rank ? `${node.label} · rank ${node.rank}` : node.label, detail: node.detail },
          position: positions.get(node.id) ?? { x: 0, y: 0 },
          classes: [node.rank ? 'retrieved' : '', node.onPath ? 'path' : ''].filter(Boolean).join(' '),
        })),
        // Column titles: plain text nodes, not part of the graph.
        ...LAYERS.map((layer) => ({
          group: 'nodes' as const,
          data: { id: `title:${layer}`, label: LAYER_STYLE[layer].plural },
          position: { x: COLUMN[layer] * COLUMN_GAP, y: -ROW_GAP * 1.2 },
          classes: 'title',
          selectable: false,
          grabbable: false,
        })),
        ...view.edges.map((edge) => ({
          group: 'edges' as const,
          data: { id: edge.id, source: edge.source, target: edge.target, type: edge.type, description: edge.description },
          classes: [edge.onPath ? 'path' : '', edge.type !== 'belongs_to' && edge.type !== 'involves_entity' ? 'relation' : ''].filter(Boolean).join(' '),
        })),
      ]);
    });
    this.cy.layout({ name: 'preset', fit: true, padding: PADDING }).run();
  }

  /** Draws one unit's path strongest (null: back to all paths). */
  focus(nodeIds: readonly string[] | null, edgeIds: readonly string[] = []): void {
    this.cy.batch(() => {
      this.cy.elements().removeClass('focus dim');
      if (!nodeIds) return;
      const ids = new Set([...nodeIds, ...edgeIds]);
      this.cy.elements().not('.title').forEach((element) => void element.addClass(ids.has(element.id()) ? 'focus' : 'dim'));
    });
  }

  /** Call after the container was shown or resized. */
  fit(): void {
    this.cy.resize();
    this.cy.fit(undefined, PADDING);
  }
}

/**
 * Columns by layer; Episodes top to bottom in time order, each given rows for its Facets and
 * FacetPoints; every other node level with the mean position of its neighbours in the columns
 * to its left, pushed apart where they would overlap.
 */
function layeredPositions(view: NeighbourhoodView): { positions: Map<string, { x: number; y: number }>; rows: number } {
  const neighbours = new Map<string, string[]>();
  for (const edge of view.edges) {
    neighbours.set(edge.source, [...(neighbours.get(edge.source) ?? []), edge.target]);
    neighbours.set(edge.target, [...(neighbours.get(edge.target) ?? []), edge.source]);
  }
  const byColumn = new Map<Layer, GraphNodeView[]>(LAYERS.map((layer) => [layer, view.nodes.filter((n) => n.layer === layer)]));
  const y = new Map<string, number>();

  // An Episode's block is as tall as its longest column of children.
  let cursor = 0;
  for (const episode of [...(byColumn.get('episode') ?? [])].sort((a, b) => a.order - b.order)) {
    const children = (layer: Layer) => (byColumn.get(layer) ?? []).filter((n) => n.order === episode.order).length;
    const height = Math.max(1, children('facet'), children('facetPoint')) * ROW_GAP;
    y.set(episode.id, cursor + height / 2);
    cursor += height;
  }
  let bottom = cursor;
  for (const layer of LAYERS.slice(1)) {
    const column = (byColumn.get(layer) ?? []).map((node) => {
      const left = (neighbours.get(node.id) ?? []).flatMap((id) => {
        const at = y.get(id);
        return at === undefined ? [] : [at];
      });
      return { node, desired: left.length > 0 ? left.reduce((a, b) => a + b, 0) / left.length : node.order * ROW_GAP };
    });
    column.sort((a, b) => a.desired - b.desired || a.node.id.localeCompare(b.node.id));
    const placed: number[] = [];
    column.forEach(({ desired }, i) => placed.push(i === 0 ? desired : Math.max(desired, (placed[i - 1] ?? 0) + ROW_GAP)));
    const shift = Math.max(
      -(placed[0] ?? 0),
      column.length > 0 ? (column.reduce((s, c) => s + c.desired, 0) - placed.reduce((s, p) => s + p, 0)) / column.length : 0,
    );
    column.forEach(({ node }, i) => y.set(node.id, (placed[i] ?? 0) + shift));
    bottom = Math.max(bottom, (placed.at(-1) ?? 0) + shift + ROW_GAP);
  }
  const positions = new Map(view.nodes.map((node) => [node.id, { x: COLUMN[node.layer] * COLUMN_GAP, y: y.get(node.id) ?? 0 }]));
  return { positions, rows: Math.ceil(bottom / ROW_GAP) };
}

const nodeStyle = (selector: string, style: cytoscape.Css.Node): cytoscape.StylesheetStyle => ({ selector, style });
const edgeStyle = (selector: string, style: cytoscape.Css.Edge): cytoscape.StylesheetStyle => ({ selector, style });

function stylesheet(): cytoscape.StylesheetJson {
  return [
    nodeStyle('node', {
        label: 'data(label)',
        'font-family': 'Inter, ui-sans-serif, system-ui, sans-serif',
        'font-size': 10,
        'text-wrap': 'wrap',
        'text-max-width': '200px',
        'text-valign': 'center',
        'text-halign': 'right',
        'text-margin-x': 7,
        'border-width': 0,
        'text-background-color': '#ffffff',
        'text-background-opacity': 0.8,
        'text-background-padding': '1px',
        // Nodes off the winning paths recede, their labels stay legible.
        'background-opacity': 0.5,
        color: '#64748b',
    }),
    ...LAYERS.map((layer) =>
      nodeStyle(`node[layer = "${layer}"]`, {
        'background-color': LAYER_STYLE[layer].colour,
        shape: LAYER_STYLE[layer].shape,
        width: LAYER_STYLE[layer].size,
        height: LAYER_STYLE[layer].size,
      }),
    ),
    nodeStyle('node.title', {
      width: 1,
      height: 1,
      'background-opacity': 0,
      'text-halign': 'center',
      'text-margin-x': 0,
      'font-size': 12,
      'font-weight': 'bold',
      color: '#64748b',
      events: 'no',
    }),
    nodeStyle('node.path, node.retrieved', { 'background-opacity': 1, color: '#0f172a' }),
    nodeStyle('node.retrieved', { 'border-width': 3, 'border-color': '#1e1b4b', 'font-weight': 'bold', color: '#1e1b4b' }),
    nodeStyle('node.path', { 'border-width': 2, 'border-color': '#0f172a' }),
    nodeStyle('node:selected', { 'border-width': 3, 'border-color': '#f43f5e' }),
    edgeStyle('edge', { width: 1.2, 'curve-style': 'bezier', opacity: 0.45, 'arrow-scale': 0.8 }),
    ...EDGE_TYPES.map((type) =>
      edgeStyle(`edge[type = "${type}"]`, {
        'line-color': EDGE_STYLE[type].colour,
        'target-arrow-color': EDGE_STYLE[type].colour,
        'line-style': EDGE_STYLE[type].line,
        'target-arrow-shape': EDGE_STYLE[type].directed ? 'triangle' : 'none',
      }),
    ),
    // Relation edges often join nodes of one lane; arcing keeps them off the nodes between.
    edgeStyle('edge.relation', { 'curve-style': 'unbundled-bezier', 'control-point-distances': [-48], 'control-point-weights': [0.5] }),
    edgeStyle('edge.path', { width: 3, opacity: 1 }),
    nodeStyle('node.dim', { opacity: 0.12, 'text-opacity': 0.3 }),
    edgeStyle('edge.dim', { opacity: 0.12 }),
    nodeStyle('node.focus', { 'background-opacity': 1, 'border-width': 3, 'border-color': '#f43f5e' }),
    edgeStyle('edge.focus', { opacity: 1, width: 4 }),
  ];
}
