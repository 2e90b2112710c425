import { describe, expect, it } from 'vitest';
import { ChunkTextJoiner, chunkText, speakerLead, turnLineHead, turnTheme } from '../src/graph/chunk-text.ts';
import { derivedEdgesOf } from '../src/graph/derived-edges.ts';
import { edgeId, episodeIdOf, type Chunk, type EntityNode, type EpisodeNode, type FacetNode, type FacetPointNode, type GraphEdge, type GraphNode } from '../src/graph/types.ts';
import { decodeChunk, decodeChunkRow, decodeEdge, decodeNode, encodeChunk, encodeChunkRow, encodeEdge, encodeNode, ReadSharing, withoutFoldedEdge } from '../src/store/record-codec.ts';
import { checkChunk, checkNode } from '../src/store/validate-snapshot.ts';

const CHUNK_ID = 'a3f1c2d4e5b60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90';
const turns = [
  { dialogId: 's1:1', speaker: 'User', text: 'I adopted a puppy named Rex last week.  He   chews everything.', time: null },
  { dialogId: 's1:2', speaker: 'Assistant', text: `Congratulations on Rex! ${'Puppies need patience and a routine. '.repeat(8)}`, time: null },
];
const header = '[s1 · 2023-08-11T15:58:00]';
const chunk: Chunk = { id: CHUNK_ID, sessionId: 's1', header, text: chunkText(header, turns), time: '2023-08-11T15:58:00', order: 0, turns };
const chunks = new Map([[CHUNK_ID, chunk]]);

// Records as graph building writes them (build-graph.ts), keys in its order.
const episode: EpisodeNode = { id: episodeIdOf(CHUNK_ID), key: 1, layer: 'episode', chunkId: CHUNK_ID, summary: header, time: chunk.time, order: 0 };
const facet: FacetNode = { id: 'fc:a3f1c2d4e5b6:1', key: 4, layer: 'facet', chunkId: CHUNK_ID, episodeId: episode.id, theme: turnTheme('Assistant', turns[1]!.text) };
const point: FacetPointNode = {
  id: 'fp:a3f1c2d4e5b6:0',
  key: 6,
  layer: 'facetPoint',
  chunkId: CHUNK_ID,
  episodeId: episode.id,
  facetId: facet.id,
  content: 'Assistant: Puppies need patience and a routine.',
  entityId: 'en:a3f1c2d4e5b6:0',
  timeText: null,
  time: null,
  dialogIds: ['s1:2'],
};
const entity: EntityNode = { id: 'en:a3f1c2d4e5b6:0', key: 2, layer: 'entity', name: 'Rex', entityType: 'other', chunkIds: [CHUNK_ID] };
const edge = (type: GraphEdge['type'], from: string, to: string, key: number, more: Partial<GraphEdge> = {}): GraphEdge => ({
  id: edgeId(type, from, to),
  key,
  type,
  from,
  to,
  chunkId: CHUNK_ID,
  description: null,
  confidence: null,
  ...more,
});
const pointEdges = [edge('belongs_to', point.id, facet.id, 7), edge('involves_entity', point.id, entity.id, 8)];

/** Encodes and decodes `node`; the decoded node and edges must equal the originals, key order included. */
function roundTrip(node: GraphNode, edges: GraphEdge[] = []): string {
  const { json, folded } = encodeNode(node, edges, chunk);
  expect(folded).toEqual(edges.map((e) => e.id));
  const decoded = decodeNode(json, chunks);
  expect(JSON.stringify(decoded.node)).toBe(JSON.stringify(node));
  expect(derivedEdgesOf(decoded.node, decoded.edgeKeys).map((e) => JSON.stringify(e))).toEqual(edges.map((e) => JSON.stringify(e)));
  return json;
}

/** The edges a stored node folds in. */
function foldedIn(json: string): GraphEdge[] {
  const { node, edgeKeys } = decodeNode(json, chunks);
  return derivedEdgesOf(node, edgeKeys);
}

