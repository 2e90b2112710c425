import type { DurableObjectStorageLike } from '../../src/store/durable-object.ts';

/** The slices of workerd's Durable Object bindings the test workers use, typed locally. */
export interface ObjectState {
  storage: DurableObjectStorageLike;
}

export interface ObjectStub {
  fetch(request: Request): Promise<Response>;
}

/** The worker's environment: the `MEMORY` Durable Object namespace. */
export interface Env {
  MEMORY: { idFromName(name: string): unknown; get(id: unknown): ObjectStub };
}
