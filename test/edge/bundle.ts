import { copyFile, mkdir, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { build, type Plugin } from 'esbuild';

/** One module of a workerd worker: the bundle (first: workerd takes it as the main module) or a `.wasm` it imports. */
export interface WorkerModule {
  name: string;
  path: string;
  kind: 'esModule' | 'wasm';
  bytes: number;
}

/**
 * Bundles a Worker the way `wrangler deploy` does: esbuild, ES modules, the `workerd` / `worker` /
 * `browser` export conditions, one file, and every imported `.wasm` left as a module of its own
 * (wrangler's CompiledWasm rule), which workerd compiles ahead of time. `packages` resolves bare
 * specifiers to files, e.g. `prism-memory/advanced` to this checkout's source; `minify` is
 * wrangler's setting of that name.
 */
export async function bundleWorker(entry: string, outDir: string, options: { packages?: Record<string, string>; minify?: boolean } = {}): Promise<WorkerModule[]> {
  const packages = options.packages ?? {};
  await mkdir(outDir, { recursive: true });
  const wasm = new Map<string, string>();
  const resolver: Plugin = {
    name: 'workerd-modules',
    setup(plugin) {
      plugin.onResolve({ filter: /^prism-memory(\/.*)?$|\.wasm$/ }, async (args) => {
        if (args.pluginData === 'resolving') return undefined;
        let path = packages[args.path];
        if (path === undefined) {
          const resolved = await plugin.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: 'resolving' });
          if (resolved.errors.length > 0) return { errors: resolved.errors };
          path = resolved.path;
        }
        if (!path.endsWith('.wasm')) return { path };
        wasm.set(basename(path), path);
        return { path: `./${basename(path)}`, external: true };
      });
    },
  };
  await build({
    entryPoints: [entry],
    outfile: join(outDir, 'worker.js'),
    bundle: true,
    format: 'esm',
    target: 'es2022',
    platform: 'browser',
    conditions: ['workerd', 'worker', 'browser'],
    minify: options.minify ?? false,
    plugins: [resolver],
    logLevel: 'error',
  });
  const modules: WorkerModule[] = [{ name: 'worker.js', path: join(outDir, 'worker.js'), kind: 'esModule', bytes: 0 }];
  for (const [name, source] of wasm) {
    await copyFile(source, join(outDir, name));
    modules.push({ name, path: join(outDir, name), kind: 'wasm', bytes: 0 });
  }
  return Promise.all(modules.map(async (module) => ({ ...module, bytes: (await stat(module.path)).size })));
}
