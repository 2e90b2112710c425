const ASCII_ONLY = /^[\x00-\x7f]*$/;

/**
 * Whether every character of `text` is ASCII: such text lowercases, splits and counts UTF-8 bytes
 * character for character, which the callers' fast paths rely on. A regular expression test runs
 * in the engine's native code, several times faster than a loop over the characters.
 */
export function isAscii(text: string): boolean {
  return ASCII_ONLY.test(text);
}

/** UTF-8 bytes, or a little more: each surrogate counts 3 (a pair is 4 bytes; a lone one becomes U+FFFD, 3). */
export function utf8Length(text: string): number {
  if (isAscii(text)) return text.length;
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : 3;
  }
  return bytes;
}
