import { describe, expect, it } from 'vitest';
import { formatDurationMs, parseDurationMs } from '../../services/core/config/duration.js';

describe('parseDurationMs', () => {
  it.each([
    ['30s', 30_000],
    ['10m', 600_000],
    ['1h', 3_600_000],
    ['1h30m', 5_400_000],
    ['2m30s', 150_000],
    ['500ms', 500],
    ['1s500ms', 1500],
    ['1h2m3s4ms', 3_723_004],
    ['1h30s', 3_630_000],
    ['168h', 604_800_000],
    ['90m', 5_400_000],
    ['0s', 0],
    ['007s', 7000],
  ])('%s is %d ms', (text, durationMs) => {
    expect(parseDurationMs(text)).toBe(durationMs);
  });

  it.each([
    // A bare number: seconds or minutes?
    '5',
    '0',
    '1500',
    // Not this grammar: empty, spaces, fractions, signs, exponents, other units or cases, words.
    '',
    ' ',
    '1h 30m',
    ' 30s',
    '30 s',
    '1.5h',
    '0.5s',
    '-30s',
    '+30s',
    '1e3s',
    '1d',
    '1w',
    '100us',
    '1ns',
    '30S',
    '1H',
    '10M',
    '1hr',
    '30sec',
    '10min',
    'h',
    'ms',
    'one minute',
    // Units out of order, twice, or a number left without one.
    '30m1h',
    '30s2m',
    '500ms1s',
    '1h1h',
    '1m1m',
    '1h30',
    '1m30',
    '30s5',
  ])('%j is not a duration', (text) => {
    expect(parseDurationMs(text)).toBeUndefined();
  });

  it('refuses a number too large to add up exactly', () => {
    expect(parseDurationMs(`${'9'.repeat(20)}h`)).toBeUndefined();
    expect(parseDurationMs(`${Number.MAX_SAFE_INTEGER}ms`)).toBe(Number.MAX_SAFE_INTEGER);
  });
});

describe('formatDurationMs', () => {
  it.each([
    [0, '0s'],
    [500, '500ms'],
    [1000, '1s'],
    [1500, '1s500ms'],
    [150_000, '2m30s'],
    [3_600_000, '1h'],
    [5_400_000, '1h30m'],
    [3_723_004, '1h2m3s4ms'],
    [604_800_000, '168h'],
  ])('%d ms is %s, which parses back to it', (durationMs, text) => {
    expect(formatDurationMs(durationMs)).toBe(text);
    expect(parseDurationMs(text)).toBe(durationMs);
  });
});
