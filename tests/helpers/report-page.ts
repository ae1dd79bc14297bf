import { expect } from 'vitest';

// report.html read as text by the unit tests: its JSON blocks, its chart specifications and its tables' cells.

/** The text of the element `<script ... id="id">`, which must be there exactly once. */
export function scriptBlock(html: string, id: string): string {
  const matches = [
    ...html.matchAll(new RegExp(`<script type="application/json" id="${id}">([\\s\\S]*?)</script>`, 'g')),
  ];
  expect(matches).toHaveLength(1);
  return matches[0]![1]!;
}

/** A chart specification as the page carries it (the fields the tests read). */
export interface Spec {
  name: string;
  datasets: {
    transport?: string;
    run: string;
    side?: string | null;
    label: string;
    legendLabel?: string;
    failedRepeat?: boolean;
    hasData?: boolean;
    backgroundColor?: unknown;
    data: unknown[];
    /** Line charts only. */
    figure?: string;
    missing?: string | null;
    fill?: unknown;
    borderDash?: number[];
    bucketSeconds?: number;
    spanSeconds?: number;
    windowSeconds?: number;
    windowUpperBound?: boolean;
  }[];
  xMax?: number;
  labels?: unknown[];
}
/** The chart specifications the page carries. */
export function specsOf(html: string): Spec[] {
  return JSON.parse(scriptBlock(html, 'itb-chart-specs')) as Spec[];
}

/** The page's table with the class `className`: the summary's by default, else deadline-table or commands-table. */
export function tableOf(html: string, className?: string): string {
  const tables = [...html.matchAll(/<table class="([^"]*)">[\s\S]*?<\/table>/g)].filter((m) => {
    const classes = m[1]!.split(' ');
    return className === undefined
      ? classes.includes('summary-table') && !classes.some((c) => c !== 'summary-table' && c.endsWith('-table'))
      : classes.includes(className);
  });
  expect(tables).toHaveLength(1);
  return tables[0]![0];
}

/** A table's row of a transport (the summary's unless `className` names another). */
export function rowOf(html: string, transport: string, className?: string): string {
  return new RegExp(`<tr data-transport="${transport}"[\\s\\S]*?</tr>`).exec(tableOf(html, className))![0];
}

/** The texts of a row's cells under the given column headers (the summary's unless `className` names another). */
export function cellsOf(html: string, transport: string, className?: string): Record<string, string> {
  const headers = [
    ...tableOf(html, className).matchAll(/<th scope="col"[^>]*><button type="button">([^<]*)<\/button><\/th>/g),
  ].map((m) => m[1]!.replace(/&gt;/g, '>'));
  const cells = [...rowOf(html, transport, className).matchAll(/<td class="[^"]*"[^>]*>([\s\S]*?)<\/td>/g)].map((m) =>
    m[1]!.replace(/<[^>]+>/g, ''),
  );
  expect(cells).toHaveLength(headers.length);
  return Object.fromEntries(headers.map((h, i) => [h, cells[i]!]));
}
