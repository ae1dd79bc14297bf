import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../services/core/config/config.js';
import { failedSectionEnd, type RunAnnouncement } from '../../services/core/control/control-protocol.js';
import type { SectionRecorder } from '../../services/core/model/recorder.js';
import type { SectionResult } from '../../services/core/model/section.js';
import { RunSession } from '../../services/receiver/session.js';
import { COMMAND_SEQ_BASE } from '../../services/core/wire/frame.js';
import { transports } from '../../services/transports/index.js';
import { fixtureHost, fixturePlan, NO_WARMUP } from '../helpers/fixtures.js';
import { testLog } from '../helpers/harness.js';

// What GET /metrics reads from the session: the recording section from its opening until its
// result exists (never a gap in which neither is there), each result once, and the last run's start.

const IMAGE_BYTES = 100;

function startedSession(): { session: RunSession; ended: [SectionRecorder, SectionResult][] } {
  const session = new RunSession(testLog, () => fixtureHost('receiver'), false);
  const ended: [SectionRecorder, SectionResult][] = [];
  session.observe({
    sectionEnded: (result, recorder) => {
      if (recorder !== undefined) ended.push([recorder, result]);
    },
  });
  const parsed = parseConfig({ AUTH_TOKEN: 'test-secret-0123456789abcdef' }, transports);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  const announcement: RunAnnouncement = {
    startedAt: '2026-01-02T03:04:05.678Z',
    imageDescription: 'zeros',
    imageSizeBytes: IMAGE_BYTES,
    imageCount: 2,
    window: 1,
    warmup: { mode: 'images', images: 0 },
    repeat: 1,
    transports: ['tcp'],
    arrivalNotes: [],
    receivers: 1,
    receiverIndex: 0,
    config: parsed.config,
    hosts: { transmitter: fixtureHost('transmitter') },
  };
  session.start(announcement);
  return { session, ended };
}

const plan = fixturePlan({ transport: 'tcp', label: 'TCP', sectionId: 2, imageCount: 2, imageSizeBytes: IMAGE_BYTES });

function deliver(session: RunSession, seq: number): void {
  const nowNs = process.hrtime.bigint();
  session.deliver({
    header: { sectionId: 2, seq, sizeBytes: IMAGE_BYTES, checksum: 0n, sentAtNs: nowNs - 10_000n },
    payload: Buffer.alloc(IMAGE_BYTES),
    arrivalNs: nowNs,
  });
}

describe('RunSession: what GET /metrics reads', () => {
  it('keeps the ending section readable until its result is made, then hands the result over once', async () => {
    const { session, ended } = startedSession();
    expect(session.lastRunStartedAt).toBe('2026-01-02T03:04:05.678Z');
    expect(session.recordingSection).toBeUndefined();
    session.openSection(plan, undefined);
    expect(session.startMeasuring(NO_WARMUP)).toBeUndefined();
    deliver(session, 0);
    deliver(session, 1);
    const recorder = session.recordingSection;
    expect(recorder?.recordedCount).toBe(2);
    // The end waits (broker readings) before its result: a scrape meanwhile still finds the section.
    const ending = session.endSection({ ...failedSectionEnd('test'), failure: null, imagesSent: 2 });
    expect(session.isOpen('2')).toBe(false);
    expect(session.recordingSection).toBe(recorder);
    expect(ended).toEqual([]);
    const result = await ending;
    expect(session.recordingSection).toBeUndefined();
    expect(ended).toHaveLength(1);
    expect(ended[0]![0]).toBe(recorder);
    expect(ended[0]![1]).toBe(result);
    expect(result?.okCount).toBe(2);
  });

  it('tells of the ending section once its record is final, before its result, with its command arrivals', async () => {
    const { session } = startedSession();
    const heard: string[] = [];
    let atEnding: { okCount: number; commandsReceived: number } | undefined;
    session.observe({
      sectionOpened: (_plan, recorder, commands) =>
        heard.push(`opened ${recorder !== undefined} ${commands !== undefined}`),
      sectionEnding: (recorder, commands) => {
        heard.push('ending');
        // Still readable here: the histograms are freed only with the result.
        const soFar = recorder.recordSoFar([1_000_000_000]);
        const arrivals = commands.soFar([1_000_000_000]);
        atEnding = { okCount: soFar.okCount, commandsReceived: arrivals.alone.received + arrivals.beside.received };
      },
      sectionEnded: () => heard.push('ended'),
    });
    session.openSection(plan, undefined);
    expect(session.startMeasuring(NO_WARMUP)).toBeUndefined();
    deliver(session, 0);
    deliver(session, COMMAND_SEQ_BASE);
    deliver(session, 1);
    const result = await session.endSection({ ...failedSectionEnd('test'), failure: null, imagesSent: 2 });
    expect(heard).toEqual(['opened true true', 'ending', 'ended']);
    expect(atEnding).toEqual({ okCount: result!.okCount, commandsReceived: 1 });
  });

  it('tells of no section refused at its opening, and keeps the last run’s start after it ends', async () => {
    const { session, ended } = startedSession();
    session.openSection(plan, 'listener down');
    expect(session.recordingSection).toBeUndefined();
    await session.finish(null);
    expect(ended).toEqual([]);
    expect(session.inProgress).toBe(false);
    expect(session.lastRunStartedAt).toBe('2026-01-02T03:04:05.678Z');
  });

  it('lets go of a section a run ends over without its word: no recorder left to read', async () => {
    const { session } = startedSession();
    session.openSection(plan, undefined);
    session.start({ ...(session.runInfo as unknown as RunAnnouncement), startedAt: '2026-01-02T04:00:00.000Z' });
    expect(session.recordingSection).toBeUndefined();
    expect(session.lastRunStartedAt).toBe('2026-01-02T04:00:00.000Z');
  });
});
