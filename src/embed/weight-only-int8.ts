import { PrismError } from '../errors.ts';
import { bytesField, fieldString, fieldVarints, joinChunks, readFields, varintField, WireFormatError, type Chunks, type WireField } from './protobuf.ts';

/** Field numbers from onnx.proto for the messages the rewrite reads or writes. */
const MODEL_GRAPH = 7;
const GRAPH_NODE = 1;
const GRAPH_INITIALIZER = 5;
const GRAPH_INPUT = 11;
const GRAPH_VALUE_INFO = 13;
const NODE_INPUT = 1;
const NODE_OUTPUT = 2;
const NODE_NAME = 3;
const NODE_OP_TYPE = 4;
const NODE_ATTRIBUTE = 5;
const ATTRIBUTE_NAME = 1;
const ATTRIBUTE_INT = 3;
const TENSOR_DIMS = 1;
const TENSOR_DATA_TYPE = 2;
const TENSOR_NAME = 8;
const TENSOR_RAW_DATA = 9;
const VALUE_INFO_NAME = 1;
/** onnx.TensorProto.DataType values. */
const FLOAT = 1;
const UINT8 = 2;
const INT8 = 3;

interface GraphNode {
  readonly fields: readonly WireField[];
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  readonly opType: string;
}

function parseNode(encoded: Uint8Array): GraphNode {
  const fields = readFields(encoded);
  const strings = (number: number) => fields.filter((f) => f.field === number).map(fieldString);
  return { fields, inputs: strings(NODE_INPUT), outputs: strings(NODE_OUTPUT), opType: strings(NODE_OP_TYPE)[0] ?? '' };
}

function unsupported(detail: string): PrismError {
  return new PrismError('MODEL_LOAD_FAILED', `cannot run the int8 model with float activations: ${detail}`);
}

/**
 * Rewrites a dynamically quantized ONNX model (DynamicQuantizeLinear feeding MatMulInteger, as
 * onnxruntime's `quantize_dynamic` and this project's model build emit) so that its int8 weights
 * multiply float activations: each MatMulInteger becomes a float MatMul of the quantizer's input and
 * the weight minus its zero point (exact small integers), and each quantizer's scale becomes 1, so
 * the graph's own rescaling (Cast, then Mul by activation and weight scales) yields x·W directly.
 *
 * Why: the quantizer rounds activations to a grid set by each tensor's min and max, so a last-bit
 * float difference between two runtimes' kernels (native onnxruntime-node vs onnxruntime-web's
 * WASM: reductions, exp, erf, FMA) flips a rounding now and then, and each flip cascades through
 * later quantizers; the same int8 file then gives vectors only ≈0.99 apart across engines. With float
 * activations the engines agree as fp32 does, and a text's vector no longer depends on its batch.
 * The download stays the int8 file's; inference costs what fp32 costs.
 *
 * A model without dynamic quantization is returned as it is.
 */
export function weightOnlyInt8(model: Uint8Array): Uint8Array {
  try {
    return rewrite(model);
  } catch (cause) {
    if (cause instanceof WireFormatError) throw new PrismError('MODEL_LOAD_FAILED', `not an ONNX model: ${cause.message}`, { cause });
    throw cause;
  }
}

