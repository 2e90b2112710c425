import { EDGE_TYPES, LAYERS } from '../src/graph/types.ts';
import type { Conversation } from '../src/ingest/conversation.ts';
import { parseLocomo, type LocomoSample } from '../src/ingest/locomo.ts';
import type { RetrievalMode } from '../src/retrieve/types.ts';
import { parseConversationInput } from './conversation-input.ts';
import { EDGE_STYLE, GraphView, LAYER_STYLE } from './graph-view.ts';
import { DemoError, MemoryClient } from './memory-client.ts';
import { DEV_LOCOMO_URL, MODELS_PATH } from './paths.ts';
import type { AskView, DemoSettings, IngestProgressView, MemoryView, NeighbourhoodView, UnitView } from './protocol.ts';
import { SAMPLE } from './samples/index.ts';

// ---------------------------------------------------------------------------------------------
// DOM helpers

function byId<T extends HTMLElement>(id: string, type: new () => T): T {
  const element = document.getElementById(id);
  if (!(element instanceof type)) throw new Error(`#${id} is missing from index.html`);
  return element;
}

type Child = Node | string | null;

/** Builds an element; text is always set as text, never parsed as HTML. */
function h<K extends keyof HTMLElementTagNameMap>(tag: K, props: Partial<Record<string, string>> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(props)) if (value !== undefined) element.setAttribute(name, value);
  for (const child of children) if (child !== null) element.append(child);
  return element;
}

const ui = {
  status: byId('status', HTMLElement),
  llmStatus: byId('llm-status', HTMLElement),
  useSample: byId('use-sample', HTMLButtonElement),
  usePaste: byId('use-paste', HTMLButtonElement),
  text: byId('conversation-text', HTMLTextAreaElement),
  name: byId('conversation-name', HTMLInputElement),
  ingest: byId('ingest', HTMLButtonElement),
  cancelIngest: byId('cancel-ingest', HTMLButtonElement),
  progress: byId('progress', HTMLElement),
  progressFill: byId('progress-fill', HTMLElement),
  progressText: byId('progress-text', HTMLElement),
  loadMessage: byId('load-message', HTMLElement),
  devLocomo: byId('dev-locomo', HTMLDetailsElement),
  locomoUrl: byId('locomo-url', HTMLInputElement),
  locomoFetch: byId('locomo-fetch', HTMLButtonElement),
  locomoSample: byId('locomo-sample', HTMLSelectElement),
  locomoIngest: byId('locomo-ingest', HTMLButtonElement),
  memorySummary: byId('memory-summary', HTMLElement),
  layerCounts: byId('layer-counts', HTMLElement),
  edgeCounts: byId('edge-counts', HTMLElement),
  sessions: byId('sessions', HTMLUListElement),
  forgetAll: byId('forget-all', HTMLButtonElement),
  askForm: byId('ask-form', HTMLFormElement),
  question: byId('question', HTMLInputElement),
  ask: byId('ask', HTMLButtonElement),
  suggestions: byId('suggestions', HTMLElement),
  budget: byId('budget', HTMLInputElement),
  budgetValue: byId('budget-value', HTMLOutputElement),
  mode: byId('mode', HTMLSelectElement),
  wantAnswer: byId('want-answer', HTMLInputElement),
  askMessage: byId('ask-message', HTMLElement),
  emptyState: byId('empty-state', HTMLElement),
  result: byId('result', HTMLElement),
  summary: byId('result-summary', HTMLElement),
  answer: byId('answer', HTMLElement),
  units: byId('units', HTMLOListElement),
  graph: byId('graph', HTMLElement),
  graphCaption: byId('graph-caption', HTMLElement),
  graphDetail: byId('graph-detail', HTMLElement),
  graphLegend: byId('graph-legend', HTMLElement),
  contextTokens: byId('context-tokens', HTMLElement),
  context: byId('context', HTMLElement),
  openSettings: byId('open-settings', HTMLButtonElement),
  settings: byId('settings', HTMLDialogElement),
  modelUrl: byId('model-url', HTMLInputElement),
  llmBaseUrl: byId('llm-base-url', HTMLInputElement),
  llmModel: byId('llm-model', HTMLInputElement),
  llmKey: byId('llm-key', HTMLInputElement),
  llmExtraction: byId('llm-extraction', HTMLInputElement),
  llmClear: byId('llm-clear', HTMLButtonElement),
};

