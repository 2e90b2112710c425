import { describe, expect, it } from 'vitest';
import type { EntityNode } from '../src/graph/types.ts';
import { validateBatch } from '../src/store/snapshot.ts';
import { appended, appendedTo } from '../src/util/appended.ts';
import { ingestShapedSample, pagedChunkIds } from '../e2e/support/sample-memory.ts';

describe('a list appended to another', () => {
  it('is a new array that names the one it extends, while that one keeps its length', () => {
    const head = ['a', 'b'];
    const list = appended(head, 'c', 'd');
    expect(list).toEqual(['a', 'b', 'c', 'd']);
    expect(list).not.toBe(head);
    expect(appendedTo(list)).toBe(head);
    // A copy, or a list made any other way, names none.
    expect(appendedTo([...list])).toBeUndefined();
    expect(appendedTo(head)).toBeUndefined();
    // Once the head grew, its items are no longer the list's first ones alone.
    head.push('x');
    expect(appendedTo(list)).toBeUndefined();
  });
});

describe('a write batch\'s Entity list appended to one checked before', () => {
  const sample = ingestShapedSample();
  const entity: EntityNode = { id: 'entity:speaker', key: sample.meta.nextKey, layer: 'entity', name: 'Speaker', entityType: 'person', chunkIds: pagedChunkIds(600) };
  const check = (chunkIds: string[]) => () => validateBatch({ putNodes: [{ ...entity, chunkIds }] }, sample.meta, []);
  const failure = (chunkIds: string[]) => {
    try {
      check(chunkIds)();
      return 'passed';
    } catch (error) {
      return (error as Error).message;
    }
  };

  it('is checked from where it grew: a bad id there is refused', () => {
    const checked = pagedChunkIds(600);
    expect(failure(checked)).toBe('passed');
    expect(failure(appended(checked, 'chunk-new', ''))).toBe(`node ${entity.id} chunkIds[601] must be a non-empty string`);
    expect(failure(appended(checked, 'chunk-new'))).toBe('passed');
  });

  it('is checked whole when the list it extends was never checked', () => {
    const unchecked = pagedChunkIds(600);
    unchecked[17] = '';
    expect(failure(appended(unchecked, 'chunk-new'))).toBe(`node ${entity.id} chunkIds[17] must be a non-empty string`);
  });
});
