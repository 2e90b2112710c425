/** URL prefix under which e2e pages find the model files (served from PRISM_MODEL_DIR). */
export const MODELS_URL_PATH = '/models/';

/** Hex SHA-256 via WebCrypto, identical in Chromium and Node, to compare bytes across them. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  // The copy gives WebCrypto the plain ArrayBuffer-backed view its typings require.
  const digest = await crypto.subtle.digest('SHA-256', new Uint8Array(bytes));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}
