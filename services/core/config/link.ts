// Shaped links (NETWORK_RATE, NETWORK_DELAY, NETWORK_LOSS): the values in tc's own units, parsed
// and described here; `npm start` applies them (scripts/lib/shaped-link.ts). Pure.

/** How the link between transmitter and receiver is to be shaped; every field undefined: not at all. */
export interface NetworkShaping {
  /** NETWORK_RATE in bits per second (tc tbf `rate`), each way. */
  rateBitsPerSecond: number | undefined;
  /** NETWORK_DELAY in milliseconds (netem `delay`), each way. */
  delayMs: number | undefined;
  /** NETWORK_LOSS in percent (netem `loss`), each way. */
  lossPercent: number | undefined;
}

/** True when any of the three is set. */
export function isShaped(shaping: NetworkShaping): boolean {
  return shaping.rateBitsPerSecond !== undefined || shaping.delayMs !== undefined || shaping.lossPercent !== undefined;
}

const RATE_UNITS: Readonly<Record<string, number>> = { bit: 1, kbit: 1e3, mbit: 1e6, gbit: 1e9 };
/** Least and most NETWORK_RATE: tbf needs a few kbit, and nothing here reaches 100 gbit. */
export const MIN_RATE_BITS = 8_000;
export const MAX_RATE_BITS = 100e9;
/** What NETWORK_RATE allows, in words. */
export const RATE_ALLOWED =
  'a rate in tc units, a number with bit, kbit, mbit or gbit (×1000, bits per second), from 8kbit to 100gbit, ' +
  'e.g. 200mbit';

/** Bits per second of "200mbit"; undefined when not a rate in tc's bit units or out of range. */
export function parseBitRate(raw: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*(bit|kbit|mbit|gbit)$/i.exec(raw.trim());
  if (!match) return undefined;
  const bits = Number(match[1]) * RATE_UNITS[match[2]!.toLowerCase()]!;
  return bits >= MIN_RATE_BITS && bits <= MAX_RATE_BITS ? Math.round(bits) : undefined;
}

const DELAY_UNITS: Readonly<Record<string, number>> = { us: 1e-3, ms: 1, s: 1000 };
/** What NETWORK_DELAY allows, in words. */
export const DELAY_ALLOWED = 'a delay each way, a number with us, ms or s, above 0 and at most 60s, e.g. 20ms';

/** Milliseconds of "20ms"; undefined when not a duration above 0 and at most 60 s. */
export function parseDelayMs(raw: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*(us|ms|s)$/i.exec(raw.trim());
  if (!match) return undefined;
  const delayMs = Number(match[1]) * DELAY_UNITS[match[2]!.toLowerCase()]!;
  return delayMs > 0 && delayMs <= 60_000 ? delayMs : undefined;
}

/** What NETWORK_LOSS allows, in words. */
export const LOSS_ALLOWED = 'a share of packets lost each way, a number with %, above 0 and at most 100%, e.g. 0.1%';

/** Percent of "0.1%"; undefined when not a percentage above 0 and at most 100. */
export function parseLossPercent(raw: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*%$/.exec(raw.trim());
  if (!match) return undefined;
  const percent = Number(match[1]);
  return percent > 0 && percent <= 100 ? percent : undefined;
}

/** "200mbit" (the largest unit that gives a whole number, else mbit with decimals). */
export function formatBitRate(bits: number): string {
  for (const [unit, factor] of [
    ['gbit', 1e9],
    ['mbit', 1e6],
    ['kbit', 1e3],
  ] as const)
    if (bits >= factor && bits % factor === 0) return `${bits / factor}${unit}`;
  return bits >= 1e6 ? `${Number((bits / 1e6).toFixed(3))}mbit` : `${bits}bit`;
}

/** "NETWORK_RATE=200mbit, NETWORK_DELAY=20ms" of the settings given; "" when none. */
export function describeShaping(shaping: NetworkShaping): string {
  return [
    shaping.rateBitsPerSecond === undefined ? '' : `NETWORK_RATE=${formatBitRate(shaping.rateBitsPerSecond)}`,
    shaping.delayMs === undefined ? '' : `NETWORK_DELAY=${shaping.delayMs}ms`,
    shaping.lossPercent === undefined ? '' : `NETWORK_LOSS=${shaping.lossPercent}%`,
  ]
    .filter(Boolean)
    .join(', ');
}

/** True for an address that stays on this machine's loopback. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