// ---------------------------------------------------------------------------------------------
// Settings: everything but the API key is remembered in localStorage.

const SETTINGS_KEY = 'prism-demo-settings';

interface StoredSettings {
  modelBaseUrl?: string;
  llmBaseUrl?: string;
  llmModel?: string;
  llmExtraction?: boolean;
}

function loadSettings(): DemoSettings {
  let stored: StoredSettings = {};
  try {
    stored = JSON.parse(localStorage.getItem(SETTINGS_KEY) ?? '{}') as StoredSettings;
  } catch {
    // Unreadable settings are as good as none.
  }
  const llm = stored.llmBaseUrl && stored.llmModel ? { baseURL: stored.llmBaseUrl, model: stored.llmModel } : null;
  return { modelBaseUrl: stored.modelBaseUrl ?? MODELS_PATH, llm, llmExtraction: stored.llmExtraction ?? false };
}

function saveSettings(settings: DemoSettings): void {
  const stored: StoredSettings = {
    modelBaseUrl: settings.modelBaseUrl,
    ...(settings.llm ? { llmBaseUrl: settings.llm.baseURL, llmModel: settings.llm.model } : {}),
    llmExtraction: settings.llmExtraction,
  };
  localStorage.setItem(SETTINGS_KEY, JSON.stringify(stored));
}

// ---------------------------------------------------------------------------------------------
// State

let settings = loadSettings();
let memory: MemoryView | null = null;
let lastQuery: string | null = null;
let busy = false;
let locomoSamples: LocomoSample[] = [];

const client = new MemoryClient((text) => setStatus(text, 'busy'));
const graph = new GraphView(ui.graph, (detail) => {
  ui.graphDetail.textContent = detail ?? 'Click a node or edge for details; hover or click a unit to trace its path.';
});

function setStatus(text: string, tone: 'ok' | 'busy' | 'error'): void {
  ui.status.textContent = text;
  // The pill may be cut short on a narrow screen; the whole text stays on hover.
  ui.status.title = text;
  ui.status.className = `pill ${tone}`;
}

function setBusy(value: boolean): void {
  busy = value;
  document.body.dataset.state = value ? 'busy' : memory ? 'ready' : 'error';
  for (const button of [ui.ingest, ui.ask, ui.forgetAll, ui.locomoIngest, ui.openSettings]) button.disabled = value || !memory;
  for (const button of ui.sessions.querySelectorAll('button')) button.disabled = value;
  ui.locomoIngest.disabled ||= locomoSamples.length === 0;
}

function showMessage(target: HTMLElement, text: string, isError = false): void {
  target.textContent = text;
  target.classList.toggle('error', isError);
}

function describe(error: unknown): string {
  if (error instanceof DemoError) return `${error.message} (${error.code})`;
  return error instanceof Error ? error.message : String(error);
}

// ---------------------------------------------------------------------------------------------
// Memory panel

