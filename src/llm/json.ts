/**
 * Lenient JSON reading for model output. Models asked for JSON still sometimes wrap it in a
 * Markdown code fence or put a sentence before it, so when the whole text is not JSON the
 * first balanced `{…}` or `[…]` that parses is taken instead.
 */
export type JsonExtraction = { found: true; value: unknown } | { found: false };

export function extractJson(text: string): JsonExtraction {
  const whole = tryParse(text.trim());
  if (whole.found) return whole;
  for (let start = 0; start < text.length; start++) {
    const char = text[start];
    if (char !== '{' && char !== '[') continue;
    const end = balancedEnd(text, start);
    if (end < 0) continue;
    const candidate = tryParse(text.slice(start, end + 1));
    if (candidate.found) return candidate;
  }
  return { found: false };
}

function tryParse(text: string): JsonExtraction {
  if (text === '') return { found: false };
  try {
    return { found: true, value: JSON.parse(text) as unknown };
  } catch {
    return { found: false };
  }
}

/** Index of the bracket closing the one at `start`, skipping string contents; -1 if none or mismatched. */
function balancedEnd(text: string, start: number): number {
  const expected: string[] = [];
  let inString = false;
  let escaped = false;
  for (let i = start; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (char === '\\') escaped = true;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') inString = true;
    else if (char === '{') expected.push('}');
    else if (char === '[') expected.push(']');
    else if (char === '}' || char === ']') {
      if (expected.pop() !== char) return -1;
      if (expected.length === 0) return i;
    }
  }
  return -1;
}
