import type { FastifyPluginAsync } from 'fastify';
import { Counter, Gauge, type Metric, Registry, validateMetricName } from 'prom-client';
import type { CommandArrivals } from '../core/model/command-lane.js';
import {
  COMMAND_PHASES,
  COMMAND_VERDICTS,
  MetricTotals,
  recordingFigures,
  resultFigures,
  TIME_BUCKET_BOUNDS_SECONDS,
  type TimeBuckets,
  type TransportFigures,
  VERDICTS,
} from '../core/model/metric-totals.js';
import type { SectionRecorder } from '../core/model/recorder.js';
import type { RunSession } from './session.js';
import { ErrorCode, ItbError } from '../core/errors.js';

// GET /metrics: the receiver's figures in Prometheus's text format, through prom-client, read at
// each scrape from what the session and its recorders keep anyway. Nothing is observed per image:
// the delivery path is the benchmark's, and a scrape costs the receiver's thread about a
// millisecond per histogram of the open section (copied out of WebAssembly to be counted). The
// open-loop series (RATE) list only the transports that ran an open-loop section, the command
// series (COMMAND_RATE) only those that carried commands: a closed-loop run's scrape is as before.

/** What GET /metrics reads: the session, and the receiver's transports (listed at 0 before their first image). */
export interface MetricsRouteOptions {
  session: RunSession;
  transports: readonly string[];
}

/** A run's states, one 0/1 series each. */
const RUN_STATES = ['idle', 'running', 'ended'] as const;

/** One histogram's series: its labels (`le` aside) and its distribution. */
interface HistogramSeries {
  labels: Record<string, string>;
  times: TimeBuckets;
}

