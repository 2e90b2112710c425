// Wrangler bundles a `.wasm` import as a module the runtime compiles ahead of time: its default export is a WebAssembly.Module.
declare module '*.wasm' {
  const module: WebAssembly.Module;
  export default module;
}
