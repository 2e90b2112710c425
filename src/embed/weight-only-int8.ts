import { PrismError } from '../errors.ts';
import { concatBytes } from '../util/bytes.ts';
import { bytesField, fieldString, fieldVarints, readFields, varintField, WireFormatError, type Chunks, type WireField } from './protobuf.ts';

/** Field numbers from onnx.proto for the messages the rewrite reads or writes. */
const MODEL_GRAPH = 7;
const GRAPH_NODE = 1;
const GRAPH_INITIALIZER = 5;
const GRAPH_INPUT = 11;
const GRAPH_OUTPUT = 12;
const GRAPH_VALUE_INFO = 13;
const NODE_INPUT = 1;
const NODE_OUTPUT = 2;
const NODE_NAME = 3;
const NODE_OP_TYPE = 4;
const NODE_ATTRIBUTE = 5;
const ATTRIBUTE_NAME = 1;
const ATTRIBUTE_INT = 3;
const ATTRIBUTE_TYPE = 20;
/** onnx.AttributeProto.AttributeType.INT. */
const ATTRIBUTE_TYPE_INT = 2;
const TENSOR_DIMS = 1;
const TENSOR_DATA_TYPE = 2;
const TENSOR_NAME = 8;
const TENSOR_RAW_DATA = 9;
const VALUE_INFO_NAME = 1;
/** onnx.TensorProto.DataType values. */
const FLOAT = 1;
const UINT8 = 2;
const INT8 = 3;

/**
 * When the int8 weights become float: `at-load` turns each into a float32 initializer once (the
 * fp32 model's size in memory, 55 MB for MiniLM, and its speed); `per-run` keeps them int8 and
 * dequantizes each before its MatMul at every run (a quarter of the memory, for runtimes that
 * have little, such as a Worker's 128 MB; slower inference). Both give the same float weights.
 */
export type Int8Dequantize = 'at-load' | 'per-run';

/** The nodes rescaling one MatMulInteger's product, the tensor they end in, and the weight scale. */
interface ScaleChain {
  readonly nodes: readonly GraphNode[];
  readonly output: string;
  readonly weightScale: { readonly name: string; readonly values: Float32Array };
}

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
 * the dequantized weight. Where the product is rescaled the way `quantize_dynamic` writes it (Cast
 * to float, Mul by the activation scale, Mul by a constant weight scale), both scales fold into the
 * weight, so the graph has the fp32 model's shape and gets its fused kernels and speed. Elsewhere the
 * weight minus its zero point (exact small integers) stands in and the quantizer's scale becomes 1,
 * so the graph's own rescaling yields x·W.
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
export function weightOnlyInt8(model: Uint8Array, dequantize: Int8Dequantize = 'at-load'): Uint8Array {
  try {
    return rewrite(model, dequantize);
  } catch (cause) {
    if (cause instanceof WireFormatError) throw new PrismError('MODEL_LOAD_FAILED', `not an ONNX model: ${cause.message}`, { cause });
    throw cause;
  }
}

