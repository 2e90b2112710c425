import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, normalize } from 'node:path';

/** A loopback HTTP server of static files, recording every path asked for. */
export interface StaticServer {
  /** `127.0.0.1:<port>`, as a workerd external service names it. */
  readonly address: string;
  readonly requests: readonly string[];
  close(): Promise<void>;
}

/** Serves `GET <prefix><file>` from `folders[prefix]/<file>`; anything else is a 404. */
export async function serveFolders(folders: Record<string, string>): Promise<StaticServer> {
  const requests: string[] = [];
  const server = createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url ?? '/', 'http://x').pathname);
    requests.push(path);
    const prefix = Object.keys(folders).find((p) => path.startsWith(p));
    const file = prefix === undefined ? undefined : normalize(path.slice(prefix.length));
    if (request.method !== 'GET' || prefix === undefined || file === undefined || file.startsWith('..')) {
      response.writeHead(404).end();
      return;
    }
    readFile(join(folders[prefix]!, file)).then(
      (bytes) => response.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Length': bytes.length }).end(bytes),
      () => response.writeHead(404).end(),
    );
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise((done) => server.close(() => done())),
  };
}
