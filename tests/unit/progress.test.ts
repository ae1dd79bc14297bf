import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { SectionPlan, SectionResult } from '../../services/core/model/section.js';
import { SectionRecorder } from '../../services/core/model/recorder.js';
import type { SectionProgress } from '../../services/transmitter/app.js';
import { createProgressDisplay, formatDurationSeconds } from '../../services/transmitter/progress.js';

// A stream that keeps everything written to it; `tty` makes it look like a terminal.
function collectingStream(tty: boolean): Writable & { text: string; isTTY?: boolean; columns?: number } {
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, callback) {
      stream.text += chunk.toString();
      callback();
    },
  }) as Writable & { text: string; isTTY?: boolean; columns?: number };
  stream.text = '';
  if (tty) Object.assign(stream, { isTTY: true, columns: 160 });
  return stream;
}

const plan: SectionPlan = {
  sectionId: 7,
  transport: 'tcp',
  label: 'TCP',
  baseline: true,
  repeat: 1,
  imageCount: 100,
  warmup: { mode: 'images', images: 2 },
  imageSizeBytes: 1_000_000,
  window: 4,
  ratePerSecond: null,
  clients: 1,
  receivers: 1,
  receiverIndex: 0,
  clock: null,
};

function sectionProgress(): SectionProgress {
  return {
    transport: 'tcp',
    label: 'TCP',
    repeat: 1,
    repeats: 2,
    imageCount: 100,
    imageSizeBytes: 1_000_000,
    sent: 0,
    acked: 0,
    startedAtMs: undefined,
  };
}

const okResult = (): SectionResult => ({ ...new SectionRecorder(plan).result(null), ok: true });
const failedResult = (): SectionResult => new SectionRecorder(plan).result('receiver gone');