// prom-client's Histogram takes observations one at a time; these distributions are bucket counts
// already (from HDR histograms), so this hands the registry the same shape its histograms give.
class ReadHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly read: () => readonly HistogramSeries[],
  ) {
    if (!validateMetricName(name)) throw new ItbError(ErrorCode.internal, `invalid metric name: ${name}`);
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: unknown[] }> {
    const values = this.read().flatMap(({ labels, times }) => [
      ...TIME_BUCKET_BOUNDS_SECONDS.map((le, index) => ({
        metricName: `${this.name}_bucket`,
        labels: { ...labels, le },
        value: times.atOrBelow[index]!,
      })),
      { metricName: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: times.count },
      { metricName: `${this.name}_sum`, labels, value: times.sumSeconds },
      { metricName: `${this.name}_count`, labels, value: times.count },
    ]);
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

/** One series per transport and command phase, of the transports that carried commands. */
function perPhase<T>(
  figures: readonly TransportFigures[],
  value: (f: TransportFigures, phase: 'alone' | 'beside') => T,
) {
  return figures
    .filter((f) => f.commandLane)
    .flatMap((f) =>
      COMMAND_PHASES.map((phase) => ({ labels: { transport: f.transport, phase }, value: value(f, phase) })),
    );
}

/** Help text of a figure counted over every run: recorded images only. */
const counted = (help: string): string =>
  `${help}; recorded images only (warm-up images are in no figure); from every run since the receiver started`;
/** Help text of an open-loop (RATE) figure. */
const underRate = (help: string): string => counted(`Under RATE (open loop), ${help}`);
/** Help text of a command-lane (COMMAND_RATE) figure. */
const commandsCounted = (help: string): string =>
  `${help}; commands of COMMAND_RATE, by phase (alone: no image in flight; beside: while the images flow); from ` +
  'every run since the receiver started';
/** What a time histogram's bounds mean, said in each one's help. */
const PRECISION =
  "buckets from the recorder's HDR histogram at 3 significant digits: a time on a bound or up to 0.1 % under it " +
  'may count toward the next bound up';

/** What one scrape read: every transport's figures, the open section's included. */
type ScrapedFigures = () => readonly TransportFigures[];

/** The receiver's GET /metrics, open like GET /health (no AUTH_TOKEN, no secret in it). */
export const metricsRoute: FastifyPluginAsync<MetricsRouteOptions> = async (app, { session, transports }) => {
  const totals = new MetricTotals(transports);
  // Each open section's command arrivals, by its recorder (what the session gives a scrape), and each ending
  // section's figures as its record became final: the histograms its result keeps as summaries only.
  const commandsOf = new WeakMap<SectionRecorder, CommandArrivals>();
  const finalOf = new WeakMap<SectionRecorder, TransportFigures>();
  session.observe({
    sectionOpened: (_plan, recorder, commands) => {
      if (recorder !== undefined && commands !== undefined) commandsOf.set(recorder, commands);
    },
    sectionEnding: (recorder, commands) => {
      finalOf.set(recorder, recordingFigures(recorder, commands));
    },
    sectionEnded: (result, recorder) => {
      // A section refused at its opening recorded nothing.
      if (recorder !== undefined) totals.sectionEnded(recorder, resultFigures(result, finalOf.get(recorder)));
    },
  });
  const registry = new Registry();
  // Read once per scrape, before the registry asks each metric.
  let scraped: TransportFigures[] = [];
  const read = (): readonly TransportFigures[] => scraped;
  // Registered in the order a scrape lists them.
  imageCounters(registry, read);
  commandCounters(registry, read);
  for (const histogram of timeHistograms(read)) registry.registerMetric(histogram as unknown as Metric);
  runGauges(registry, session);
  processFigures(registry);

  app.get('/metrics', async (_request, reply) => {
    const recorder = session.recordingSection;
    scraped = totals.read(recorder && { key: recorder, figures: recordingFigures(recorder, commandsOf.get(recorder)) });
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  });
};

/** Images by transport and verdict, and the open loop's late images and longest gap. */
function imageCounters(registry: Registry, scraped: ScrapedFigures): void {
  const openLoop = (): TransportFigures[] => scraped().filter((f) => f.openLoop);
  new Counter({
    name: 'itb_images_total',
    help: counted(
      'Images received by transport and verdict (intact, corrupt: arrived altered or unverified, lost: never ' +
        'arrived, counted when its section ends)',
    ),
    labelNames: ['transport', 'verdict'],
    registers: [registry],
    collect() {
      this.reset();
      for (const f of scraped())
        for (const verdict of VERDICTS) this.inc({ transport: f.transport, verdict }, f.images[verdict]);
    },
  });
  new Counter({
    name: 'itb_image_bytes_total',
    help: counted("Bytes of the images in itb_images_total, at the run's image size"),
    labelNames: ['transport', 'verdict'],
    registers: [registry],
    collect() {
      this.reset();
      for (const f of scraped())
        for (const verdict of VERDICTS) this.inc({ transport: f.transport, verdict }, f.bytes[verdict]);
    },
  });
  new Counter({
    name: 'itb_images_late_total',
    help: underRate("intact images older than DEADLINE_MS at arrival, counted from each one's due time"),
    labelNames: ['transport'],
    registers: [registry],
    collect() {
      this.reset();
      for (const f of openLoop()) this.inc({ transport: f.transport }, f.lateCount);
    },
  });
  new Counter({
    name: 'itb_images_very_late_total',
    help: underRate('intact images older than three frame intervals (3000 / RATE ms) at arrival, from their due time'),
    labelNames: ['transport'],
    registers: [registry],
    collect() {
      this.reset();
      for (const f of openLoop()) this.inc({ transport: f.transport }, f.veryLateCount);
    },
  });
  new Gauge({
    name: 'itb_image_longest_gap_seconds',
    help:
      "Under RATE (open loop), the longest time between two consecutive arrivals in the transport's latest " +
      'open-loop section (the one recording now, so far); recorded images only',
    labelNames: ['transport'],
    registers: [registry],
    collect() {
      this.reset();
      for (const f of openLoop())
        if (f.longestGapSeconds !== null) this.set({ transport: f.transport }, f.longestGapSeconds);
    },
  });
}

/** Commands (COMMAND_RATE) sent, acknowledged and received, by transport and phase. */
function commandCounters(registry: Registry, scraped: ScrapedFigures): void {
  new Counter({
    name: 'itb_commands_sent_total',
    help: commandsCounted("Commands the transmitter sent, counted when the section ends (the transmitter's count)"),
    labelNames: ['transport', 'phase'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { labels, value } of perPhase(scraped(), (f, phase) => f.commands[phase].sent))
        this.inc(labels, value);
    },
  });
  new Counter({
    name: 'itb_commands_acked_total',
    help: commandsCounted("Commands acknowledged, counted when the section ends (the transmitter's count)"),
    labelNames: ['transport', 'phase'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { labels, value } of perPhase(scraped(), (f, phase) => f.commands[phase].acked))
        this.inc(labels, value);
    },
  });
  new Counter({
    name: 'itb_commands_received_total',
    help: commandsCounted('Commands received as they arrived, by verdict (intact, corrupt: failed its checksum)'),
    labelNames: ['transport', 'phase', 'verdict'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { labels, value } of perPhase(scraped(), (f, phase) => f.commands[phase].received))
        for (const verdict of COMMAND_VERDICTS) this.inc({ ...labels, verdict }, value[verdict]);
    },
  });
}

