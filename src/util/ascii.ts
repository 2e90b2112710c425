const ASCII_ONLY = /^[\x00-\x7f]*$/;
const PAST_LATIN_1 = /[^\x00-\xff]/;

/**
 * Whether every character of `text` is ASCII: such text lowercases, splits and counts UTF-8 bytes
 * character for character, which the callers' fast paths rely on. A regular expression test runs
 * in the engine's native code, several times faster than a loop over the characters.
 */
export function isAscii(text: string): boolean {
  return ASCII_ONLY.test(text);
}

/** Whether every character of `text` is Latin-1 (below U+0100): what an engine can keep at one byte a character. */
export function isLatin1(text: string): boolean {
  return !PAST_LATIN_1.test(text);
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
