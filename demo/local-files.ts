import { createReadStream, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { extname, isAbsolute, relative, resolve } from 'node:path';
import type { Connect, Plugin } from 'vite';

/**
 * A Vite plugin serving files from this machine at fixed URL paths (the MiniLM folder at
 * /models/, the LoCoMo file for developers) in `vite` and `vite preview`. Model files are
 * never bundled nor fetched from a hub. Shared by the demo and the e2e site.
 */
export interface LocalMount {
  /** URL path prefix (a folder, ending in `/`) or exact path (a file). */
  urlPath: string;
  /** A folder served under `urlPath`; paths that would leave it are 404. */
  dir?: string;
  /** A single file served at exactly `urlPath`. */
  file?: string;
  /** Served by the dev server only, never by `vite preview` of a build. */
  devOnly?: boolean;
}

const CONTENT_TYPES: Record<string, string> = {
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.onnx': 'application/octet-stream',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
};

export function serveLocalFiles(name: string, mounts: readonly LocalMount[]): Plugin {
  return {
    name,
    configureServer: (server) => void server.middlewares.use(middleware(mounts)),
    configurePreviewServer: (server) => void server.middlewares.use(middleware(mounts.filter((m) => !m.devOnly))),
  };
}

function middleware(mounts: readonly LocalMount[]): Connect.NextHandleFunction {
  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next();
    const { pathname } = new URL(req.url ?? '/', 'http://localhost');
    for (const mount of mounts) {
      if (mount.file && pathname === mount.urlPath) return sendFile(req, res, mount.file);
      if (mount.dir && pathname.startsWith(mount.urlPath)) return sendFile(req, res, inside(mount.dir, decodeURIComponent(pathname.slice(mount.urlPath.length))));
    }
    next();
  };
}

/** `dir/rel`, or null when `rel` would leave `dir`. */
function inside(dir: string, rel: string): string | null {
  const file = resolve(dir, rel);
  const path = relative(dir, file);
  return path.startsWith('..') || isAbsolute(path) ? null : file;
}

/** Streams `file` for GET (headers only for HEAD); 404 when it is missing. */
function sendFile(req: IncomingMessage, res: ServerResponse, file: string | null): void {
  const stat = file ? statSync(file, { throwIfNoEntry: false }) : undefined;
  if (!file || !stat?.isFile()) {
    res.statusCode = 404;
    res.end();
    return;
  }
  res.setHeader('Content-Type', CONTENT_TYPES[extname(file)] ?? 'application/octet-stream');
  res.setHeader('Content-Length', stat.size);
  if (req.method === 'HEAD') res.end();
  else createReadStream(file).pipe(res);
}
