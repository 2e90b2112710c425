/** One measured figure; `ratio` is value ÷ baseline's value (both measured in the same run). */
export interface Row {
  name: string;
  metric: string;
  value: number;
  baseline?: string;
  ratio?: number;
}

export function formatTable(title: string, rows: readonly Row[]): string {
  const cells = rows.map((r) => [r.name, r.metric, formatValue(r.value), r.baseline ?? '', r.ratio === undefined ? '' : `${r.ratio.toFixed(2)}×`]);
  const header = ['what', 'metric', 'value', 'baseline', 'ratio'];
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] ?? '').length)));
  const line = (c: readonly string[]) => `| ${c.map((x, i) => x.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [`\n### ${title}`, line(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...cells.map(line)].join('\n');
}

function formatValue(v: number): string {
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(3);
}
