import { pino, type Logger, type LevelWithSilent } from 'pino';
import { prettyFactory } from 'pino-pretty';

/** Where a terminal's human log lines go; each call gets one whole line, its newline included. */
export type LinePrinter = (line: string) => void;

/** How a logger writes: `terminal` (default: stderr is one) gives human lines through `print` (default: stderr). */
export interface LoggerOptions {
  terminal?: boolean;
  print?: LinePrinter;
}

/**
 * The one pino factory. In a container, CI or a file: JSON lines on stderr (synchronous, so nothing
 * is lost at exit), stdout stays for the summary. On a terminal: one human line per entry
 * ({@link humanLogLine}), handed to `print` synchronously, so the progress display can put it
 * above its bars.
 */
export function createLogger(service: string, level: LevelWithSilent, options: LoggerOptions = {}): Logger {
  const terminal = options.terminal ?? Boolean(process.stderr.isTTY);
  const print = options.print ?? ((line: string) => void process.stderr.write(line));
  return pino(
    {
      name: service,
      level,
      base: { service },
      // A Buffer in a log line would dump megabytes of image: log its length instead.
      serializers: { payload: (value: unknown) => (Buffer.isBuffer(value) ? `<${value.length} bytes>` : value) },
    },
    terminal ? { write: (jsonLine: string) => print(humanLogLine(jsonLine)) } : pino.destination({ fd: 2, sync: true }),
  );
}

// Fields every entry has, or that the line shows elsewhere (the level, `name` in the header).
const HEADER_FIELDS = new Set(['level', 'time', 'pid', 'hostname', 'name', 'service', 'msg', 'transport']);
// Fields that say why: shown whole, in parentheses after the message.
const REASON_FIELDS = ['err', 'reason'];
const MAX_REASON_CHARS = 300;
const MAX_FIELD_CHARS = 80;

// Colour only where stderr is a terminal that wants it (NO_COLOR, TERM=dumb and FORCE_COLOR honoured).
const colorize = Boolean(process.stderr.isTTY && process.stderr.hasColors());

// pino-pretty parses the line (non-JSON passes through) and draws the header, "WARN (receiver):";
// messageFormat makes the rest one line: "[transport: ]message (reason) key=value ...".
const prettify = prettyFactory({
  colorize,
  ignore: 'time,pid,hostname',
  hideObject: true,
  singleLine: true,
  messageFormat: (entry, messageKey) => {
    const text = (value: unknown, maxChars: number): string => {
      const raw =
        typeof value === 'string'
          ? value
          : isErrorLike(value)
            ? value.message
            : (JSON.stringify(value) ?? String(value));
      const flat = raw.replace(/\s+/g, ' ').trim();
      return flat.length > maxChars ? `${flat.slice(0, maxChars - 1)}…` : flat;
    };
    const transport = typeof entry.transport === 'string' ? `${entry.transport}: ` : '';
    const reasons = REASON_FIELDS.filter((key) => entry[key] !== undefined).map((key) =>
      text(entry[key], MAX_REASON_CHARS),
    );
    const fields = Object.entries(entry)
      .filter(([key, value]) => !HEADER_FIELDS.has(key) && !REASON_FIELDS.includes(key) && value !== undefined)
      .map(([key, value]) => `${key}=${text(value, MAX_FIELD_CHARS)}`);
    return [
      `${transport}${text(entry[messageKey] ?? '', MAX_REASON_CHARS)}`,
      ...(reasons.length > 0 ? [`(${reasons.join('; ')})`] : []),
      ...fields,
    ].join(' ');
  },
});

function isErrorLike(value: unknown): value is { message: string } {
  return typeof value === 'object' && value !== null && typeof (value as { message?: unknown }).message === 'string';
}

/**
 * One pino JSON line as a terminal shows it: "WARN (receiver): redis: listener failed (ECONNREFUSED) port=6379",
 * one line ending in a newline. A line that is not pino's JSON comes back as it was, on one line.
 */
export function humanLogLine(jsonLine: string): string {
  const trimmed = jsonLine.replace(/\r?\n$/, '');
  if (!trimmed.startsWith('{')) return `${trimmed}\n`;
  return `${prettify(trimmed).replace(/\r?\n/g, ' ').trimEnd()}\n`;
}
