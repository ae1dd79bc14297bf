import type { Logger } from 'pino';
import { errorMessage } from '../core/errors.js';
import { LiveEventHistory, type LiveEvent } from '../core/live/event-history.js';
import {
  type LiveEventData,
  type LiveEventName,
  partialSecondSpan,
  runEndData,
  runEventData,
  secondEventData,
  type SecondReading,
  sectionEndData,
  sectionStartData,
  type ProcessLoad,
} from '../core/live/live-events.js';
import { loadBetween, type ProcessSnapshot } from '../core/live/process-load.js';
import type { SectionRecorder } from '../core/model/recorder.js';
import type { SectionPlan, SectionResult } from '../core/model/section.js';
import type { RunInfo, RunReport } from '../core/report/report.js';
import { transports } from '../transports/index.js';
import type { BrokerReader, SessionObserver } from './session.js';

// GET /events' source: the session's transitions as events, and once a second the open section's
// newly closed seconds, read from its recorder (what delivery already counts: no work per image).
// The last second of a section closes only with the section: it comes from the result, before the
// section's end, marked partial (its rates over the part of it the images covered), and with the
// round trips and frame ages taken as the record became final, so the last batch is not lost.

/** How often the open section's closed seconds are read. */
const SECOND_READ_INTERVAL_MS = 1000;

/**
 * A transmitter's load older than this is not shown: it sends its snapshot with each batch of round trips, at least
 * once a second while acks come.
 */
const TRANSMITTER_LOAD_STALE_MS = 3000;

/** Hears each event as it is stored. */
export type LiveListener = (event: LiveEvent) => void;

/** The section being read: its plan, its recorder, and how many of its seconds went out. */
interface ReadSection {
  plan: SectionPlan;
  recorder: SectionRecorder | undefined;
  sentSeconds: number;
  /** Read as its record became final: what no `second` carried yet, and its last arrival. */
  final?: {
    roundTrips: SecondReading['roundTrips'];
    frameAges: SecondReading['frameAges'];
    lastArrivalMs: number | null;
  };
}

/** A display name for each transport, as the report shows it; the name itself for one this receiver does not know. */
function labelOf(name: string): string {
  return transports.find((t) => t.name === name)?.label ?? name;
}

/** The run's events for GET /events: a {@link SessionObserver} that stores and passes on what it hears. */
export class LiveFeed implements SessionObserver {
  readonly history = new LiveEventHistory();
  private readonly listeners = new Set<LiveListener>();
  private section: ReadSection | undefined;
  private timer: NodeJS.Timeout | undefined;
  // The receiver's CPU and the wall clock at the last `second` sent (or the section's start).
  private cpuMicrosAtLast = 0;
  private wallMsAtLast = 0;
  // The transmitter's last snapshot, the load since the one before, and when (this clock) it came.
  private transmitterSnapshot: ProcessSnapshot | undefined;
  private transmitterLoad: ProcessLoad | undefined;
  private transmitterLoadAtMs = 0;
  // The open section's broker: its last reading (this clock), the load since the one before, a read under way.
  private brokerSnapshot: ProcessSnapshot | undefined;
  private brokerLoad: ProcessLoad | undefined;
  private brokerReading = false;

  /** `readBroker` reads the broker of a transport that has one (once a second while its section is open). */
  constructor(
    private readonly log: Logger,
    private readonly readBroker: BrokerReader = () => undefined,
  ) {}

  /** Adds a listener to every event from now on; returns its removal. */
  listen(listener: LiveListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  runStarted(info: RunInfo): void {
    this.section = undefined;
    this.transmitterSnapshot = undefined;
    this.transmitterLoad = undefined;
    this.emit('run', runEventData(info, labelOf));
    clearInterval(this.timer);
    // Unref'd: the feed never keeps the receiver alive.
    this.timer = setInterval(() => this.readSeconds(), SECOND_READ_INTERVAL_MS).unref();
  }

  sectionOpened(plan: SectionPlan, recorder: SectionRecorder | undefined): void {
    this.section = { plan, recorder, sentSeconds: 0 };
    this.brokerSnapshot = undefined;
    this.brokerLoad = undefined;
    this.markCpu();
    this.emit('section-start', sectionStartData(plan));
  }

  sectionEnding(recorder: SectionRecorder): void {
    const section = this.section;
    if (section?.recorder !== recorder) return;
    try {
      section.final = {
        roundTrips: recorder.takeRoundTrips(),
        frameAges: recorder.takeFrameAges(),
        lastArrivalMs: recorder.lastArrivalMs,
      };
    } catch (err) {
      this.log.warn({ err: errorMessage(err) }, "a section's last round trips not read");
    }
  }

  sectionEnded(result: SectionResult): void {
    const section = this.section;
    // Seconds not yet sent (the last one closes only now), from the result's own series.
    if (section !== undefined && section.plan.sectionId === result.sectionId) {
      const recorded = result.okCount + result.corruptCount;
      const samples = result.series.slice(section.sentSeconds).map((s) => ({ ...s, times: s.oneWay }));
      const last = samples.at(-1);
      this.sendSeconds(section, samples, recorded, section.final?.roundTrips ?? null, {
        frameAges: section.final?.frameAges ?? null,
        deadline: result.openLoop?.deadline ?? null,
        coveredSeconds:
          last === undefined
            ? undefined
            : partialSecondSpan(last.second, last.images, section.final?.lastArrivalMs ?? null, recorded),
      });
    }
    this.section = undefined;
    this.emit('section-end', sectionEndData(result));
  }

  runEnded(report: RunReport): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.section = undefined;
    this.emit('run-end', runEndData(report));
  }