describe('the record codec', () => {
  it('stores nodes of the shape graph building writes as arrays without their key names or what their chunk rebuilds, and reads them back exactly', () => {
    for (const [node, edges] of [
      [episode, []],
      [facet, [edge('belongs_to', facet.id, episode.id, 5)]],
      [point, pointEdges],
      [entity, []],
    ] as const) {
      const json = roundTrip(node, [...edges]);
      expect(json.startsWith('[')).toBe(true);
      expect(json).not.toContain('"layer"');
    }
    const pointJson = roundTrip(point, pointEdges);
    // The Episode id, the quoted stretch and the dialog id are the chunk's; the edge keys are offsets from the node's.
    expect(pointJson).not.toContain(episode.id);
    expect(pointJson).not.toContain('patience');
    expect(pointJson).not.toContain('s1:2');
    expect(pointJson.endsWith('[1,2]]')).toBe(true);
    const facetJson = roundTrip(facet);
    expect(facetJson).not.toContain('Congratulations');
  });

  it('writes a field that does not fit its rebuilt form as it is, and still reads the record back exactly', () => {
    // Each with the field as written in its stored JSON.
    const variants: Array<[GraphNode, string]> = [
      [{ ...facet, theme: 'other facts' }, '"other facts"'],
      // One character off the turn's theme.
      [{ ...facet, theme: `${facet.theme.slice(0, -1)}!` }, `${facet.theme.slice(0, -1)}!`],
      [{ ...facet, episodeId: 'ep:another' }, '"ep:another"'],
      [{ ...point, dialogIds: ['s1:2', 's1:1'] }, '["s1:2","s1:1"]'],
      [{ ...point, dialogIds: ['s9:9'] }, '["s9:9"]'],
      [{ ...point, content: 'Assistant: a fact no turn says.' }, '"Assistant: a fact no turn says."'],
    ];
    for (const [node, written] of variants) expect(roundTrip(node)).toContain(written);
  });

  it('writes a node with other keys or another key order as an object, and reads it back exactly', () => {
    const { id, key, ...rest } = point;
    const reordered = { key, id, ...rest } as FacetPointNode;
    const extra = { ...entity, note: 'kept' } as EntityNode;
    for (const node of [reordered, extra]) {
      const json = roundTrip(node, node === reordered ? pointEdges : []);
      expect(json.startsWith('{')).toBe(true);
    }
    // A key whose value is undefined is no key of the record: an array would write it as null.
    const undefinedTime = { ...point, time: undefined } as unknown as FacetPointNode;
    expect(encodeNode(undefinedTime, [], chunk).json.startsWith('{')).toBe(true);
    expect(decodeNode(encodeNode(undefinedTime, [], chunk).json, chunks).node).not.toHaveProperty('time');
  });

  it('reads the object records an earlier version wrote (edge keys by name, content offsets)', () => {
    const older = JSON.stringify({ ...point, content: [0, 31], edgeKeys: { belongs_to: 7, involves_entity: 8 } });
    const decoded = decodeNode(older, chunks);
    expect(JSON.stringify(decoded.node)).toBe(JSON.stringify({ ...point, content: 'Assistant: Congratulations on Rex! Puppies' }));
    expect(derivedEdgesOf(decoded.node, decoded.edgeKeys)).toEqual(pointEdges);
  });

  it('gives the facts of one turn one frozen list of its dialog id, read after read of a chunk', () => {
    const sharing = new ReadSharing();
    const second: FacetPointNode = { ...point, id: 'fp:a3f1c2d4e5b6:1', key: 9, content: 'Assistant: Congratulations on Rex!' };
    const first: FacetPointNode = { ...point, id: 'fp:a3f1c2d4e5b6:2', key: 10, content: 'User: I adopted a puppy named Rex last week.', dialogIds: ['s1:1'] };
    const read = (node: FacetPointNode, from: ReadonlyMap<string, Chunk> = chunks) => decodeNode(encodeNode(node, [], chunk).json, from, undefined, undefined, sharing).node as FacetPointNode;
    const [a, b, c] = [read(point), read(second), read(first)];
    expect([a.dialogIds, b.dialogIds, c.dialogIds]).toEqual([['s1:2'], ['s1:2'], ['s1:1']]);
    expect(b.dialogIds).toBe(a.dialogIds);
    expect(c.dialogIds).not.toBe(a.dialogIds);
    expect(Object.isFrozen(a.dialogIds)).toBe(true);
    // Another chunk object (a later read) starts its own lists; a list given out is never changed.
    const again = read(point, new Map([[CHUNK_ID, { ...chunk }]]));
    expect(again.dialogIds).toEqual(['s1:2']);
    expect(again.dialogIds).not.toBe(a.dialogIds);
    expect(a.dialogIds).toEqual(['s1:2']);
    // Without a read's lists, each fact gets its own.
    expect((decodeNode(encodeNode(point, [], chunk).json, chunks).node as FacetPointNode).dialogIds).not.toBe(a.dialogIds);
  });

  it('names the Episode, Facet and Entity each record of a read names, chunk after chunk', () => {
    const sharing = new ReadSharing();
    const otherId = `b${CHUNK_ID.slice(1)}`;
    const other: Chunk = { ...chunk, id: otherId };
    const both = new Map([...chunks, [otherId, other]]);
    const ofOther = (node: FacetPointNode): FacetPointNode => ({ ...node, chunkId: otherId, episodeId: episodeIdOf(otherId), facetId: 'fc:b3f1c2d4e5b6:0', entityId: null });
    const nextFacet: FacetPointNode = { ...point, id: 'fp:a3f1c2d4e5b6:1', key: 9, facetId: 'fc:a3f1c2d4e5b6:2', entityId: 'en:a3f1c2d4e5b6:3' };
    // Records of one chunk, another's, then the first's again: each named as written, whatever the record before it named.
    const written = [point, nextFacet, point, ofOther(point), ofOther(nextFacet), nextFacet];
    const read = written.map((node) => decodeNode(encodeNode(node, [], node.chunkId === otherId ? other : chunk).json, both, undefined, undefined, sharing).node as FacetPointNode);
    expect(read.map(({ episodeId, facetId, entityId }) => ({ episodeId, facetId, entityId }))).toEqual(written.map(({ episodeId, facetId, entityId }) => ({ episodeId, facetId, entityId })));
  });

  it('takes one folded edge out of an array record, leaving the other', () => {
    const { json } = encodeNode(point, pointEdges, chunk);
    const without = withoutFoldedEdge(json, pointEdges[0]!.id);
    expect(without).not.toBeNull();
    expect(foldedIn(without!)).toEqual([pointEdges[1]]);
    expect(foldedIn(withoutFoldedEdge(without!, pointEdges[1]!.id)!)).toEqual([]);
    expect(withoutFoldedEdge(json, 'belongs_to:fp:other>fc:other')).toBeNull();
  });

  it('leaves a stand-in its chunk cannot rebuild in place, for validation to reject', () => {
    const { json } = encodeNode(point, [], chunk);
    const orphan = decodeNode(json, new Map()).node;
    expect(() => checkNode(orphan, (message) => { throw new Error(message); })).toThrow(/dialogIds|content/);
    expect(() => checkNode(decodeNode('[9,"x",1]', chunks).node, (message) => { throw new Error(message); })).toThrow();
  });

  it('stores an edge with its canonical id and keys as the array of its values, trailing nulls left off', () => {
    const edges = [
      edge('evolution', point.id, 'fp:a3f1c2d4e5b6:1', 10),
      edge('causal', point.id, 'fp:a3f1c2d4e5b6:1', 11, { description: 'Rex chewed the shoes', confidence: 0.75 }),
      edge('temporal', point.id, 'fp:a3f1c2d4e5b6:1', 12, { confidence: 0.5 }),
      edge('semantic', point.id, 'fp:a3f1c2d4e5b6:1', 13, { description: 'similar' }),
    ];
    for (const e of edges) {
      const json = encodeEdge(e);
      expect(json.startsWith('[')).toBe(true);
      expect(json).not.toContain(e.id);
      expect(JSON.stringify(decodeEdge(json))).toBe(JSON.stringify(e));
    }
    expect(encodeEdge(edges[0]!)).toBe(`[10,"evolution","${point.id}","fp:a3f1c2d4e5b6:1","${CHUNK_ID}"]`);
    expect(encodeEdge(edges[2]!)).toMatch(/,null,0\.5\]$/);
  });

  it('leaves to a row keyed by the record’s id what the key names: a node’s id, an edge’s type and ends', () => {
    for (const node of [episode, facet, point, entity]) {
      const edges = node === point ? pointEdges : [];
      const keyed = encodeNode(node, edges, chunk, undefined, true).json;
      expect(JSON.parse(keyed)[1]).toBeNull();
      const decoded = decodeNode(keyed, chunks, undefined, node.id);
      expect(JSON.stringify(decoded.node)).toBe(JSON.stringify(node));
      expect(derivedEdgesOf(decoded.node, decoded.edgeKeys)).toEqual(edges);
      // Without its key the record has no id, which validation rejects.
      expect(() => checkNode(decodeNode(keyed, chunks).node, (message) => { throw new Error(message); })).toThrow(/id/);
    }
    // Taking a folded edge out keeps the record keyed.
    const keyedPoint = encodeNode(point, pointEdges, chunk, undefined, true).json;
    const without = withoutFoldedEdge(keyedPoint, pointEdges[0]!.id, point.id)!;
    expect(JSON.parse(without)[1]).toBeNull();
    const read = decodeNode(without, chunks, undefined, point.id);
    expect(derivedEdgesOf(read.node, read.edgeKeys)).toEqual([pointEdges[1]]);

    const evolution = edge('evolution', point.id, 'fp:a3f1c2d4e5b6:1', 10);
    const causal = edge('causal', point.id, 'fp:a3f1c2d4e5b6:1', 11, { description: 'Rex chewed the shoes', confidence: 0.75 });
    expect(encodeEdge(evolution, true)).toBe(`[10,null,"${CHUNK_ID}"]`);
    for (const e of [evolution, causal]) expect(JSON.stringify(decodeEdge(encodeEdge(e, true), e.id))).toBe(JSON.stringify(e));
    // Ends holding a `>` make an id that does not name them alone: such an edge keeps them.
    const arrowed = edge('semantic', 'fp:a>b', 'fp:c', 12);
    expect(encodeEdge(arrowed, true)).toBe(encodeEdge(arrowed));
    expect(JSON.stringify(decodeEdge(encodeEdge(arrowed, true), arrowed.id))).toBe(JSON.stringify(arrowed));
    // A keyed edge read without its key, or under a key that names no edge, is no valid edge.
    expect(decodeEdge(encodeEdge(evolution, true)).id).not.toBe(evolution.id);
    expect(decodeEdge(encodeEdge(evolution, true), 'no-such-type:x>y').type).toBeNull();
  });

  it('writes an edge with another id, other keys or another key order as it is', () => {
    const canonical = edge('evolution', point.id, 'fp:a3f1c2d4e5b6:1', 10);
    const { id, key, ...rest } = canonical;
    for (const e of [{ ...canonical, id: 'evolution:legacy-id' }, { key, id, ...rest }, { ...canonical, note: 'kept' }] as GraphEdge[]) {
      expect(encodeEdge(e)).toBe(JSON.stringify(e));
      expect(JSON.stringify(decodeEdge(encodeEdge(e)))).toBe(JSON.stringify(e));
    }
  });
});