/** The time histograms: images' frame age, one-way time, round trip and jitter; commands' one-way and round trip. */
function timeHistograms(scraped: ScrapedFigures): ReadHistogram[] {
  const openLoop = (): TransportFigures[] => scraped().filter((f) => f.openLoop);
  // Frame age first: under RATE it is the headline, the one-way time beside it.
  return [
    new ReadHistogram(
      'itb_image_frame_age_seconds',
      underRate(
        `intact images' age at arrival counted from each one's due time (frame age: the headline under RATE; ` +
          `itb_image_one_way_seconds is then the time on the link); ${PRECISION}`,
      ),
      () => openLoop().map((f) => ({ labels: { transport: f.transport }, times: f.frameAge })),
    ),
    new ReadHistogram(
      'itb_image_one_way_seconds',
      counted(
        `Intact images' one-way time, send stamp to arrival stamp (clock offset applied across hosts; under RATE the ` +
          `time on the link, the stamp taken as each is handed to it); ${PRECISION}`,
      ),
      () => scraped().map((f) => ({ labels: { transport: f.transport }, times: f.oneWay })),
    ),
    new ReadHistogram(
      'itb_image_round_trip_seconds',
      counted(`Images' round trip on the transmitter, send stamp to ack processed, as it reports them; ${PRECISION}`),
      () => scraped().map((f) => ({ labels: { transport: f.transport }, times: f.roundTrip })),
    ),
    new ReadHistogram(
      'itb_image_arrival_jitter_seconds',
      underRate(`inter-arrival jitter: |gap − frame interval| between consecutive arrivals; ${PRECISION}`),
      () => openLoop().map((f) => ({ labels: { transport: f.transport }, times: f.jitter })),
    ),
    new ReadHistogram(
      'itb_command_one_way_seconds',
      commandsCounted(`Commands' one-way time, send stamp to arrival stamp (clock offset applied); ${PRECISION}`),
      () =>
        perPhase(scraped(), (f, phase) => f.commands[phase].oneWay).map(({ labels, value }) => ({
          labels,
          times: value,
        })),
    ),
    new ReadHistogram(
      'itb_command_round_trip_seconds',
      commandsCounted(
        `Commands' round trip on the transmitter, send stamp to ack processed, as its batches bring them; ${PRECISION}`,
      ),
      () =>
        perPhase(scraped(), (f, phase) => f.commands[phase].roundTrip).map(({ labels, value }) => ({
          labels,
          times: value,
        })),
    ),
  ];
}

/** The run's state and start time. */
function runGauges(registry: Registry, session: RunSession): void {
  new Gauge({
    name: 'itb_run_state',
    help: 'The run state: 1 for the current one of idle (no run since the receiver started), running, ended',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const state = session.inProgress ? 'running' : session.lastRunStartedAt === undefined ? 'idle' : 'ended';
      for (const each of RUN_STATES) this.set({ state: each }, each === state ? 1 : 0);
    },
  });
  new Gauge({
    name: 'itb_run_start_time_seconds',
    help: 'Start of the run in progress or of the last one, in seconds since the Unix epoch; 0 before any run',
    registers: [registry],
    collect() {
      const startedAt = session.lastRunStartedAt;
      this.set(startedAt === undefined ? 0 : Date.parse(startedAt) / 1e3);
    },
  });
}

/**
 * The two process figures every Prometheus client exports, without prom-client's default collectors (an event-loop
 * delay monitor and a GC observer would run beside the measurement).
 */
function processFigures(registry: Registry): void {
  new Counter({
    name: 'process_cpu_seconds_total',
    help: 'Total user and system CPU time spent in seconds',
    registers: [registry],
    collect() {
      const { user, system } = process.cpuUsage();
      this.reset();
      this.inc((user + system) / 1e6);
    },
  });
  new Gauge({
    name: 'process_resident_memory_bytes',
    help: 'Resident memory size in bytes',
    registers: [registry],
    collect() {
      this.set(process.memoryUsage.rss());
    },
  });
}