function renderMemory(view: MemoryView): void {
  memory = view;
  const { stats } = view;
  ui.memorySummary.textContent = `${view.sessions.length} session${view.sessions.length === 1 ? '' : 's'} · ${stats.chunks} chunk${stats.chunks === 1 ? '' : 's'}`;
  ui.layerCounts.replaceChildren(
    ...LAYERS.map((layer) =>
      h(
        'div',
        { class: 'tile', 'data-layer': layer, 'data-count': String(stats.nodes[layer]) },
        swatch(layer),
        h('div', {}, h('b', {}, String(stats.nodes[layer])), h('br'), h('span', {}, stats.nodes[layer] === 1 ? LAYER_STYLE[layer].name : LAYER_STYLE[layer].plural)),
      ),
    ),
  );
  ui.edgeCounts.replaceChildren(
    ...EDGE_TYPES.flatMap((type) => [
      h('span', {}, edgeLine(type), `${EDGE_STYLE[type].name} edges`),
      h('span', { class: 'num', 'data-edge-type': type }, String(stats.edges[type])),
    ]),
  );
  ui.sessions.replaceChildren(
    ...(view.sessions.length === 0
      ? [h('li', { class: 'empty-line' }, 'Nothing stored yet — ingest a conversation.')]
      : view.sessions.map((session) => {
          const name = sessionName(session.sessionId);
          const forget = h('button', { type: 'button', class: 'small', title: `Forget ${session.sessionId}` }, 'Forget');
          forget.addEventListener('click', () => void forgetTarget({ sessionId: session.sessionId }, name));
          const counts = `${session.messages} turn${session.messages === 1 ? '' : 's'} · ${session.facts} fact${session.facts === 1 ? '' : 's'}`;
          return h(
            'li',
            { 'data-session': session.sessionId },
            h('div', {}, h('div', { class: 'session-name' }, name), h('div', { class: 'session-date' }, `${formatDate(session.date) ?? 'no date'} · ${counts}`)),
            forget,
          );
        })),
  );
  renderSuggestions(view);
  ui.llmStatus.textContent = view.llm ? `LLM: ${settings.llm?.model ?? 'on'}` : 'LLM off';
  ui.llmStatus.className = view.llm ? 'pill ok' : 'pill';
  const llmOption = ui.mode.querySelector<HTMLOptionElement>('option[value="llm"]');
  if (llmOption) llmOption.disabled = !view.llm;
  if (!view.llm) ui.mode.value = 'zero-llm';
  ui.wantAnswer.disabled = !view.llm;
  ui.wantAnswer.checked = view.llm;
  ui.wantAnswer.parentElement?.setAttribute('title', view.llm ? '' : 'Configure an LLM endpoint in Settings');
  setStatus(`Ready · ${view.embedderId.split('/').slice(1).join('/')}`, 'ok');
}

/** `maya-and-jonas/session_2` (a conversation's session) → `maya-and-jonas · session 2`. */
function sessionName(sessionId: string): string {
  return sessionId.replace('/', ' · ').replace(/_(\d+)$/, ' $1');
}

/** The conversation a session id belongs to (`maya-and-jonas/session_2` → `maya-and-jonas`); null for a lone session. */
function conversationOf(sessionId: string): string | null {
  const at = sessionId.indexOf('/');
  return at < 0 ? null : sessionId.slice(0, at);
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** An ISO time as stored (the time as written, no zone) → `17 Mar 2024, 19:40`; null when absent. */
function formatDate(iso: string | null): string | null {
  const m = iso ? /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}))?/.exec(iso) : null;
  if (!m) return iso;
  const [, year, month, day, hour, minute] = m;
  const date = `${Number(day)} ${MONTHS[Number(month) - 1] ?? month} ${year}`;
  return hour && `${hour}:${minute}` !== '00:00' ? `${date}, ${hour}:${minute}` : date;
}

function swatch(layer: keyof typeof LAYER_STYLE): HTMLElement {
  return h('span', { class: `swatch ${LAYER_STYLE[layer].shape}`, style: `background:${LAYER_STYLE[layer].colour}` });
}

function edgeLine(type: keyof typeof EDGE_STYLE): HTMLElement {
  const style = EDGE_STYLE[type];
  return h('span', { class: 'line', style: `border-top-style:${style.line};border-top-color:${style.colour};border-top-width:${style.line === 'dotted' ? 3 : 2}px` });
}

async function openMemory(): Promise<void> {
  setBusy(true);
  try {
    renderMemory(await client.request({ type: 'open', settings }));
  } catch (error) {
    memory = null;
    setStatus('Could not open the memory', 'error');
    showMessage(ui.loadMessage, describe(error), true);
  } finally {
    setBusy(false);
  }
}

/** Forgets after the user confirms; `what` names the target in the question and the outcome. */
async function forgetTarget(target: { sessionId: string } | 'all', what: string): Promise<void> {
  if (!confirm(`Forget ${what}? Its turns, facts and links are deleted from this browser.`)) return;
  setBusy(true);
  try {
    const result = await client.request({ type: 'forget', target });
    renderMemory(result.memory);
    showMessage(ui.loadMessage, `Forgot ${what}: ${result.chunksDeleted} chunk${result.chunksDeleted === 1 ? '' : 's'} deleted.`);
    // The last result may cite what was just forgotten.
    clearResult();
  } catch (error) {
    showMessage(ui.loadMessage, describe(error), true);
  } finally {
    setBusy(false);
  }
}

