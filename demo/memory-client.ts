import type { Envelope, IngestProgressView, WorkerMessage, WorkerReplies, WorkerRequest } from './protocol.ts';

/** A failure reported by the worker, with PRISM's error code when it was a PrismError. */
export class DemoError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'DemoError';
  }
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: DemoError) => void;
  onProgress: ((progress: IngestProgressView) => void) | undefined;
}

/** The page's handle on the memory worker: one promise per request. */
export class MemoryClient {
  private readonly worker = new Worker(new URL('./memory.worker.ts', import.meta.url), { type: 'module', name: 'prism-memory' });
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  constructor(onStatus: (text: string) => void) {
    this.worker.onmessage = (event: MessageEvent<WorkerMessage>) => {
      const message = event.data;
      if (message.kind === 'status') return onStatus(message.text);
      const pending = this.pending.get(message.id);
      if (!pending) return;
      if (message.kind === 'progress') return pending.onProgress?.(message.progress);
      this.pending.delete(message.id);
      if (message.ok) pending.resolve(message.value);
      else pending.reject(new DemoError(message.error.code, message.error.message));
    };
    this.worker.onerror = (event) => {
      const error = new DemoError('WORKER_FAILED', event.message || 'the memory worker failed to start');
      for (const pending of this.pending.values()) pending.reject(error);
      this.pending.clear();
    };
  }

  request<T extends WorkerRequest['type']>(
    request: Extract<WorkerRequest, { type: T }>,
    onProgress?: (progress: IngestProgressView) => void,
  ): Promise<WorkerReplies[T]> {
    const id = this.nextId++;
    return new Promise<WorkerReplies[T]>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (value: unknown) => void, reject, onProgress });
      const envelope: Envelope = { id, request };
      this.worker.postMessage(envelope);
    });
  }
}
