import { describe, expect, it } from 'vitest';
import { formatSize, parseSize } from '../../services/core/config/size.js';

describe('parseSize', () => {
  it.each([
    ['545792', 545_792],
    ['1', 1],
    ['533KB', 533_000],
    ['533kb', 533_000],
    ['4MB', 4_000_000],
    ['4 MB', 4_000_000],
    ['1MiB', 1_048_576],
    ['1.5MiB', 1_572_864],
    ['2GiB', 2_147_483_648],
    ['12B', 12],
    ['0', 0],
  ])('%s is %d bytes', (text, bytes) => {
    expect(parseSize(text)).toBe(bytes);
  });

  it.each(['abc', '', '-1', '4XB', '1.5', '1.5B', '0.0001KB', 'MB', '4 M B', '1e6'])('%j is not a size', (text) => {
    expect(parseSize(text)).toBeUndefined();
  });
});

describe('formatSize', () => {
  it.each([
    [0, '0 B'],
    [1023, '1023 B'],
    [1024, '1.0 KiB'],
    [545_792, '533.0 KiB'],
    [4_000_000, '3.8 MiB'],
    [4 * 1024 * 1024, '4.0 MiB'],
    [256 * 1024 * 1024, '256.0 MiB'],
    [3 * 1024 ** 3, '3.0 GiB'],
  ])('%d bytes is %s', (bytes, text) => {
    expect(formatSize(bytes)).toBe(text);
  });
});