function rewrite(model: Uint8Array, dequantize: Int8Dequantize): Uint8Array {
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

  const graphOutputs = new Set(graphFields.filter((f) => f.field === GRAPH_OUTPUT).map((f) => named(f, VALUE_INFO_NAME)));
  /** The one node reading `output`, unless more read it or it leaves the graph. */
  const onlyReader = (output: string): GraphNode | undefined => {
    const readers = consumers.get(output) ?? [];
    return readers.length === 1 && !graphOutputs.has(output) ? readers[0] : undefined;
  };
  /** `node`'s operand other than `operand`, if `node` is a Mul of `operand` and something else. */
  const mulOperand = (node: GraphNode | undefined, operand: string): string | undefined => {
    if (node?.opType !== 'Mul' || node.inputs.length !== 2) return undefined;
    const [left, right] = node.inputs;
    return left === operand ? right : right === operand ? left : undefined;
  };
  /**
   * MatMulInteger → Cast to float → Mul by the activation's scale → Mul by a constant float weight
   * scale (one, or one per column), each read only by the next: the rescaling whose scales fold.
   */
  const scaleChain = (node: GraphNode, activationScale: string | undefined): ScaleChain | undefined => {
    const cast = onlyReader(node.outputs[0] ?? '');
    const byActivation = cast && onlyReader(cast.outputs[0] ?? '');
    if (!cast || !byActivation || activationScale === undefined || mulOperand(byActivation, cast.outputs[0] ?? '') !== activationScale) return undefined;
    const byWeight = onlyReader(byActivation.outputs[0] ?? '');
    const scaleName = mulOperand(byWeight, byActivation.outputs[0] ?? '');
    const scaleTensor = scaleName === undefined ? undefined : initializers.get(scaleName);
    // One scale, or one per column: a scale of more dimensions would broadcast over rows as well.
    const scale = scaleTensor && fieldVarints(scaleTensor, TENSOR_DIMS).length <= 1 ? floatValues(scaleTensor) : undefined;
    if (!byWeight || scaleName === undefined || !scale) return undefined;
    return { nodes: [cast, byActivation, byWeight], output: byWeight.outputs[0] ?? '', weightScale: { name: scaleName, values: scale } };
  };

  const added: Chunks = [];
  /** DequantizeLinear nodes (per run), placed before the nodes that read them. */
  const dequantizers: Chunks = [];
  /** int8 weights the graph still reads (per run). */
  const keptWeights = new Set<string>();
  const floatWeights = new Map<string, string>();
  /** The float weight standing in for an int8 weight of a MatMulInteger, its scales folded in when given. */
  const floatWeight = (input: string, zeroPoint: string, scale: ScaleChain['weightScale'] | undefined): string => {
    const weight = initializers.get(input);
    if (!weight) throw unsupported(`MatMulInteger input ${input} is neither dynamically quantized nor a constant weight`);
    const key = `${input}\u0000${zeroPoint}\u0000${scale?.name ?? ''}`;
    const known = floatWeights.get(key);
    if (known) return known;
    const name = `${input}/float${floatWeights.size}`;
    const int8 = int8Weight(name, weight, zeroPoint === '' ? undefined : initializers.get(zeroPoint), scale?.values);
    if (dequantize === 'at-load') added.push(...dequantizedWeight(name, int8));
    else {
      const { node, constants } = dequantizeLinear(name, input, int8);
      dequantizers.push(...node);
      added.push(...constants);
      keptWeights.add(input);
    }
    floatWeights.set(key, name);
    return name;
  };

  const rewritten = new Map<GraphNode, Chunks>();
  const staleValueInfo = new Set<string>();
  for (const node of matMuls) {
    const [a = '', b = '', aZero = '', bZero = ''] = node.inputs;
    const output = node.outputs[0] ?? '';
    for (const consumer of consumers.get(output) ?? []) {
      if (consumer.opType !== 'Cast' || castTarget(consumer) !== FLOAT) throw unsupported(`MatMulInteger output ${output} is read by ${consumer.opType}, not a Cast to float`);
    }
    const quantizer = quantizers.get(a);
    if (!quantizer) throw unsupported(`MatMulInteger input ${a} is not dynamically quantized`);
    if (aZero !== '' && aZero !== quantizer.outputs[2]) throw unsupported(`${a} is dequantized with a zero point other than its quantizer's`);
    const chain = scaleChain(node, quantizer.outputs[1]);
    const name = node.fields.find((f) => f.field === NODE_NAME);
    rewritten.set(
      node,
      bytesField(GRAPH_NODE, [
        ...bytesField(NODE_INPUT, quantizer.inputs[0] ?? ''),
        ...bytesField(NODE_INPUT, floatWeight(b, bZero, chain?.weightScale)),
        ...bytesField(NODE_OUTPUT, chain?.output ?? output),
        ...(name ? [name.encoded] : []),
        ...bytesField(NODE_OP_TYPE, 'MatMul'),
      ]),
    );
    staleValueInfo.add(output);
    for (const folded of chain?.nodes ?? []) {
      rewritten.set(folded, []);
      if (folded.outputs[0] !== chain?.output) staleValueInfo.add(folded.outputs[0] ?? '');
    }
  }
  for (const quantizer of quantizers.values()) {
    const [quantized = '', , zeroPoint = ''] = quantizer.outputs;
    for (const output of [quantized, zeroPoint]) {
      if ((consumers.get(output) ?? []).some((consumer) => !matMuls.has(consumer))) throw unsupported(`${output} is read by something other than MatMulInteger`);
    }
    rewritten.set(quantizer, []);
    for (const output of quantizer.outputs) staleValueInfo.add(output);
  }

  const stillRead = new Set([...nodes.filter((n) => !rewritten.has(n)).flatMap((n) => n.inputs), ...keptWeights]);
  // A scale that no folded chain absorbed is still multiplied in by the graph: it becomes 1.
  for (const quantizer of quantizers.values()) {
    const scale = quantizer.outputs[1] ?? '';
    if (stillRead.has(scale)) added.push(...floatInitializer(scale, [], Float32Array.of(1)));
  }
  const dropped = new Set([...rewritten.keys()].flatMap((n) => n.inputs).filter((name) => initializers.has(name) && !stillRead.has(name)));
  const graph: Chunks = [];
  for (const f of graphFields) {
    if (f.field === GRAPH_NODE) continue;
    if (f.field === GRAPH_INITIALIZER && dropped.has(named(f, TENSOR_NAME))) continue;
    if (f.field === GRAPH_INPUT && dropped.has(named(f, VALUE_INFO_NAME))) continue;
    if (f.field === GRAPH_VALUE_INFO && staleValueInfo.has(named(f, VALUE_INFO_NAME))) continue;
    graph.push(f.encoded);
  }
  const nodeFields = graphFields.filter((f) => f.field === GRAPH_NODE);
  graph.push(...dequantizers, ...nodes.flatMap((node, i) => rewritten.get(node) ?? [nodeFields[i]!.encoded]), ...added);
  return concatBytes(modelFields.flatMap((f) => (f === graphField ? bytesField(MODEL_GRAPH, graph) : [f.encoded])));
}