  transmitterProcess(snapshot: ProcessSnapshot): void {
    const earlier = this.transmitterSnapshot;
    this.transmitterSnapshot = snapshot;
    const load = earlier === undefined ? undefined : loadBetween(earlier, snapshot);
    if (load === undefined) return;
    this.transmitterLoad = load;
    this.transmitterLoadAtMs = performance.now();
  }

  /** Stops reading (the receiver closes). */
  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  // Once a second: the open section's seconds closed since the last read.
  private readSeconds(): void {
    const section = this.section;
    if (section?.recorder === undefined) return;
    this.readBrokerOf(section);
    try {
      const { recorder } = section;
      const closed = recorder.closedSeconds(section.sentSeconds);
      // Round trips and frame ages are taken only with a second to carry them: none is dropped between seconds.
      if (closed.length > 0)
        this.sendSeconds(section, closed, recorder.recordedCount, recorder.takeRoundTrips(), {
          frameAges: recorder.takeFrameAges(),
          deadline: recorder.deadlineCounts(),
        });
    } catch (err) {
      this.log.warn({ err: errorMessage(err) }, 'live seconds not read');
    }
  }

  // `roundTrips` and `newest.frameAges` go with the newest second, `newest.coveredSeconds` says it is the section's
  // last, cut short; `newest.deadline` (counts so far) goes with every one.
  private sendSeconds(
    section: ReadSection,
    samples: SecondReading['sample'][],
    recorded: number,
    roundTrips: SecondReading['roundTrips'],
    newest: Pick<SecondReading, 'frameAges' | 'deadline' | 'coveredSeconds'> = {},
  ): void {
    if (samples.length === 0) return;
    const cpuMicros = cpuMicrosNow();
    const wallMs = performance.now();
    const receiverCpuMsPerSecond =
      wallMs > this.wallMsAtLast ? (cpuMicros - this.cpuMicrosAtLast) / (wallMs - this.wallMsAtLast) : 0;
    const receiverRssBytes = process.memoryUsage.rss();
    this.cpuMicrosAtLast = cpuMicros;
    this.wallMsAtLast = wallMs;
    const transmitter =
      this.transmitterLoad !== undefined && wallMs - this.transmitterLoadAtMs <= TRANSMITTER_LOAD_STALE_MS
        ? this.transmitterLoad
        : null;
    const broker = this.brokerLoad ?? null;
    for (const [index, sample] of samples.entries()) {
      const isNewest = index === samples.length - 1;
      this.emit(
        'second',
        secondEventData(section.plan, {
          sample,
          recorded,
          receiverCpuMsPerSecond,
          receiverRssBytes,
          // The round trips and frame ages taken now go with the newest second only: counted once.
          roundTrips: isNewest ? roundTrips : null,
          frameAges: isNewest ? newest.frameAges : null,
          deadline: newest.deadline,
          ...(isNewest && newest.coveredSeconds !== undefined ? { coveredSeconds: newest.coveredSeconds } : {}),
          transmitter,
          broker,
        }),
      );
    }
    section.sentSeconds += samples.length;
  }

  // Starts one read of the section's broker, if it has one and none is under way; its load shows from the next second.
  private readBrokerOf(section: ReadSection): void {
    if (this.brokerReading) return;
    let reading: ReturnType<BrokerReader>;
    try {
      reading = this.readBroker(section.plan.transport);
    } catch (err) {
      this.log.warn({ err: errorMessage(err) }, 'broker not read for the live page');
      return;
    }
    if (reading === undefined) return;
    this.brokerReading = true;
    reading
      .then((r) => {
        if (this.section !== section) return;
        const snapshot = {
          cpuMicros: r.cpuUserMicros + r.cpuSystemMicros,
          rssBytes: r.rssBytes,
          atMs: performance.now(),
        };
        const earlier = this.brokerSnapshot;
        this.brokerSnapshot = snapshot;
        if (earlier !== undefined) this.brokerLoad = loadBetween(earlier, snapshot) ?? this.brokerLoad;
      })
      .catch((err: unknown) => this.log.debug({ err: errorMessage(err) }, 'broker not read for the live page'))
      .finally(() => {
        this.brokerReading = false;
      });
  }

  private markCpu(): void {
    this.cpuMicrosAtLast = cpuMicrosNow();
    this.wallMsAtLast = performance.now();
  }

  // Stores the event and passes it on; a listener that throws is logged, never the session's problem.
  private emit<N extends LiveEventName>(event: N, data: LiveEventData[N]): void {
    const stored = this.history.append(event, data);
    for (const listener of this.listeners) {
      try {
        listener(stored);
      } catch (err) {
        this.log.warn({ event, err: errorMessage(err) }, 'live event listener failed');
      }
    }
  }
}

/** The process's CPU time so far (user + system), in microseconds. */
function cpuMicrosNow(): number {
  const { user, system } = process.cpuUsage();
  return user + system;
}
