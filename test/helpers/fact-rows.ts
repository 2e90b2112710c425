import type { FactColumns } from '../../src/graph/fact-columns.ts';

/**
 * Every fact of `facts` as a row of its fields (id, key, chunk, Facet, Entity, turn, stretch, its
 * edges' keys, its times), sorted by id: two reads of one memory's facts, from a fact image and
 * from the records, compared fact by fact.
 */
export function factRows(facts: FactColumns | undefined): unknown[][] {
  const out: unknown[][] = [];
  for (let at = 0; at < (facts?.size ?? 0); at++) {
    const f = facts as FactColumns;
    out.push([f.ids[at], f.keys[at], f.chunkIds[at], f.facetIds[at], f.entityIds[at], f.turns[at], f.starts[at], f.ends[at], f.belongsKeys[at], f.involvesKeys[at], ...f.timesOf(at)]);
  }
  return out.sort((a, b) => String(a[0]).localeCompare(String(b[0])));
}
