/**
 * Hostile checkpoints and scopes damaged by older versions, on SQLite. Each crafted kind
 * (test/helpers/crafted-checkpoints.ts: a valid export edited by hand, re-encoded with a correct
 * CRC) is imported over a scope holding a memory; it survives when import answers as expected
 * (a typed error naming the fault and nothing committed, or a harmless acceptance) and add, list,
 * search, delete and import all work on the scope afterwards. Records lost are messages the scope
 * held before an import and not after it. Vectors come from the hashing embedder: these faults
 * are about validation and bookkeeping, not semantics.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PrismError } from '../../src/errors.ts';
import { Memory } from '../../src/memory.ts';
import { nodeUsearch } from '../../src/node.ts';
import type { Scope } from '../../src/scope.ts';
import { openSqliteStore } from '../../src/store/sqlite.node.ts';
import { CRAFTED_KINDS, STORED_DAMAGE, damageStoredScope, importCrafted, messageIds, outcomeHolds } from '../helpers/crafted-checkpoints.ts';
import { hashEmbedder } from '../helpers/hash-embedder.ts';
import type { Fault, FaultOutcome } from './fault.ts';

const VICTIM: Scope = { userId: 'victim' };
const BYSTANDER: Scope = { userId: 'bystander' };

interface Seeded {
  memory: Memory;
  path: string;
  open: () => Promise<Memory>;
  valid: Uint8Array;
  restore: Array<[Scope, Uint8Array]>;
}

/** A SQLite store holding two sessions of the victim and one of a bystander; every handle opened is closed after `run`. */
async function withSeededMemory(i: number, run: (seeded: Seeded) => Promise<FaultOutcome>): Promise<FaultOutcome> {
  const dir = await mkdtemp(join(tmpdir(), 'prism-fault-'));
  const path = join(dir, 'memory.sqlite');
  const usearch = await nodeUsearch();
  const handles: Memory[] = [];
  const open = async () => {
    const handle = await Memory.open({ store: await openSqliteStore(path), embedder: hashEmbedder(), createIndex: (dim) => usearch.createIndex({ dim }) });
    handles.push(handle);
    return handle;
  };
  try {
    const memory = await open();
    await memory.add({ ...VICTIM, sessionId: 'garden', date: '8 May, 2023', messages: [{ speaker: 'Mia', text: `My brother Tom planted ${i + 3} tomato plants in the garden.`, dialogId: 'g1' }, { speaker: 'Lee', text: 'Tom says they will be ready in August.', dialogId: 'g2' }] });
    await memory.add({ ...VICTIM, sessionId: 'trip', date: '20 May, 2023', messages: [{ speaker: 'Mia', text: `Tom and I drive to Lisbon in ${i + 2} weeks.`, dialogId: 't1' }] });
    await memory.add({ ...BYSTANDER, sessionId: 'notes', messages: [{ speaker: 'Bo', text: 'My cat Pixel sleeps on the piano.', dialogId: 'b1' }] });
    const valid = await memory.export(VICTIM);
    return await run({ memory, path, open, valid, restore: [[VICTIM, valid], [BYSTANDER, await memory.export(BYSTANDER)]] });
  } finally {
    for (const handle of handles) await handle.close();
    await rm(dir, { recursive: true, force: true });
  }
}

const missing = (before: readonly string[], after: readonly string[]): number => before.filter((id) => !after.includes(id)).length;

export const faults: Fault[] = [
  {
    name: `crafted checkpoints with valid CRCs (${CRAFTED_KINDS.length} kinds)`,
    runs: 3,
    run: (i) =>
      withSeededMemory(i, async ({ memory, valid, restore }) => {
        const victim = await messageIds(memory, VICTIM);
        let lost = 0;
        const wrong: string[] = [];
        for (const kind of CRAFTED_KINDS) {
          // A scope an earlier kind left unusable cannot even be measured: all of it counts as lost.
          const outcome = await importCrafted(memory, VICTIM, valid, kind, restore).catch((err: unknown) => ({ error: err, lost: victim, unchanged: false, failed: ['the scope was unusable before this import'] }));
          lost += outcome.lost.length;
          if (!outcomeHolds(kind, outcome)) {
            const answer = outcome.error instanceof PrismError ? `${outcome.error.code}: ${outcome.error.message}` : String(outcome.error);
            wrong.push(`${kind.name} → ${answer}; unchanged ${outcome.unchanged}; failed after: ${outcome.failed.join(', ') || 'nothing'}`);
          }
        }
        process.stderr.write(`  crafted checkpoints, run ${i}: ${CRAFTED_KINDS.length - wrong.length}/${CRAFTED_KINDS.length} kinds answered as expected${wrong.map((w) => `\n    ${w}`).join('')}\n`);
        return { survived: wrong.length === 0, recordsLost: lost };
      }),
  },
  {
    name: `scope damaged in the store by an older version (${STORED_DAMAGE.length} kinds): import and delete still work`,
    runs: 3,
    run: (i) =>
      withSeededMemory(i, async ({ memory, path, open, valid, restore }) => {
        const victim = await messageIds(memory, VICTIM);
        const bystander = await messageIds(memory, BYSTANDER);
        let lost = 0;
        const wrong: string[] = [];
        for (const damage of STORED_DAMAGE) {
          const step = async (name: string, run: () => Promise<boolean>) => {
            const held = await run().catch(() => false);
            if (!held) wrong.push(`${damage.name}: ${name}`);
          };
          damageStoredScope(path, VICTIM, damage);
          const fresh = await open();
          const code = damage.code ?? 'CORRUPT_CHECKPOINT';
          await step(`list fails with ${code}`, () => fresh.list(VICTIM).then(() => false, (err: unknown) => err instanceof PrismError && err.code === code));
          await step('import a valid checkpoint', async () => {
            await fresh.import(valid, VICTIM);
            return true;
          });
          lost += missing(victim, await messageIds(fresh, VICTIM));
          damageStoredScope(path, VICTIM, damage);
          await step('delete({ userId })', async () => (await fresh.delete(VICTIM)).chunksDeleted === 2 && (await fresh.list(VICTIM)).length === 0);
          lost += missing(bystander, await messageIds(fresh, BYSTANDER));
          await fresh.import(valid, VICTIM);
          damageStoredScope(path, VICTIM, damage);
          await step("delete('all')", async () => (await (await open()).delete('all')).chunksDeleted === 3 && (await memory.scopes()).length === 0);
          for (const [scope, bytes] of restore) await memory.import(bytes, scope);
        }
        process.stderr.write(`  damaged scopes, run ${i}: ${STORED_DAMAGE.length} kinds${wrong.map((w) => `\n    failed: ${w}`).join('')}\n`);
        return { survived: wrong.length === 0, recordsLost: lost };
      }),
  },
];