describe('a stored chunk', () => {
  const turns = [
    { dialogId: 'D1:1', speaker: 'Ana', text: 'Two lines\nin one turn, a \u0000, and 🎹 outside the BMP' },
    { dialogId: 'D1:2', speaker: 'Bo', text: '' },
    { dialogId: 'D1:3', speaker: 'Ana', text: '  spaced  ', time: '2024-01-02T00:00:00.000Z', metadata: { k: [1, 'two'] } },
  ];
  const whole = (header: string, list: typeof turns): Chunk => ({ id: 'c'.repeat(16), sessionId: 's', header, text: chunkText(header, list), time: null, order: 0, turns: list });

  it('keeps no text where its turns rebuild it, and reads back whole: the same text, each turn the same', () => {
    for (const chunk of [whole('[Session 1]', turns), whole('', turns), whole('[Session 2 — ✓]', []), whole('h\n(x) y: z', turns.slice(0, 1))]) {
      const json = encodeChunk(chunk);
      expect(JSON.parse(json).text).toBeNull();
      const read = decodeChunk(json);
      expect(read).toEqual(chunk);
      expect(read.text).toBe(chunkText(chunk.header, chunk.turns));
    }
  });

  it('keeps a text its turns do not rebuild, and reads a damaged turn as it is, for validation to reject', () => {
    const handMade = { ...whole('[Session 1]', turns), text: 'written by hand' };
    expect(decodeChunk(encodeChunk(handMade))).toEqual(handMade);
    const damaged = JSON.stringify({ ...whole('[Session 1]', turns), text: null, turns: [{ dialogId: 'D1:1', speaker: 'Ana', text: 7 }] });
    expect(() => checkChunk(decodeChunk(damaged), (message) => { throw new Error(message); })).toThrow(/text/);
  });

  it('as a SQL row keeps its turns’ texts apart, each turn’s length in the record, and reads back whole', () => {
    for (const chunk of [whole('[Session 1]', turns), whole('', turns), whole('[Session 2 — ✓]', []), whole('h\n(x) y: z', turns.slice(0, 1))]) {
      const row = encodeChunkRow(chunk);
      expect(row.text).toBe(chunk.turns.map((turn) => turn.text).join(''));
      const record = JSON.parse(row.json) as { text: unknown; turns: Array<{ text: unknown }> };
      expect(record.text).toBeNull();
      expect(record.turns.map((turn) => turn.text)).toEqual(chunk.turns.map((turn) => turn.text.length));
      const read = decodeChunkRow(row.json, row.text);
      expect(read).toEqual(chunk);
      expect(JSON.stringify(read)).toBe(JSON.stringify(chunk));
    }
    // A text the turns do not rebuild stays in the record, as `encodeChunk` keeps it.
    const handMade = { ...whole('[Session 1]', turns), text: 'written by hand' };
    expect(encodeChunkRow(handMade)).toEqual({ json: encodeChunk(handMade), text: null });
    expect(decodeChunkRow(encodeChunkRow(handMade).json, null)).toEqual(handMade);
    // A row without a text column is a record `encodeChunk` wrote.
    expect(decodeChunkRow(encodeChunk(whole('[Session 1]', turns)), null)).toEqual(whole('[Session 1]', turns));
  });

  it('as SQL rows read many at a time (ChunkTextJoiner), reads back each whole: its text and turns as one by one', () => {
    // Plain chunks and chunks with a character past Latin-1, many of each, in batches of ~2M characters of turns.
    const plain = Array.from({ length: 300 }, (_, i) => whole(`[Session ${i}]`, [{ dialogId: `D${i}:1`, speaker: 'Ana', text: `plain ${i} `.repeat(1000) }, { dialogId: `D${i}:2`, speaker: 'Bo', text: 'ok' }]));
    const wide = Array.from({ length: 40 }, (_, i) => whole(`[Session w${i}]`, i % 2 === 0 ? turns : [{ dialogId: `W${i}:1`, speaker: 'Zoë’s', text: `curly ’ ${i} `.repeat(500) }]));
    const chunks = plain.flatMap((chunk, i) => (i % 8 === 0 ? [chunk, wide[i / 8] as Chunk] : [chunk]));
    const joiner = new ChunkTextJoiner();
    const read = chunks.map((chunk) => {
      const row = encodeChunkRow(chunk);
      return decodeChunkRow(row.json, row.text, joiner.join);
    });
    // Some chunks are joined as their batch fills, the rest by the flush.
    expect(read.some((chunk) => typeof chunk.text === 'string')).toBe(true);
    expect(read.some((chunk) => chunk.text === null)).toBe(true);
    joiner.flush();
    expect(read).toEqual(chunks);
    for (const chunk of read) {
      expect(chunk.text).toBe(chunkText(chunk.header, chunk.turns));
      let at = chunk.header.length;
      for (const turn of chunk.turns) {
        at += 1 + turnLineHead(turn).length;
        expect(chunk.text.slice(at, at + turn.text.length)).toBe(turn.text);
        at += turn.text.length;
      }
    }
  });

  it('as a SQL row whose turns’ lengths do not cut its text whole, reads with no text, for validation to reject', () => {
    const { json, text } = encodeChunkRow(whole('[Session 1]', turns));
    const record = JSON.parse(json) as { text: unknown; turns: Array<{ text: unknown }> };
    const withLengths = (...lengths: unknown[]) => JSON.stringify({ ...record, turns: record.turns.map((turn, i) => ({ ...turn, text: lengths[i] })) });
    const lengths = record.turns.map((turn) => turn.text as number);
    const damaged = [
      [withLengths(...lengths), `${text}!`],
      [withLengths(...lengths), text!.slice(1)],
      [withLengths(lengths[0]! + 1, lengths[1], lengths[2]! - 1.5), text],
      [withLengths(-1, lengths[1], lengths[2]! + 1 + lengths[0]!), text],
      [withLengths(String(lengths[0]), lengths[1], lengths[2]), text],
      [JSON.stringify({ ...record, text: 'a text in the record too' }), text],
    ] as const;
    for (const [stored, column] of damaged) {
      const read = decodeChunkRow(stored, column);
      expect(read.text).toBeNull();
      for (const turn of read.turns) expect(turn.text).toBe('');
      expect(() => checkChunk(read, (message) => { throw new Error(message); })).toThrow(/text/);
    }
    // Not rebuildable at all: read as it is.
    const noTurns = decodeChunkRow(JSON.stringify({ ...record, turns: 'none' }), text);
    expect(() => checkChunk(noTurns, (message) => { throw new Error(message); })).toThrow();
  });
});