/** The name (field `number`) of an initializer or value info held in `f`. */
function named(f: WireField, number: number): string {
  const name = readFields(f.bytes).find((t) => t.field === number);
  return name ? fieldString(name) : '';
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

/** An int8 weight matrix with its zero points and scales, one of each or one per column. */
interface Int8Weight {
  readonly dims: readonly number[];
  readonly columns: number;
  readonly type: typeof UINT8 | typeof INT8;
  readonly values: Uint8Array | Int8Array;
  readonly zeros: Uint8Array | Int8Array;
  readonly scales: Float32Array;
}

/** `weight` with its zero point (0 when not given) and scale (1 when not given), checked to be a matrix with one or one-per-column of each. */
function int8Weight(name: string, weight: readonly WireField[], zeroPoint: readonly WireField[] | undefined, scale: Float32Array | undefined): Int8Weight {
  const dims = fieldVarints(weight, TENSOR_DIMS);
  const [rows = 0, columns = 0] = dims;
  const values = int8Values(weight, name);
  const zeros = zeroPoint ? int8Values(zeroPoint, `${name}'s zero point`) : Uint8Array.of(0);
  const scales = scale ?? Float32Array.of(1);
  if (dims.length !== 2 || values.length !== rows * columns) throw unsupported(`weight ${name} is not a matrix`);
  if (zeros.length !== 1 && zeros.length !== columns) throw unsupported(`weight ${name} has ${zeros.length} zero points for ${columns} columns`);
  if (scales.length !== 1 && scales.length !== columns) throw unsupported(`weight ${name} has ${scales.length} scales for ${columns} columns`);
  return { dims, columns, type: values instanceof Int8Array ? INT8 : UINT8, values, zeros, scales };
}

/** Column `column`'s entry of a list holding one value, or one per column. */
function ofColumn(list: ArrayLike<number>, column: number): number {
  return list[list.length === 1 ? 0 : column]!;
}

/** The weight minus its zero point, as float32, times its scale: one float initializer. */
function dequantizedWeight(name: string, { dims, columns, values, zeros, scales }: Int8Weight): Chunks {
  const floats = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const column = i % columns;
    floats[i] = (values[i]! - ofColumn(zeros, column)) * ofColumn(scales, column);
  }
  return floatInitializer(name, dims, floats);
}

/**
 * A DequantizeLinear node making the float weight `name` from the int8 initializer `input` at every
 * run, per column (axis 1), with the zero point and scale spread to one per column as a per-axis
 * DequantizeLinear needs. It computes what `dequantizedWeight` does, (weight − zero point) × scale
 * rounded once to float32, so both give the same weights.
 */
function dequantizeLinear(name: string, input: string, { columns, type, zeros, scales }: Int8Weight): { node: Chunks; constants: Chunks } {
  const zeroPoints = type === INT8 ? new Int8Array(columns) : new Uint8Array(columns);
  const columnScales = new Float32Array(columns);
  for (let c = 0; c < columns; c++) {
    zeroPoints[c] = ofColumn(zeros, c);
    columnScales[c] = ofColumn(scales, c);
  }
  const scaleName = `${name}/scale`;
  const zeroName = `${name}/zero_point`;
  const constants: Chunks = [
    ...floatInitializer(scaleName, [columns], columnScales),
    ...bytesField(GRAPH_INITIALIZER, [
      ...varintField(TENSOR_DIMS, columns),
      ...varintField(TENSOR_DATA_TYPE, type),
      ...bytesField(TENSOR_NAME, zeroName),
      ...bytesField(TENSOR_RAW_DATA, new Uint8Array(zeroPoints.buffer)),
    ]),
  ];
  const node = bytesField(GRAPH_NODE, [
    ...[input, scaleName, zeroName].flatMap((operand) => bytesField(NODE_INPUT, operand)),
    ...bytesField(NODE_OUTPUT, name),
    ...bytesField(NODE_OP_TYPE, 'DequantizeLinear'),
    ...bytesField(NODE_ATTRIBUTE, [...bytesField(ATTRIBUTE_NAME, 'axis'), ...varintField(ATTRIBUTE_INT, 1), ...varintField(ATTRIBUTE_TYPE, ATTRIBUTE_TYPE_INT)]),
  ]);
  return { node, constants };
}

/** The values of a float32 tensor stored as raw data, or undefined for any other tensor. */
function floatValues(tensor: readonly WireField[]): Float32Array | undefined {
  const raw = tensor.find((f) => f.field === TENSOR_RAW_DATA)?.bytes;
  if (tensor.find((f) => f.field === TENSOR_DATA_TYPE)?.varint !== FLOAT || !raw || raw.byteLength % 4 !== 0) return undefined;
  // Copied: raw data sits at any byte offset inside the model, and float32 views need 4-byte alignment.
  return new Float32Array(raw.slice().buffer);
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