// ---------------------------------------------------------------------------------------------
// Loading conversations

function chooseSource(source: 'sample' | 'paste'): void {
  ui.useSample.setAttribute('aria-selected', String(source === 'sample'));
  ui.usePaste.setAttribute('aria-selected', String(source === 'paste'));
  if (source === 'sample') {
    ui.text.value = SAMPLE.text;
    ui.name.value = SAMPLE.name;
  } else {
    ui.text.value = '';
    ui.name.value = 'my-conversation';
    ui.text.placeholder = '# 9:00 am on 2 June, 2024\nAlex: I just moved to Utrecht.\nSam: Congrats! …';
    ui.text.focus();
  }
}

const STAGES: Record<IngestProgressView['stage'], string> = {
  extract: 'Extracting facts',
  embed: 'Embedding with MiniLM',
  commit: 'Saving to IndexedDB',
  consolidate: 'Linking causes (LLM)',
  done: 'Finishing',
};

function totalNodes(view: MemoryView | null): number {
  return view ? Object.values(view.stats.nodes).reduce((a, b) => a + b, 0) : 0;
}

async function ingest(conversations: Conversation[]): Promise<void> {
  const nodesBefore = totalNodes(memory);
  setBusy(true);
  ui.cancelIngest.hidden = false;
  ui.progress.hidden = false;
  ui.progressFill.style.width = '0%';
  ui.progressText.textContent = 'Starting…';
  showMessage(ui.loadMessage, '');
  const started = performance.now();
  const onProgress = (p: IngestProgressView): void => {
    const elapsed = (performance.now() - started) / 1000;
    const fraction = p.overallTotal === 0 ? 1 : p.overallDone / p.overallTotal;
    ui.progressFill.style.width = `${Math.round(fraction * 100)}%`;
    const left = p.overallDone > 0 ? (elapsed / p.overallDone) * (p.overallTotal - p.overallDone) : null;
    const eta = p.overallDone >= p.overallTotal ? 'almost done' : left === null ? 'estimating time left…' : `about ${formatSeconds(left)} left`;
    ui.progressText.textContent = `${STAGES[p.stage]} · chunk ${Math.min(p.overallDone + 1, p.overallTotal)} of ${p.overallTotal} · ${eta}`;
    renderMemory(p.memory);
  };
  try {
    const result = await client.request({ type: 'ingest', conversations }, onProgress);
    renderMemory(result.memory);
    const added = result.reports.reduce((n, r) => n + r.chunksAdded, 0);
    const skipped = result.reports.reduce((n, r) => n + r.chunksSkipped, 0);
    // Counted from the tiles (nodes in memory before and after); the reports also count entities they only updated.
    const nodes = totalNodes(result.memory) - nodesBefore;
    const warnings = result.reports.flatMap((r) => r.warnings);
    const seconds = formatSeconds((performance.now() - started) / 1000);
    ui.progressFill.style.width = result.cancelled ? ui.progressFill.style.width : '100%';
    ui.progressText.textContent = result.cancelled ? `Stopped after ${seconds}; ingesting again resumes where it stopped.` : `Done in ${seconds}.`;
    showMessage(
      ui.loadMessage,
      `${added} chunk${added === 1 ? '' : 's'} added (${nodes} nodes)${skipped > 0 ? `, ${skipped} already in memory` : ''}.${warnings.length > 0 ? ` ${warnings.length} warning(s): ${warnings[0]}` : ''}`,
    );
    document.body.dataset.ingested = String(result.memory.stats.chunks);
    // "The memory is empty" no longer holds.
    if (result.memory.stats.chunks > 0) showMessage(ui.askMessage, '');
  } catch (error) {
    ui.progressText.textContent = 'Failed.';
    showMessage(ui.loadMessage, describe(error), true);
  } finally {
    ui.cancelIngest.hidden = true;
    setBusy(false);
  }
}

function formatSeconds(seconds: number): string {
  if (seconds < 60) return `${Math.max(1, Math.round(seconds))} s`;
  return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
}

