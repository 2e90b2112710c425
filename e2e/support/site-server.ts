/**
 * The Playwright web server that builds the e2e pages with Vite and previews them on `port`
 * (into `outDir` when given, so two configs never rebuild each other's pages).
 */
export function sitePreviewServer(repoRoot: string, port: number, outDir?: string) {
  const viteConfig = 'e2e/vite.config.ts';
  const out = outDir === undefined ? '' : ` --outDir ${outDir}`;
  return {
    command: `node node_modules/vite/bin/vite.js build -c ${viteConfig}${out} && node node_modules/vite/bin/vite.js preview -c ${viteConfig}${out} --host 127.0.0.1 --port ${port} --strictPort`,
    cwd: repoRoot,
    url: `http://127.0.0.1:${port}/`,
    reuseExistingServer: false,
    timeout: 180_000,
    stdout: 'pipe' as const,
    stderr: 'pipe' as const,
  };
}
