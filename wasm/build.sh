#!/usr/bin/env bash
# Rebuilds wasm/usearch.wasm and its ES module loader wasm/usearch.mjs from wasm/usearch_binding.cpp
# against the usearch headers shipped in node_modules/usearch. Needs Debian's emscripten
# (`apt-get install -y emscripten node-acorn`); the outputs are committed, so users never run this.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
usearch_include="$root/node_modules/usearch/include"

if [ ! -f "$usearch_include/usearch/index_dense.hpp" ]; then
  echo "usearch headers not found at $usearch_include; run npm ci first" >&2
  exit 1
fi

# Debian's emcc runs its JS optimiser with the system node and needs acorn from /usr/share/nodejs.
export NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}"
# Reproducible output: no timestamps, and paths in debug strings relative to the repo.
export SOURCE_DATE_EPOCH=0

cd "$root"
# PRISM_EMCC_EXTRA: more emcc flags for a local build, e.g. --profiling-funcs to name the WASM
# functions in a CPU profile (the committed build has none).
# USEARCH_USE_NUMKONG=0: numkong's native SIMD backends do not target WASM; usearch's portable
# kernels carry `#pragma clang loop vectorize(enable)`, which -msimd128 turns into v128 code.
# NDEBUG: usearch's debug asserts would raise exceptions, which this build does not enable.
# -mbulk-memory: copies and fills as memory.copy and memory.fill (every runtime PRISM runs in has
# them), where a loop copied each of an open's vector rows: ~0.1 s of an open at 100K messages.
emcc wasm/usearch_binding.cpp \
  -o wasm/usearch.mjs \
  -I "node_modules/usearch/include" \
  -std=c++17 -O3 -msimd128 -mbulk-memory -DNDEBUG ${PRISM_EMCC_EXTRA:-} \
  -DUSEARCH_USE_NUMKONG=0 -DUSEARCH_USE_OPENMP=0 \
  -ffile-prefix-map="$root"=. \
  -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createUsearchModule \
  -sENVIRONMENT=web,worker \
  -sALLOW_MEMORY_GROWTH=1 -sMAXIMUM_MEMORY=4GB \
  -sFILESYSTEM=0 \
  -sEXPORTED_FUNCTIONS=_malloc,_free \
  -sEXPORTED_RUNTIME_METHODS=HEAPU8,HEAPU32,HEAPF32,HEAPF64

echo "built wasm/usearch.wasm ($(wc -c < wasm/usearch.wasm) bytes) and wasm/usearch.mjs"
