import { describe, expect, it } from 'vitest';
import { receiverLostVerdict } from '../../services/core/control/receiver-lost.js';
import { type RunWriter, runFolderStamp, writerGone } from '../../services/core/model/run-writer.js';
import { fixturePlan, fixtureReport, fixtureSection } from '../helpers/fixtures.js';

// When a run left open is abandoned: its writer's process gone from this process's space at once, one that cannot be
// looked at once its heartbeat is stale; never this process.

const self: RunWriter = { pid: 100, startTicks: '5000', bootId: 'boot-a', pidNamespace: 'pid:[1]', hostname: 'here' };
const sameSpace = (pid: number, startTicks: string | null = '4000'): RunWriter => ({ ...self, pid, startTicks });
/** This container before it was restarted: its host name and boot, another pid namespace. */
const restarted: RunWriter = { ...self, pid: 100, startTicks: '10', pidNamespace: 'pid:[2]' };
const elsewhere: RunWriter = { pid: 7, startTicks: '10', bootId: 'boot-b', pidNamespace: 'pid:[9]', hostname: 'there' };
const LIMITS = { restartedMs: 10_000, elsewhereMs: 30_000 };

describe('writerGone', () => {
  it.each([
    ['this process, however quiet', self, undefined, 3_600_000, undefined],
    ['a process of this space that is gone', sameSpace(42), null, 0, 'its receiver, process 42 on here, is gone'],
    [
      'its id now another process',
      sameSpace(42),
      '4001',
      0,
      'its receiver, process 42 on here, is gone (that id names another process now)',
    ],
    ['this id, another start: a receiver before this one', sameSpace(100, '1'), '5000', 0, expect.any(String)],
    ['alive in this space, however quiet', sameSpace(42), '4000', 3_600_000, undefined],
    ['this container before a restart, heartbeat 9 s old', restarted, undefined, 9000, undefined],
    [
      'this container before a restart, heartbeat 11 s old',
      restarted,
      undefined,
      11_000,
      'its receiver, process 100 on here, has not touched it for 11 s',
    ],
    ['another host, heartbeat 11 s old', elsewhere, undefined, 11_000, undefined],
    [
      'another host, heartbeat stale',
      elsewhere,
      undefined,
      31_000,
      'its receiver, process 7 on there, has not touched it for 31 s',
    ],
    [
      'another container of this host name and boot, same namespace unknown',
      { ...restarted, pidNamespace: null },
      undefined,
      11_000,
      expect.any(String),
    ],
    ['no boot known (no /proc), heartbeat 11 s old', { ...self, bootId: null, pid: 42 }, undefined, 11_000, undefined],
    ['this space, no start time recorded, alive: by heartbeat', sameSpace(42, null), '4000', 11_000, undefined],
    ['this space, /proc cannot tell: by heartbeat', sameSpace(42), undefined, 31_000, expect.any(String)],
  ] as const)('%s', (_name, writer, processNowStartTicks, quietMs, expected) => {
    expect(writerGone({ writer, self, processNowStartTicks, quietMs, limits: LIMITS })).toEqual(expected);
  });
});

describe('runFolderStamp', () => {
  it('is the start in UTC without separators or fraction', () => {
    expect(runFolderStamp('2026-11-29T10:15:00.123Z')).toBe('20261129T101500Z');
  });
});

describe('receiverLostVerdict', () => {
  const lost = 'receiver at 127.0.0.1:8080 did not answer POST /sections/1/end: fetch failed';
  const tcp = fixtureSection(fixturePlan({ transport: 'tcp', label: 'TCP' }), [1, 2]);
  const websocket = fixtureSection(fixturePlan({ transport: 'websocket', label: 'WebSocket' }), [1, null]);

  it('names the sections the receiver ended, the one it went away in, and its folder', () => {
    const report = fixtureReport([tcp, websocket], { startedAt: '2026-11-29T10:15:00.123Z' });
    expect(receiverLostVerdict(report, lost)).toBe(
      `INCOMPLETE: the receiver went away (${lost}); the run stopped. The receiver kept what it had written in its ` +
        "OUTPUT_DIR, in runs/20261129T101500Z-…/: the section that ended (TCP) whole, and the WebSocket section's " +
        'images up to then. A receiver started again on that OUTPUT_DIR ends the run there, marked INCOMPLETE.',
    );
  });

  it('in the first section: only the header and that section', () => {
    const report = fixtureReport([tcp], { startedAt: '2026-11-29T10:15:00Z' });
    expect(receiverLostVerdict(report, lost)).toContain(
      "in runs/20261129T101500Z-…/: the run's header, and the TCP section's images up to then.",
    );
  });

  it('names repeats when there are several, and where a second receiver keeps its runs', () => {
    const report = fixtureReport([tcp, { ...tcp, repeat: 2 }, websocket], { repeat: 2 });
    const several = { ...report, run: { ...report.run, receivers: 2 } };
    expect(receiverLostVerdict(several, lost)).toContain(
      'in runs/20261123T080000Z-…/ (receiver-<k>/runs/20261123T080000Z-…/ for the k-th of the 2 receivers): the ' +
        "sections that ended (TCP (repeat 1), TCP (repeat 2)) whole, and the WebSocket (repeat 1) section's images " +
        'up to then.',
    );
  });
});
