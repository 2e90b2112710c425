// workerd imports a `.wasm` module as a compiled WebAssembly.Module (see workerd-main.ts).
declare module '*/usearch.wasm' {
  const module: WebAssembly.Module;
  export default module;
}
declare module '*/ort-wasm-simd-threaded.wasm' {
  const module: WebAssembly.Module;
  export default module;
}
