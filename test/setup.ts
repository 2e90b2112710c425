import { expect } from 'vitest';
import { VectorTable } from '../src/graph/vector-table.ts';
import { loadTokenCounter } from '../src/util/tokens.ts';

// Pure packing and chunking functions count tokens synchronously with the installed counter;
// `Memory.open` installs it in an app, and here every test file starts with the default o200k.
await loadTokenCounter();

// A VectorTable is a Map of vectors held compactly: it equals any Map with the same entries.
type Tester = Parameters<typeof expect.addEqualityTesters>[0][number];

expect.addEqualityTesters([
  function vectorTableEquality(this: ThisParameterType<Tester>, a: unknown, b: unknown, customTesters: Tester[]): boolean | undefined {
    if (!(a instanceof VectorTable) && !(b instanceof VectorTable)) return undefined;
    const isMap = (x: unknown): x is ReadonlyMap<unknown, unknown> => x instanceof Map || x instanceof VectorTable;
    if (!isMap(a) || !isMap(b)) return false;
    // As Map equality is: the same keys, each with an equal value, in any order.
    return a.size === b.size && [...a].every(([key, value]) => b.has(key) && this.equals(value, b.get(key), customTesters));
  },
]);