function rewrite(model: Uint8Array): Uint8Array {
  const modelFields = readFields(model);
  const graphField = modelFields.find((f) => f.field === MODEL_GRAPH);
  if (!graphField) throw unsupported('the model has no graph');
  const graphFields = readFields(graphField.bytes);
  const nodes = graphFields.filter((f) => f.field === GRAPH_NODE).map((f) => parseNode(f.bytes));
  const quantizers = new Map(nodes.filter((n) => n.opType === 'DynamicQuantizeLinear').map((n) => [n.outputs[0] ?? '', n]));
  const matMuls = new Set(nodes.filter((n) => n.opType === 'MatMulInteger'));
  if (quantizers.size === 0 && matMuls.size === 0) return model;

  const initializers = new Map<string, readonly WireField[]>();
  for (const f of graphFields) {
    if (f.field !== GRAPH_INITIALIZER) continue;
    const tensor = readFields(f.bytes);
    const name = tensor.find((t) => t.field === TENSOR_NAME);
    if (name) initializers.set(fieldString(name), tensor);
  }
  const consumers = new Map<string, GraphNode[]>();
  for (const node of nodes) for (const input of node.inputs) consumers.set(input, [...(consumers.get(input) ?? []), node]);

  const added: Chunks = [];
  const floatWeights = new Map<string, string>();
  /** The float tensor standing in for one int8 operand of a MatMulInteger. */
  const floatOperand = (input: string, zeroPoint: string, isWeightSide: boolean): string => {
    const quantizer = quantizers.get(input);
    if (quantizer) {
      if (zeroPoint !== '' && zeroPoint !== quantizer.outputs[2]) throw unsupported(`${input} is dequantized with a zero point other than its quantizer's`);
      return quantizer.inputs[0] ?? '';
    }
    const weight = initializers.get(input);
    if (!weight || !isWeightSide) throw unsupported(`MatMulInteger input ${input} is neither dynamically quantized nor a constant weight`);
    const key = `${input}\u0000${zeroPoint}`;
    const known = floatWeights.get(key);
    if (known) return known;
    const name = `${input}/float`;
    added.push(...dequantizedWeight(name, weight, zeroPoint === '' ? undefined : initializers.get(zeroPoint)));
    floatWeights.set(key, name);
    return name;
  };

  const rewritten = new Map<GraphNode, Chunks>();
  const retyped = new Set<string>();
  for (const node of matMuls) {
    const [a = '', b = '', aZero = '', bZero = ''] = node.inputs;
    const output = node.outputs[0] ?? '';
    for (const consumer of consumers.get(output) ?? []) {
      if (consumer.opType !== 'Cast' || castTarget(consumer) !== FLOAT) throw unsupported(`MatMulInteger output ${output} is read by ${consumer.opType}, not a Cast to float`);
    }
    const name = node.fields.find((f) => f.field === NODE_NAME);
    rewritten.set(
      node,
      bytesField(GRAPH_NODE, [
        ...bytesField(NODE_INPUT, floatOperand(a, aZero, false)),
        ...bytesField(NODE_INPUT, floatOperand(b, bZero, true)),
        ...bytesField(NODE_OUTPUT, output),
        ...(name ? [name.encoded] : []),
        ...bytesField(NODE_OP_TYPE, 'MatMul'),
      ]),
    );
    retyped.add(output);
  }
  for (const quantizer of quantizers.values()) {
    const [quantized = '', scale = '', zeroPoint = ''] = quantizer.outputs;
    for (const output of [quantized, zeroPoint]) {
      if ((consumers.get(output) ?? []).some((consumer) => !matMuls.has(consumer))) throw unsupported(`${output} is read by something other than MatMulInteger`);
    }
    added.push(...floatInitializer(scale, [], Float32Array.of(1)));
    rewritten.set(quantizer, []);
    for (const output of quantizer.outputs) retyped.add(output);
  }

  const stillRead = new Set(nodes.filter((n) => !rewritten.has(n)).flatMap((n) => n.inputs));
  const dropped = new Set([...matMuls].flatMap((n) => n.inputs).filter((name) => initializers.has(name) && !stillRead.has(name)));
  const named = (f: WireField, number: number): string => {
    const name = readFields(f.bytes).find((t) => t.field === number);
    return name ? fieldString(name) : '';
  };
  const graph: Chunks = [];
  for (const f of graphFields) {
    if (f.field === GRAPH_NODE) continue;
    if (f.field === GRAPH_INITIALIZER && dropped.has(named(f, TENSOR_NAME))) continue;
    if (f.field === GRAPH_INPUT && dropped.has(named(f, VALUE_INFO_NAME))) continue;
    if (f.field === GRAPH_VALUE_INFO && retyped.has(named(f, VALUE_INFO_NAME))) continue;
    graph.push(f.encoded);
  }
  const nodeFields = graphFields.filter((f) => f.field === GRAPH_NODE);
  graph.push(...nodes.flatMap((node, i) => rewritten.get(node) ?? [nodeFields[i]!.encoded]), ...added);
  return joinChunks(modelFields.flatMap((f) => (f === graphField ? bytesField(MODEL_GRAPH, graph) : [f.encoded])));
}

/** The `to` attribute of a Cast node. */
function castTarget(node: GraphNode): number | undefined {
  for (const f of node.fields) {
    if (f.field !== NODE_ATTRIBUTE) continue;
    const attribute = readFields(f.bytes);
    const name = attribute.find((a) => a.field === ATTRIBUTE_NAME);
    if (name && fieldString(name) === 'to') return attribute.find((a) => a.field === ATTRIBUTE_INT)?.varint;
  }
  return undefined;
}

/** The values of a uint8 or int8 tensor stored as raw data. */
function int8Values(tensor: readonly WireField[], what: string): Uint8Array | Int8Array {
  const type = tensor.find((f) => f.field === TENSOR_DATA_TYPE)?.varint;
  const raw = tensor.find((f) => f.field === TENSOR_RAW_DATA)?.bytes;
  if ((type !== UINT8 && type !== INT8) || !raw) throw unsupported(`${what} is not a uint8/int8 tensor with raw data`);
  return type === UINT8 ? raw : new Int8Array(raw.buffer, raw.byteOffset, raw.byteLength);
}

/** A `[rows, columns]` int8 weight minus its zero point (one, or one per column), as float32. */
function dequantizedWeight(name: string, weight: readonly WireField[], zeroPoint: readonly WireField[] | undefined): Chunks {
  const dims = fieldVarints(weight, TENSOR_DIMS);
  const [rows = 0, columns = 0] = dims;
  const values = int8Values(weight, name);
  const zeros = zeroPoint ? int8Values(zeroPoint, `${name}'s zero point`) : Uint8Array.of(0);
  if (dims.length !== 2 || values.length !== rows * columns) throw unsupported(`weight ${name} is not a matrix`);
  if (zeros.length !== 1 && zeros.length !== columns) throw unsupported(`weight ${name} has ${zeros.length} zero points for ${columns} columns`);
  const floats = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) floats[i] = values[i]! - zeros[zeros.length === 1 ? 0 : i % columns]!;
  return floatInitializer(name, dims, floats);
}

/** A float32 initializer; raw data is little-endian, as typed arrays are on every platform JS runs on. */
function floatInitializer(name: string, dims: readonly number[], values: Float32Array): Chunks {
  return bytesField(GRAPH_INITIALIZER, [
    ...dims.flatMap((d) => varintField(TENSOR_DIMS, d)),
    ...varintField(TENSOR_DATA_TYPE, FLOAT),
    ...bytesField(TENSOR_NAME, name),
    ...bytesField(TENSOR_RAW_DATA, new Uint8Array(values.buffer, values.byteOffset, values.byteLength)),
  ]);
}
