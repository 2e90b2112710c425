import type { MemoryGraph } from '../graph/memory-graph.ts';
import { LexicalIndex } from '../retrieve/lexical.ts';
import type { GraphStore } from '../store/types.ts';

/** The name the lexical index is saved under in a store's derived state (`GraphStore.saveDerived`). */
const LEXICAL_STATE = 'lexical';

/**
 * Share of an index's documents it may gain or lose after it was last saved before it is saved
 * again. Saving costs about a tenth of building (a 30,000-message scope: 0.2 s against 3.5 s), and
 * an open catches up on what the saved copy lacks by indexing just that, so a tenth keeps the
 * catch-up well under the build it replaces without saving after every add.
 */
const RESAVE_SHARE = 0.1;

/** What of a partition (memory/partition.ts) its lexical index is kept for. */
export interface LexicalHolder {
  readonly name: string;
  readonly state: { readonly graph: MemoryGraph; readonly version: number };
  /** The store revision `state` reflects. */
  readonly revision: number;
  lexical: Promise<LexicalState> | null;
}

/** A partition's lexical index and what keeping it saved needs. */
export interface LexicalState {
  readonly index: LexicalIndex;
  /** The partition state's `version` the index is in step with. */
  version: number;
  /** Documents added or dropped since the index was last saved (or tried to be). */
  unsaved: number;
  /** The save in flight, if any. */
  saving: Promise<void> | null;
}

/**
 * The partition's lexical index, in step with its graph. At first use it is read from the copy
 * the store keeps (`GraphStore.loadDerived`) and caught up with the graph; where there is no
 * usable copy it is built from the graph, which on a large scope is most of a cold open (4 s of
 * 10 s at 30,000 messages). Once a tenth of its documents changed since it was last saved, it is
 * saved again after the search that needed it has its answer (`settleLexical` waits for that).
 */
export async function lexicalIndexOf(store: GraphStore, partition: LexicalHolder): Promise<LexicalIndex> {
  if (!partition.lexical) {
    const opening = openLexical(store, partition);
    partition.lexical = opening;
    // A failed read is tried again by the next search.
    opening.catch(() => {
      if (partition.lexical === opening) partition.lexical = null;
    });
  }
  const lexical = await partition.lexical;
  inStep(partition, lexical);
  const saveDerived = store.saveDerived?.bind(store);
  if (saveDerived && lexical.saving === null && dueForSave(lexical)) lexical.saving = saveAfter(saveDerived, partition, lexical, new Promise((resolve) => setTimeout(resolve, 0)));
  return lexical.index;
}

/**
 * After this process committed a batch that drops the store's saved copy (a delete, see
 * `dropsDerived`): the index is saved again after the next search or as the memory closes,
 * however little changed, or the next open would build it from the records. (A delete by
 * another process or tab is not seen as one here: the store then holds no copy until a tenth of
 * the index changed here, or a fresh open builds and saves one.)
 */
export function noteCopyDropped(partition: LexicalHolder): void {
  void partition.lexical?.then(
    (lexical) => {
      lexical.unsaved = Number.POSITIVE_INFINITY;
    },
    () => undefined,
  );
}

/**
 * Waits for the partition's lexical index save in flight, if any, then saves the index if it is
 * due (as a search would have: a delete dropped the store's copy, or a tenth of it changed since):
 * a memory closed after a delete would otherwise be opened next by building the index afresh
 * (1.4 s of a 5 s open in Chromium at 10,000 messages). A failed save is only a rebuild later.
 */
export async function settleLexical(store: GraphStore, partition: LexicalHolder): Promise<void> {
  const lexical = await partition.lexical?.catch(() => null);
  if (!lexical) return;
  await lexical.saving;
  const saveDerived = store.saveDerived?.bind(store);
  if (!saveDerived) return;
  inStep(partition, lexical);
  if (!dueForSave(lexical)) return;
  lexical.saving = saveAfter(saveDerived, partition, lexical, Promise.resolve());
  await lexical.saving;
}

/** Brings the index in step with the partition's graph, counting what changed as unsaved. */
function inStep(partition: LexicalHolder, lexical: LexicalState): void {
  const { graph, version } = partition.state;
  if (lexical.version !== version) {
    lexical.unsaved += lexical.index.update(graph, graph.takeChanges());
    lexical.version = version;
  }
}

function dueForSave(lexical: LexicalState): boolean {
  return lexical.unsaved > RESAVE_SHARE * lexical.index.size;
}

async function openLexical(store: GraphStore, partition: LexicalHolder): Promise<LexicalState> {
  const saved = (await store.loadDerived?.(partition.name, LEXICAL_STATE)) ?? null;
  // Read against the graph as it is now: a write that landed while the copy was read is caught up with like any other.
  const { graph, version } = partition.state;
  const read = saved ? LexicalIndex.fromBytes(saved.bytes, graph) : null;
  // In step with the graph from here: what changes next, the next search catches up with (`inStep`).
  graph.takeChanges();
  if (read) return { index: read.index, version, unsaved: read.changed, saving: null };
  const index = LexicalIndex.fromGraph(graph);
  return { index, version, unsaved: index.size, saving: null };
}

/**
 * Saves the index once `ready` settles (a search saves after the current task, so that it answers
 * first); the bytes and the revision are read together then, and only while the index is in step
 * with the partition (a store refuses a save whose revision is no longer current). The promise
 * is the save's, and it never rejects.
 */
function saveAfter(saveDerived: NonNullable<GraphStore['saveDerived']>, partition: LexicalHolder, lexical: LexicalState, ready: Promise<unknown>): Promise<void> {
  const save = async (): Promise<void> => {
    await ready;
    if (lexical.version !== partition.state.version) return;
    const revision = partition.revision;
    const bytes = lexical.index.toBytes();
    // Counted as saved even when the store refuses or fails (full, read-only): the next try
    // waits for another tenth of changes rather than costing every search a serialisation.
    lexical.unsaved = 0;
    await saveDerived(partition.name, LEXICAL_STATE, revision, bytes);
  };
  return (
    save()
      // Derived state is never needed: a failed save costs a rebuild at a later open, nothing else.
      .catch(() => undefined)
      .finally(() => {
        lexical.saving = null;
      })
  );
}
