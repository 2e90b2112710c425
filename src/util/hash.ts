/** SHA-256 hex digest via WebCrypto (browser, Node ≥ 20, workerd, Deno alike); text is UTF-8 encoded. */
export async function sha256Hex(data: string | Uint8Array): Promise<string> {
  // A copy gives WebCrypto the plain ArrayBuffer-backed view its typings require.
  const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : new Uint8Array(data);
  const digest = await crypto.subtle.digest('SHA-256', bytes);
  let hex = '';
  for (const byte of new Uint8Array(digest)) hex += byte.toString(16).padStart(2, '0');
  return hex;
}
