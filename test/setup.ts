import { loadTokenCounter } from '../src/util/tokens.ts';

// Pure packing and chunking functions count tokens synchronously with the installed counter;
// `Memory.open` installs it in an app, and here every test file starts with the default o200k.
await loadTokenCounter();