describe('progress display', () => {
  let nowMs: number;
  const now = (): number => nowMs;

  beforeEach(() => {
    vi.useFakeTimers();
    nowMs = 1_000_000;
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  describe('plain (not a TTY)', () => {
    it('prints a start line, a line per interval computed from the counters, and an end line', () => {
      const stream = collectingStream(false);
      const display = createProgressDisplay({ stream, tty: false, plainIntervalMs: 5000, now });
      const progress = sectionProgress();

      display.sectionStarted(progress);
      expect(stream.text).toBe('progress: TCP repeat 1/2 started: 100 images of 976.6 KiB each\n');

      vi.advanceTimersByTime(5000);
      expect(stream.text.split('\n').at(-2)).toBe('progress: TCP 1/2: 0/100 images acknowledged, warming up');

      // Counters move between ticks: nothing is printed until the timer fires (not per image).
      const before = stream.text;
      progress.startedAtMs = nowMs;
      for (let i = 0; i < 40; i++) {
        progress.sent++;
        progress.acked++;
        nowMs += 50;
        vi.advanceTimersByTime(50);
      }
      progress.sent += 8;
      expect(stream.text).toBe(before);

      // 40 MB acknowledged in 2 s is 20 MB/s; 60 images left at 20 images/s is 3 s.
      vi.advanceTimersByTime(5000 - 40 * 50);
      expect(stream.text.slice(before.length)).toBe(
        'progress: TCP 1/2: 40/100 images acknowledged, 20.0 MB/s, about 3 s left\n',
      );

      progress.acked = 100;
      display.sectionEnded(progress, okResult());
      expect(stream.text.split('\n').at(-2)).toBe('progress: TCP 1/2 done: ok');

      // An ended section prints nothing more.
      const afterEnd = stream.text;
      vi.advanceTimersByTime(20_000);
      expect(stream.text).toBe(afterEnd);
      display.stop();
    });

    it('says why a section failed: the failure, else what was lost or corrupt', () => {
      const stream = collectingStream(false);
      const display = createProgressDisplay({ stream, tty: false, now });
      const failed = sectionProgress();
      display.sectionStarted(failed);
      display.sectionEnded(failed, failedResult());
      const lossy = { ...sectionProgress(), repeat: 2 };
      display.sectionStarted(lossy);
      display.sectionEnded(lossy, new SectionRecorder(plan).result(null));
      expect(stream.text.split('\n').filter((line) => line.includes('done'))).toEqual([
        'progress: TCP 1/2 done: FAILED: receiver gone',
        'progress: TCP 2/2 done: FAILED: 0/100 intact, 100 lost, 0 corrupt',
      ]);
      display.stop();
    });

    it('prints every plainIntervalMs (default 5 s) and nothing once stopped; stop is safe twice', () => {
      const stream = collectingStream(false);
      const display = createProgressDisplay({ stream, tty: false, now });
      const progress = sectionProgress();
      display.sectionStarted(progress);
      vi.advanceTimersByTime(4999);
      expect(stream.text.split('\n')).toHaveLength(2);
      vi.advanceTimersByTime(1);
      expect(stream.text.split('\n')).toHaveLength(3);

      display.stop();
      display.stop();
      const afterStop = stream.text;
      vi.advanceTimersByTime(60_000);
      display.sectionEnded(progress, okResult());
      expect(stream.text).toBe(afterStop);
      expect(vi.getTimerCount()).toBe(0);
    });
  });

  it('print on a plain stream writes the line as it is', () => {
    const stream = collectingStream(false);
    const display = createProgressDisplay({ stream, tty: false, now });
    display.sectionStarted(sectionProgress());
    display.print('WARN (transmitter): a line\n');
    expect(stream.text.split('\n').at(-2)).toBe('WARN (transmitter): a line');
    display.stop();
  });

  describe('TTY', () => {
    it('draws a bar per section with its label, x/y counts, MB/s and time left, then the verdict', () => {
      const stream = collectingStream(true);
      const display = createProgressDisplay({ stream, tty: true, ttyIntervalMs: 200, now });
      const progress = sectionProgress();
      display.sectionStarted(progress);

      progress.startedAtMs = nowMs;
      progress.acked = 40;
      nowMs += 2000;
      const before = stream.text;
      vi.advanceTimersByTime(200);
      const drawn = stream.text.slice(before.length);
      expect(drawn).toContain('TCP repeat 1/2');
      expect(drawn).toContain('40/100');
      expect(drawn).toContain('20.0 MB/s, about 3 s left');

      const second = { ...sectionProgress(), label: 'WebSocket', transport: 'websocket' };
      display.sectionStarted(second);
      vi.advanceTimersByTime(200);
      expect(stream.text).toContain('WebSocket repeat 1/2');

      display.sectionEnded(progress, failedResult());
      expect(stream.text).toContain('FAILED: receiver gone');
      // No colour codes of our own: only cursor movement from cli-progress.
      expect(stream.text).not.toMatch(/\x1b\[[0-9;]*m/);

      display.stop();
      const afterStop = stream.text;
      display.stop();
      vi.advanceTimersByTime(1000);
      expect(stream.text).toBe(afterStop);
      expect(vi.getTimerCount()).toBe(0);
    });

    it('print puts a line on a cleared row above the bars and draws every bar again below it, at once', () => {
      const stream = collectingStream(true);
      const display = createProgressDisplay({ stream, tty: true, ttyIntervalMs: 200, now });
      display.print('WARN (transmitter): before any bar\n');
      expect(stream.text).toBe('WARN (transmitter): before any bar\n');
      display.sectionStarted(sectionProgress());
      display.sectionStarted({ ...sectionProgress(), label: 'WebSocket', transport: 'websocket' });
      vi.advanceTimersByTime(200);

      const before = stream.text;
      display.print('WARN (receiver): a line\n');
      const written = stream.text.slice(before.length);
      // Back to the first bar's row (one row up from the second bar), column 1, all below cleared (a
      // wrapped line leaves no bar's remains), the whole line, then both bars, unchanged since the
      // last frame, drawn again.
      expect(written).toMatch(
        new RegExp(
          /^\x1b\[1A\x1b\[1G\x1b\[0J\x1b\[2KWARN \(receiver\): a line\n\x1b\[1GTCP repeat 1\/2 /.source +
            /.*\n\x1b\[1GWebSocket repeat 1\/2 /.source,
        ),
      );

      display.stop();
      const afterStop = stream.text;
      display.print('ERROR (transmitter): after the bars\n');
      expect(stream.text.slice(afterStop.length)).toBe('ERROR (transmitter): after the bars\n');
    });

    it('writes nothing when no section ever started', () => {
      const stream = collectingStream(true);
      const display = createProgressDisplay({ stream, tty: true, now });
      display.stop();
      display.stop();
      expect(stream.text).toBe('');
    });
  });

  it('formats durations in whole units', () => {
    expect([0, 2.1, 59, 60, 125, 3600, 3725].map(formatDurationSeconds)).toEqual([
      '0 s',
      '3 s',
      '59 s',
      '1 min 0 s',
      '2 min 5 s',
      '1 h 0 min',
      '1 h 2 min',
    ]);
  });
});
