import { spawn } from 'node:child_process';

// Prometheus's text format read back (https://prometheus.io/docs/instrumenting/exposition_formats/),
// enough for the receiver's GET /metrics: HELP and TYPE lines, and samples with labels. prom-client
// has no parser; promtool checks the format, this gives the tests the values.

/** One sample line: its name (with _bucket, _sum or _count as written), labels and value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A scrape read back: its samples in order, and each metric family's HELP and TYPE. */
export interface Scrape {
  samples: Sample[];
  help: Map<string, string>;
  type: Map<string, string>;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/y;

function unescapeLabelValue(text: string): string {
  return text.replace(/\\(.)/g, (_all, c: string) => (c === 'n' ? '\n' : c));
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const match = LABEL.exec(text);
    if (match === null) throw new Error(`unreadable labels in: ${line}`);
    labels[match[1]!] = unescapeLabelValue(match[2]!);
  }
  return labels;
}

function parseValue(text: string): number {
  if (text === '+Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  return Number(text);
}

/** Reads a scrape in Prometheus's text format; throws naming the first line it cannot read. */
export function parsePrometheusText(text: string): Scrape {
  const scrape: Scrape = { samples: [], help: new Map(), type: new Map() };
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const comment = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (comment !== null) {
      (comment[1] === 'HELP' ? scrape.help : scrape.type).set(comment[2]!, comment[3]!);
      continue;
    }
    if (line.startsWith('#')) continue;
    const sample = SAMPLE.exec(line);
    if (sample === null) throw new Error(`unreadable sample line: ${line}`);
    const value = parseValue(sample[3]!);
    if (Number.isNaN(value) && sample[3] !== 'NaN') throw new Error(`unreadable value in: ${line}`);
    scrape.samples.push({ name: sample[1]!, labels: parseLabels(sample[2] ?? '', line), value });
  }
  return scrape;
}

/** The value of the one sample named `name` whose labels include `labels`; throws when there is not exactly one. */
export function sampleValue(scrape: Scrape, name: string, labels: Record<string, string> = {}): number {
  const found = scrape.samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value),
  );
  if (found.length !== 1)
    throw new Error(`${found.length} samples of ${name} with ${JSON.stringify(labels)}, expected one`);
  return found[0]!.value;
}

/** What `promtool check metrics` said of a scrape (its exit code and its output, lint findings included). */
export interface PromtoolVerdict {
  exitCode: number | null;
  output: string;
}

/**
 * Pipes `text` into `promtool check metrics` (Debian's prometheus package). A missing promtool is an error naming
 * how to install it: the check is part of the suite, never skipped.
 */
export function promtoolCheckMetrics(text: string, timeoutMs = 20_000): Promise<PromtoolVerdict> {
  return new Promise((resolve, reject) => {
    const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`promtool check metrics took over ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        err.code === 'ENOENT'
          ? new Error(
              'promtool is not on PATH: the GET /metrics tests check the scrape with it; install it with ' +
                'bash scripts/install-test-tools.sh (Debian package prometheus)',
            )
          : err,
      );
    });
    child.on('close', (exitCode) => {
      clearTimeout(timer);
      resolve({ exitCode, output });
    });
    child.stdin.on('error', () => {}); // a promtool that exits early closes its stdin: its exit code says why
    child.stdin.end(text);
  });
}
