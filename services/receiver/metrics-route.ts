import type { FastifyPluginAsync } from 'fastify';
import { Counter, Gauge, type Metric, Registry, validateMetricName } from 'prom-client';
import {
  MetricTotals,
  recordingFigures,
  resultFigures,
  TIME_BUCKET_BOUNDS_SECONDS,
  type TimeBuckets,
  type TransportFigures,
  VERDICTS,
} from '../core/model/metric-totals.js';
import type { RunSession } from './session.js';

// GET /metrics: the receiver's figures in Prometheus's text format, through prom-client, read at
// each scrape from what the session and its recorders keep anyway. Nothing is observed per image:
// the delivery path is the benchmark's, and a scrape costs the receiver's thread about a
// millisecond per histogram of the open section (copied out of WebAssembly to be counted).

/** What GET /metrics reads: the session, and the receiver's transports (listed at 0 before their first image). */
export interface MetricsRouteOptions {
  session: RunSession;
  transports: readonly string[];
}

/** A run's states, one 0/1 series each. */
const RUN_STATES = ['idle', 'running', 'ended'] as const;

// prom-client's Histogram takes observations one at a time; these distributions are bucket counts
// already (from HDR histograms), so this hands the registry the same shape its histograms give.
class ReadHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly read: () => readonly { transport: string; times: TimeBuckets }[],
  ) {
    if (!validateMetricName(name)) throw new Error(`invalid metric name: ${name}`);
  }

  async get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: unknown[] }> {
    const values = this.read().flatMap(({ transport, times }) => [
      ...TIME_BUCKET_BOUNDS_SECONDS.map((le, index) => ({
        metricName: `${this.name}_bucket`,
        labels: { transport, le },
        value: times.atOrBelow[index]!,
      })),
      { metricName: `${this.name}_bucket`, labels: { transport, le: '+Inf' }, value: times.count },
      { metricName: `${this.name}_sum`, labels: { transport }, value: times.sumSeconds },
      { metricName: `${this.name}_count`, labels: { transport }, value: times.count },
    ]);
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

/** The receiver's GET /metrics, open like GET /health (no AUTH_TOKEN, no secret in it). */
export const metricsRoute: FastifyPluginAsync<MetricsRouteOptions> = async (app, { session, transports }) => {
  const totals = new MetricTotals(transports);
  session.observe({
    sectionEnded: (result, recorder) => {
      // A section refused at its opening recorded nothing.
      if (recorder !== undefined) totals.sectionEnded(recorder, resultFigures(result));
    },
  });
  const registry = new Registry();
  // Read once per scrape, before the registry asks each metric.
  let scraped: TransportFigures[] = [];
  const counted = (help: string): string =>
    `${help}; recorded images only (warm-up images are in no figure); from every run since the receiver started`;
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
      for (const f of scraped)
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
      for (const f of scraped)
        for (const verdict of VERDICTS) this.inc({ transport: f.transport, verdict }, f.bytes[verdict]);
    },
  });
  const precision =
    "buckets from the recorder's HDR histogram at 3 significant digits: a time on a bound or up to 0.1 % under it " +
    'may count toward the next bound up';
  const histograms = [
    new ReadHistogram(
      'itb_image_one_way_seconds',
      counted(
        `Intact images' one-way time, send stamp to arrival stamp (clock offset applied across hosts); ${precision}`,
      ),
      () => scraped.map((f) => ({ transport: f.transport, times: f.oneWay })),
    ),
    new ReadHistogram(
      'itb_image_round_trip_seconds',
      counted(`Images' round trip on the transmitter, send stamp to ack processed, as it reports them; ${precision}`),
      () => scraped.map((f) => ({ transport: f.transport, times: f.roundTrip })),
    ),
  ];
  for (const histogram of histograms) registry.registerMetric(histogram as unknown as Metric);
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
  // The two process figures every Prometheus client exports, without prom-client's default collectors
  // (an event-loop delay monitor and a GC observer would run beside the measurement).
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

  app.get('/metrics', async (_request, reply) => {
    const recorder = session.recordingSection;
    scraped = totals.read(recorder && { key: recorder, figures: recordingFigures(recorder) });
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  });
};