async function ingestTextarea(): Promise<void> {
  let conversations: Conversation[];
  try {
    conversations = parseConversationInput(ui.text.value, ui.name.value.trim() || 'conversation');
  } catch (error) {
    showMessage(ui.loadMessage, describe(error), true);
    return;
  }
  // The sample's questions follow it under whatever name it is loaded.
  if (ui.text.value === SAMPLE.text) for (const c of conversations) questionsByConversation.set(c.id, SAMPLE.questions);
  await ingest(conversations);
}

async function readLocomo(): Promise<void> {
  try {
    const response = await fetch(ui.locomoUrl.value);
    if (!response.ok) throw new Error(`HTTP ${response.status} for ${ui.locomoUrl.value}`);
    locomoSamples = parseLocomo(await response.json());
    ui.locomoSample.replaceChildren(
      ...locomoSamples.map((sample, i) =>
        h('option', { value: String(i) }, `${sample.conversation.id} — ${sample.conversation.sessions.length} sessions, ${sample.questions.length} questions`),
      ),
    );
    ui.locomoSample.disabled = false;
    setBusy(busy);
  } catch (error) {
    showMessage(ui.loadMessage, describe(error), true);
  }
}

async function ingestLocomo(): Promise<void> {
  const sample = locomoSamples[Number(ui.locomoSample.value)];
  if (!sample) return;
  // Adversarial questions (category 5) have no answer in the conversation.
  questionsByConversation.set(
    sample.conversation.id,
    sample.questions.filter((q) => q.category !== 5).slice(0, 8).map((q) => q.question),
  );
  await ingest([sample.conversation]);
}

// ---------------------------------------------------------------------------------------------
// Asking

/** Suggested questions of each conversation the page knows questions for, by conversation id. */
const questionsByConversation = new Map<string, readonly string[]>([[SAMPLE.name, SAMPLE.questions]]);

/** Chips for the conversations in memory (newest first), so they always ask about what is loaded. */
function renderSuggestions(view: MemoryView): void {
  const loaded = [...new Set(view.sessions.map((s) => conversationOf(s.sessionId)))].reverse();
  const questions = loaded.flatMap((id) => (id === null ? [] : (questionsByConversation.get(id) ?? [])));
  ui.suggestions.replaceChildren(
    ...questions.map((question) => {
      const chip = h('button', { type: 'button' }, question);
      chip.addEventListener('click', () => {
        ui.question.value = question;
        void runAsk(question);
      });
      return chip;
    }),
  );
}

async function runAsk(query: string): Promise<void> {
  if (query.trim() === '' || !memory) return;
  if (memory.stats.chunks === 0) {
    showMessage(ui.askMessage, 'The memory is empty: ingest a conversation first.', true);
    return;
  }
  lastQuery = query;
  setBusy(true);
  showMessage(ui.askMessage, '');
  try {
    const view = await client.request({
      type: 'ask',
      query,
      budget: Number(ui.budget.value),
      mode: ui.mode.value as RetrievalMode,
      answer: ui.wantAnswer.checked && memory.llm,
    });
    renderResult(view);
    // Counts answered questions, so scripts driving the page can wait for the next one.
    document.body.dataset.answered = String(Number(document.body.dataset.answered ?? 0) + 1);
    if (view.warnings.length > 0) showMessage(ui.askMessage, `Warnings: ${view.warnings.join('; ')}`);
  } catch (error) {
    showMessage(ui.askMessage, describe(error), true);
  } finally {
    setBusy(false);
  }
}

const TIER_NAMES: Record<AskView['tier'], string> = {
  keyword: 'keyword tier',
  prototype: 'prototype tier (MiniLM)',
  llm: 'LLM tier',
  none: 'no tier was confident',
};

function stat(label: string, value: Child, testId?: string): HTMLElement {
  return h('div', { class: 'stat', ...(testId ? { 'data-testid': testId } : {}) }, h('span', { class: 'label' }, label), h('span', { class: 'value' }, value));
}

