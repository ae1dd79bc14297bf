import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderImageLine } from '../../services/core/report/text/output-log.js';
import { AsciiLines } from '../../services/receiver/run-output/ascii-lines.js';

// The per-image lines written as bytes must read exactly as text/output-log.ts words them.

function written(write: (lines: AsciiLines) => void, chunkBytes = 4096): string {
  const chunks: Buffer[] = [];
  const lines = new AsciiLines((chunk) => chunks.push(Buffer.from(chunk)), chunkBytes);
  write(lines);
  lines.flush();
  return Buffer.concat(chunks).toString('utf8');
}

const statuses = ['ok', 'corrupt', 'superseded', 'lost'] as const;

describe('AsciiLines', () => {
  it("writes output.log's image line as renderImageLine does, for any image, time, status and clock", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4_000_000_000 }),
        fc.option(fc.integer({ min: -5_000_000_000, max: 5_000_000_000_000 })),
        fc.constantFrom(...statuses),
        fc.boolean(),
        (image, oneWayNs, status, twoClocks) => {
          expect(written((lines) => lines.imageLine(image, oneWayNs, status, twoClocks))).toBe(
            `${renderImageLine(image, oneWayNs, status, twoClocks)}\n`,
          );
        },
      ),
    );
  });

  it('rounds to the µs at the edges as msOfNs does', () => {
    for (const ns of [0, 1, 499, 500, 999, 999_499, 999_500, 1_000_000, -400, -500, -1_500_000]) {
      expect(written((lines) => lines.imageLine(7, ns, 'ok', false))).toBe(`${renderImageLine(7, ns, 'ok', false)}\n`);
    }
  });

  it('writes the CSV line with empty fields where there is no figure', () => {
    expect(written((lines) => lines.csvLine(12, 'ok', 521262, 835878, null))).toBe('12,ok,521262,835878,\n');
    expect(written((lines) => lines.csvLine(3, 'lost', null, null, null))).toBe('3,lost,,,\n');
    expect(written((lines) => lines.csvLine(1_000_000_000, 'corrupt', 7, 0, -25))).toBe('1000000000,corrupt,7,0,-25\n');
  });

  it('hands over full chunks as they fill, in order, text and lines alike', () => {
    const chunks: Buffer[] = [];
    const lines = new AsciiLines((chunk) => chunks.push(Buffer.from(chunk)), 1024);
    lines.text('heading\n');
    for (let image = 1; image <= 200; image++) lines.csvLine(image, 'ok', image * 1000, image * 2000, null);
    lines.text('footer\n');
    lines.flush();
    expect(chunks.length).toBeGreaterThan(5);
    for (const chunk of chunks) expect(chunk.length).toBeLessThanOrEqual(1024);
    const text = Buffer.concat(chunks).toString('latin1').split('\n');
    expect(text[0]).toBe('heading');
    expect(text[200]).toBe('200,ok,200000,400000,');
    expect(text[201]).toBe('footer');
  });
});

describe('AsciiLines.giveBack', () => {
  it('writes lines again into a chunk given back once written, and never into a slice of the shared pool', () => {
    const chunks: Buffer[] = [];
    const lines = new AsciiLines((chunk) => chunks.push(chunk), 64 * 1024);
    const flushLine = (image: number): void => {
      lines.csvLine(image, 'ok', 5, 6, null);
      lines.flush();
    };
    flushLine(1);
    const first = chunks[0]!;
    const firstText = first.toString();
    lines.giveBack(first);
    // The chunk filling when it came back is written out first; the next one is the chunk given back.
    flushLine(2);
    flushLine(3);
    expect([chunks[1]!.buffer === first.buffer, chunks[2]!.buffer === first.buffer]).toEqual([false, true]);
    expect([firstText, chunks[1]!.toString(), chunks[2]!.toString()]).toEqual([
      '1,ok,5,6,\n',
      '2,ok,5,6,\n',
      '3,ok,5,6,\n',
    ]);
    // A small text's buffer is a slice of Node's pool, which other buffers share: never taken.
    const small = Buffer.from('heading\n');
    lines.giveBack(small);
    flushLine(4);
    flushLine(5);
    expect(chunks.slice(3).some((chunk) => chunk.buffer === small.buffer)).toBe(false);
  });
});
