/** Where the e2e run serves the built demo (`vite preview demo`); env PRISM_E2E_DEMO_PORT moves it. */
export function demoE2eUrl(): string {
  return `http://127.0.0.1:${Number(process.env.PRISM_E2E_DEMO_PORT ?? 4318)}/`;
}