describe('a speaker’s lead', () => {
  it('is the speaker, a colon and a space, for any speaker and past the speakers it keeps', () => {
    for (let i = 0; i < 1100; i++) expect(speakerLead(`speaker ${i}`)).toBe(`speaker ${i}: `);
    expect(speakerLead('')).toBe(': ');
    expect(speakerLead('speaker 7')).toBe('speaker 7: ');
  });
});

describe('a turn’s theme', () => {
  it('is its speaker and its text on one line, capped at 160 characters, read from a long turn’s head alike', () => {
    // The theme as the whole text gives it, whitespace collapsed first.
    const reference = (speaker: string, text: string): string => {
      const line = text.replace(/\s+/g, ' ').trim();
      return `${speaker}: ${line.length > 160 ? `${line.slice(0, 157)}…` : line}`;
    };
    let seed = 7;
    const next = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      // The high bits: an LCG's low bits repeat with a short period.
      return Math.floor((seed / 2147483648) * n);
    };
    const pieces = ['word', ' ', '  ', '\n', '\t \n ', 'é', 'a'.repeat(40), ' '.repeat(300), '\n'.repeat(600), '\u00a0'];
    // Texts of words and single spaces, with now and then one other whitespace: a theme read as
    // a slice of the text where none is collapsed near its head.
    const spaced = ['word ', 'wörd ', 'b ', 'c'.repeat(30), ' ', '\n', '\u00a0'];
    for (let trial = 0; trial < 4000; trial++) {
      const from = trial % 2 === 0 ? pieces : spaced;
      const text = Array.from({ length: next(80) }, () => (from === spaced && next(40) > 1 ? from[next(4)] : from[next(from.length)])).join('');
      expect(turnTheme('Ann', text)).toBe(reference('Ann', text));
    }
    // Every unit \s matches, and the nearest ones it does not, collapse as the expression does.
    const spaces = Array.from({ length: 0x10000 }, (_, c) => String.fromCharCode(c)).filter((c) => /\s/.test(c));
    for (const other of [...spaces, '\u180e', '\u200b', '\u2060', '\u0085', 'x']) {
      for (const text of [`${other}a${other}${other}b c${other}`, `${'w '.repeat(90)}${other}${'v'.repeat(20)}`]) expect(turnTheme('Ann', text)).toBe(reference('Ann', text));
    }
    // Lines of about the cap's length, a run to collapse at every place near it.
    for (let length = 150; length <= 170; length++) {
      for (let at = 140; at <= length; at++) {
        for (const run of [' ', '  ', '\n', ' \t ']) {
          const text = `${'y'.repeat(at)}${run}${'z'.repeat(length - at)}`;
          expect(turnTheme('Ann', text)).toBe(reference('Ann', text));
          expect(turnTheme('Ann', `${run}${text}${run}`)).toBe(reference('Ann', `${run}${text}${run}`));
        }
      }
    }
    expect(turnTheme('Ann', `${' '.repeat(600)}short`)).toBe('Ann: short');
    expect(turnTheme('Ann', 'x'.repeat(2000))).toBe(`Ann: ${'x'.repeat(157)}…`);
  });
});