function renderResult(view: AskView): void {
  ui.emptyState.hidden = true;
  ui.result.hidden = false;
  ui.summary.replaceChildren(
    stat('Intent', h('span', { class: 'badge', 'data-testid': 'intent' }, view.intent)),
    stat('Decided by', h('span', { class: 'badge tier', 'data-testid': 'tier' }, TIER_NAMES[view.tier])),
    stat('Mode', view.mode),
    stat('Context', `${view.tokens} / ${view.budget} tokens`),
    stat('Units', String(view.units.length)),
    stat('Dialog turns', String(view.dialogIds.length)),
    stat('LLM', `${view.llmCalls} call${view.llmCalls === 1 ? '' : 's'} · ${view.llmTokens} tokens`, 'llm-usage'),
    stat('Time', `${Math.round(view.ms)} ms`),
  );
  ui.answer.hidden = view.answer === null;
  if (view.answer !== null) ui.answer.replaceChildren(h('div', { class: 'label' }, 'Answer'), h('div', {}, view.answer));
  pinned = null;
  ui.units.replaceChildren(...groupByEpisode(view.units).map((group, i) => episodeCard(group, i + 1)));
  ui.contextTokens.textContent = `${view.tokens} tokens (o200k) of a ${view.budget}-token budget`;
  ui.context.textContent = view.context;
  renderGraph(view.neighbourhood);
}

/** Units of one Episode (a whole Episode, or several of its turns), in rank order of their best unit. */
interface EpisodeGroup {
  episodeId: string;
  units: UnitView[];
}

function groupByEpisode(units: readonly UnitView[]): EpisodeGroup[] {
  const groups = new Map<string, EpisodeGroup>();
  for (const unit of units) {
    const group = groups.get(unit.episodeId);
    if (group) group.units.push(unit);
    else groups.set(unit.episodeId, { episodeId: unit.episodeId, units: [unit] });
  }
  return [...groups.values()];
}

function turnItems(unit: UnitView): HTMLElement[] {
  const showScore = unit.kind !== 'episode';
  return unit.turns.map((turn) =>
    h(
      'li',
      { 'data-dialog-id': turn.id },
      h('span', { class: 'did' }, turn.id),
      h('span', { class: 'text' }, h('span', { class: 'speaker' }, `${turn.speaker}: `), turn.text),
      h('span', { class: 'turn-score', title: 'turn score' }, showScore ? unit.score.toFixed(3) : ''),
    ),
  );
}

/** A unit's winning path drawn in the graph: on hover, and kept after a click on the unit. */
interface PathFocus {
  id: string;
  nodeIds: string[];
  edgeIds: string[];
}

let pinned: PathFocus | null = null;

function showPinned(): void {
  graph.focus(pinned?.nodeIds ?? null, pinned?.edgeIds ?? []);
}

function episodeCard(group: EpisodeGroup, rank: number): HTMLElement {
  const [first] = group.units;
  if (!first) throw new Error('empty unit group');
  const firstTurn = first.turns[0];
  const name = firstTurn ? sessionName(firstTurn.sessionId) : first.episodeId;
  const date = formatDate(firstTurn?.date ?? null);
  const dialogIds = group.units.flatMap((u) => u.dialogIds);
  const what = first.kind === 'episode' ? 'whole episode' : `${dialogIds.length} turn${dialogIds.length === 1 ? '' : 's'} of this episode`;
  const item = h(
    'li',
    { class: 'unit', 'data-episode': group.episodeId, 'data-dialog-ids': dialogIds.join(' '), 'data-testid': 'unit' },
    h(
      'div',
      { class: 'unit-head' },
      h('span', { class: 'unit-rank' }, `#${rank}`),
      h('span', { class: 'unit-header' }, date || name),
      h('span', { class: 'unit-kind' }, `${name} · ${what}`),
      h('span', { class: 'unit-score', title: 'unit score (higher is better)' }, `score ${first.score.toFixed(3)}`),
    ),
    h('div', { class: 'trace', title: `winning path (${first.template}), path cost ${first.pathCost.toFixed(3)}` }, first.trace),
    h('ul', { class: 'turns' }, ...group.units.flatMap(turnItems)),
  );
  const path: PathFocus = { id: group.episodeId, nodeIds: [first.episodeId, ...first.pathNodeIds], edgeIds: first.pathEdgeIds };
  item.addEventListener('mouseenter', () => graph.focus(path.nodeIds, path.edgeIds));
  item.addEventListener('mouseleave', () => showPinned());
  item.addEventListener('click', () => {
    pinned = pinned?.id === path.id ? null : path;
    for (const card of ui.units.children) card.classList.toggle('pinned', card === item && pinned !== null);
    showPinned();
  });
  return item;
}

