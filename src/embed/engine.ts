/**
 * The ONNX runtime under the MiniLM embedder, reduced to what it needs: load a model from bytes,
 * run it on int64 token tensors, read `last_hidden_state`. onnxruntime-web (browsers, workers,
 * Deno) and onnxruntime-node (Node) both implement it; neither is imported until an engine loads.
 */
export interface InferenceEngine {
  /** Names the runtime and its settings, e.g. `onnxruntime-node 1.14 (cpu, 2 threads)`; shown in benches and errors. */
  readonly label: string;
  createSession(modelBytes: Uint8Array): Promise<EngineSession>;
}

/** int64 inputs of one `[rows, width]` batch, by model input name. */
export type EngineFeeds = Record<string, BigInt64Array>;

export interface EngineSession {
  readonly inputNames: readonly string[];
  /** Runs one batch; returns `last_hidden_state` as `[rows, width, dim]` floats. Never called concurrently. */
  run(feeds: EngineFeeds, rows: number, width: number): Promise<{ data: Float32Array; dims: readonly number[] }>;
  release(): Promise<void>;
}

/**
 * The slice of onnxruntime's JS API (common to onnxruntime-web and onnxruntime-node, whose
 * versions differ) that the engines call.
 */
export interface OrtModule<SessionOptions> {
  Tensor: new (type: 'int64', data: BigInt64Array, dims: readonly number[]) => unknown;
  InferenceSession: {
    /** From the model's bytes, or (onnxruntime-node) from a file path. */
    create(model: Uint8Array | string, options: SessionOptions): Promise<OrtSession>;
  };
}

interface OrtSession {
  readonly inputNames: readonly string[];
  run(feeds: Record<string, never>): Promise<Record<string, { data: unknown; dims: readonly number[] } | undefined>>;
  /** Absent in onnxruntime-node 1.14, whose sessions are freed by the garbage collector. */
  release?(): Promise<void>;
}

/** Wraps an onnxruntime session (web or node: the same JS API) as an `EngineSession`. */
export async function ortSession<SessionOptions>(ort: OrtModule<SessionOptions>, model: Uint8Array | string, options: SessionOptions): Promise<EngineSession> {
  const session = await ort.InferenceSession.create(model, options);
  return {
    inputNames: session.inputNames,
    async run(feeds, rows, width) {
      const tensors: Record<string, unknown> = {};
      for (const [name, data] of Object.entries(feeds)) tensors[name] = new ort.Tensor('int64', data, [rows, width]);
      const result = await session.run(tensors as Record<string, never>);
      const hidden = result['last_hidden_state'];
      if (!hidden || !(hidden.data instanceof Float32Array)) throw new Error('model output last_hidden_state is missing or not float32');
      return { data: hidden.data, dims: hidden.dims };
    },
    release: async () => {
      await session.release?.();
    },
  };
}
