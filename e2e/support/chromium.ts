/**
 * The browser every PRISM browser check drives: Debian's Chromium (PRISM_CHROMIUM moves it),
 * headless, quiet, never downloaded by Playwright. Used by e2e/playwright.config.ts and the
 * fault suite (test/faults/browser.fault.ts).
 */
export const CHROMIUM_PATH = process.env.PRISM_CHROMIUM ?? '/usr/bin/chromium';

export const CHROMIUM_ARGS: readonly string[] = [
  '--no-sandbox',
  '--headless',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];