function renderGraph(view: NeighbourhoodView): void {
  graph.render(view);
  graph.fit();
  ui.graphCaption.textContent = `${view.nodes.length} nodes, ${view.edges.length} edges around the retrieved Episodes · ${view.omittedNodes} more nodes in memory`;
  const layerCounts = LAYERS.map((layer) => [layer, view.nodes.filter((n) => n.layer === layer).length] as const);
  const edgeCounts = EDGE_TYPES.map((type) => [type, view.edges.filter((e) => e.type === type).length] as const).filter(([, n]) => n > 0);
  ui.graphLegend.replaceChildren(
    ...layerCounts.map(([layer, n]) =>
      h('span', { class: 'item', 'data-layer': layer }, swatch(layer), LAYER_STYLE[layer].name, h('span', { class: 'num' }, String(n))),
    ),
    ...edgeCounts.map(([type, n]) =>
      h('span', { class: 'item', 'data-edge-type': type }, edgeLine(type), EDGE_STYLE[type].name, h('span', { class: 'num' }, String(n))),
    ),
    h('span', { class: 'item' }, h('span', { class: 'line', style: 'border-top:4px solid #0f172a' }), 'winning path'),
  );
}

function clearResult(): void {
  lastQuery = null;
  ui.result.hidden = true;
  ui.emptyState.hidden = false;
}

// ---------------------------------------------------------------------------------------------
// Settings dialog

function openSettings(): void {
  ui.modelUrl.value = settings.modelBaseUrl;
  ui.llmBaseUrl.value = settings.llm?.baseURL ?? '';
  ui.llmModel.value = settings.llm?.model ?? '';
  ui.llmKey.value = settings.llm?.apiKey ?? '';
  ui.llmExtraction.checked = settings.llmExtraction;
  ui.settings.showModal();
}

async function applySettings(): Promise<void> {
  const baseURL = ui.llmBaseUrl.value.trim();
  const model = ui.llmModel.value.trim();
  const apiKey = ui.llmKey.value.trim();
  settings = {
    modelBaseUrl: ui.modelUrl.value.trim() || MODELS_PATH,
    llm: baseURL && model ? { baseURL, model, ...(apiKey ? { apiKey } : {}) } : null,
    llmExtraction: ui.llmExtraction.checked,
  };
  saveSettings(settings);
  await openMemory();
}

// ---------------------------------------------------------------------------------------------
// Wiring

ui.useSample.addEventListener('click', () => chooseSource('sample'));
ui.usePaste.addEventListener('click', () => chooseSource('paste'));
ui.ingest.addEventListener('click', () => void ingestTextarea());
ui.cancelIngest.addEventListener('click', () => void client.request({ type: 'cancel-ingest' }));
ui.forgetAll.addEventListener('click', () => void forgetTarget('all', 'everything'));
ui.askForm.addEventListener('submit', (event) => {
  event.preventDefault();
  if (!busy) void runAsk(ui.question.value);
});
ui.budget.addEventListener('input', () => (ui.budgetValue.value = `${ui.budget.value} tokens`));
ui.budget.addEventListener('change', () => {
  if (lastQuery && !busy) void runAsk(lastQuery);
});
ui.mode.addEventListener('change', () => {
  if (lastQuery && !busy) void runAsk(lastQuery);
});
ui.openSettings.addEventListener('click', openSettings);
ui.llmClear.addEventListener('click', () => {
  ui.llmBaseUrl.value = '';
  ui.llmModel.value = '';
  ui.llmKey.value = '';
});
ui.settings.addEventListener('close', () => {
  if (ui.settings.returnValue === 'save') void applySettings();
});
ui.locomoFetch.addEventListener('click', () => void readLocomo());
ui.locomoIngest.addEventListener('click', () => void ingestLocomo());
window.addEventListener('resize', () => graph.fit());

if (import.meta.env.DEV) {
  ui.devLocomo.hidden = false;
  ui.locomoUrl.value = DEV_LOCOMO_URL;
}
ui.budgetValue.value = `${ui.budget.value} tokens`;
chooseSource('sample');
void openMemory();
