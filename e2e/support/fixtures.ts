import { test as base, expect } from '@playwright/test';

/**
 * Playwright's `test` with two guards every PRISM browser test gets automatically:
 * no request may leave the local test server (models and WASM are served locally), and
 * an uncaught error in the page fails the test.
 */
export const test = base.extend<{ guards: void }>({
  guards: [
    async ({ context, page }, use) => {
      const external: string[] = [];
      await context.route(
        (url) => url.hostname !== '127.0.0.1' && url.hostname !== 'localhost',
        (route) => {
          external.push(route.request().url());
          return route.abort('blockedbyclient');
        },
      );
      const pageErrors: string[] = [];
      page.on('pageerror', (err) => pageErrors.push(err.stack ?? err.message));
      await use();
      expect(external, 'pages must not fetch from the internet').toEqual([]);
      expect(pageErrors, 'uncaught errors in the page').toEqual([]);
    },
    { auto: true },
  ],
});

export { expect };
