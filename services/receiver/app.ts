import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { imageChecksum } from '../core/checksum.js';
import type { Config } from '../core/config.js';
import { sideCost, type ResourceReading, type SideCost } from '../core/cost.js';
import { errorMessage } from '../core/errors.js';
import type { Ack } from '../core/frame.js';
import { renderOutputLog, renderResultsJson, renderSummary, RESULTS_SCHEMA_VERSION, runSucceeded, summarizeTransports, type RunInfo, type RunReport } from '../core/report.js';
import { SectionRecorder, type SectionPlan, type SectionResult } from '../core/section.js';
import { writeFileAtomic } from '../shared/files.js';
import { hostFacts } from '../shared/host.js';
import { readResources, RssPeakTracker } from '../shared/resources.js';
import type { ReceivedFrame, ReceiverListener } from '../transports/contract.js';
import { transportByName } from '../transports/index.js';
import { CONTROL_BODY_LIMIT_BYTES, runInfoSchema, sectionEndSchema, sectionPlanSchema, CLOCK_HEADER, type HealthResponse, type ListenerStatus } from './protocol.js';

/** A receiver: one listener per configured transport plus the HTTP control endpoint. */
export interface ReceiverApp {
  /** Starts every listener, then the control endpoint; a listener that fails is reported, not fatal. */
  start(): Promise<{ controlPort: number; listeners: Record<string, ListenerStatus> }>;
  /** Closes the control endpoint and every listener; safe to call twice. */
  close(): Promise<void>;
}

interface RunState {
  info: RunInfo;
  sections: SectionResult[];
}

// A section between POST /sections and its end: the record, and the receiver's resource
// readings from POST /sections/:id/measure (sent once warm-up is over) to the end.
interface OpenSection {
  recorder: SectionRecorder;
  measureStart: ResourceReading | undefined;
  rss: RssPeakTracker;
}

/** Builds a receiver from a validated config; nothing listens until start(). */
export function buildReceiver(config: Readonly<Config>, log: Logger): ReceiverApp {
  const listeners = new Map<string, ReceiverListener>();
  const listenerStatus: Record<string, ListenerStatus> = {};
  let run: RunState | undefined;
  let current: OpenSection | undefined;
  let strayFrames = 0;
  let rejectedInputs = 0;
  let control: FastifyInstance | undefined;
  let closing: Promise<void> | undefined;

  // Called by every transport for every complete frame: arrival time is already taken, so the
  // checksum is verified here, outside the timed span.
  function deliver(frame: ReceivedFrame): Ack {
    const { header } = frame;
    const recorder = current?.recorder;
    if (recorder === undefined || recorder.plan.sectionId !== header.sectionId) {
      strayFrames++;
      log.warn({ sectionId: header.sectionId, seq: header.seq }, 'frame for no open section dropped');
      return { sectionId: header.sectionId, seq: header.seq, status: 'rejected' };
    }
    const checksumOk = imageChecksum(frame.payload) === header.checksum;
    const status = recorder.record(header, frame.arrivalNs, checksumOk);
    if (log.isLevelEnabled('debug')) {
      log.debug({ transport: recorder.plan.transport, seq: header.seq, status, timeNs: String(frame.arrivalNs - header.sentAtNs) }, 'image received');
    }
    return { sectionId: header.sectionId, seq: header.seq, status };
  }

  function openSection(sectionIdText: string): OpenSection | undefined {
    return current !== undefined && String(current.recorder.plan.sectionId) === sectionIdText ? current : undefined;
  }

  function closeCurrent(): void {
    current?.rss.stop();
    current = undefined;
  }

  async function startListeners(): Promise<void> {
    for (const name of config.transports) {
      const transport = transportByName(name);
      const port = config.ports[name] ?? 0;
      try {
        const listener = await transport.listen({
          host: config.receiverHost,
          bindHost: config.bindHost,
          port,
          redisUrl: config.redisUrl,
          maxImageBytes: config.maxImageBytes,
          log: log.child({ transport: name }),
          deliver,
          onReject(reason) {
            rejectedInputs++;
            log.warn({ transport: name, reason }, 'input rejected');
          },
        });
        listeners.set(name, listener);
        listenerStatus[name] = { ready: true, port: listener.port, error: null };
        log.info({ transport: name, port: listener.port }, 'listening');
      } catch (err) {
        listenerStatus[name] = { ready: false, port: transport.port ? port : 0, error: errorMessage(err) };
        log.error({ transport: name, err: errorMessage(err) }, 'listener failed to start; its section will be reported as failed');
      }
    }
  }

  async function finishRun(state: RunState): Promise<{ report: RunReport; summary: string; succeeded: boolean }> {
    const report: RunReport = {
      schemaVersion: RESULTS_SCHEMA_VERSION,
      run: state.info,
      finishedAt: new Date().toISOString(),
      sections: state.sections,
      transports: summarizeTransports(state.sections, state.info.transports),
    };
    await writeFileAtomic(path.join(config.outputDir, 'results.json'), renderResultsJson(report));
    await writeFileAtomic(path.join(config.outputDir, 'output.log'), renderOutputLog(report));
    log.info({ outputDir: path.resolve(config.outputDir), strayFrames, rejectedInputs }, 'run finished; output.log and results.json written');
    return { report, summary: renderSummary(report), succeeded: runSucceeded(report) };
  }

  function buildControl(): FastifyInstance {
    // No type coercion: a body that does not match the protocol is refused, not reinterpreted.
    const app = Fastify({ logger: false, bodyLimit: CONTROL_BODY_LIMIT_BYTES, ajv: { customOptions: { coerceTypes: false } } });
    app.get('/health', async (): Promise<HealthResponse> => ({ status: 'ready', listeners: listenerStatus, host: hostFacts() }));
    // Read as late as the request allows before answering: the transmitter brackets this with its
    // own clock and reads it at the response headers.
    app.get('/clock', (request, reply) => {
      void reply.header(CLOCK_HEADER, String(process.hrtime.bigint())).send();
    });
    app.post('/runs', { schema: { body: runInfoSchema } }, async (request, reply) => {
      const info = request.body as Omit<RunInfo, 'hosts'> & { hosts: Pick<RunInfo['hosts'], 'transmitter'> };
      run = { info: { ...info, hosts: { transmitter: info.hosts.transmitter, receiver: hostFacts() } }, sections: [] };
      closeCurrent();
      log.info({ imageCount: info.imageCount, imageSizeBytes: info.imageSizeBytes, window: info.window, transports: info.transports }, 'run started');
      return reply.code(204).send();
    });
    app.post('/sections', { schema: { body: sectionPlanSchema } }, async (request, reply) => {
      const plan = request.body as SectionPlan;
      if (run === undefined) return reply.code(409).send({ error: 'no run started' });
      const status = listenerStatus[plan.transport];
      const refusal = !status?.ready
        ? `receiver's ${plan.transport} listener is not available: ${status?.error ?? 'not in its TRANSPORTS'}`
        : plan.imageSizeBytes > config.maxImageBytes
          ? `images of ${plan.imageSizeBytes} bytes are over the receiver's MAX_IMAGE_SIZE (${config.maxImageBytes} bytes)`
          : undefined;
      if (refusal !== undefined) {
        // The section stays in the report as failed, with the reason: never silently missing.
        run.sections.push(new SectionRecorder(plan).result(refusal));
        log.error({ transport: plan.transport, reason: refusal }, 'section refused');
        return reply.code(409).send({ error: refusal });
      }
      closeCurrent();
      current = { recorder: new SectionRecorder(plan), measureStart: undefined, rss: new RssPeakTracker() };
      log.info({ transport: plan.transport, sectionId: plan.sectionId }, 'section started');
      return reply.code(204).send();
    });
    app.post('/sections/:sectionId/measure', async (request, reply) => {
      const open = openSection((request.params as { sectionId: string }).sectionId);
      if (open === undefined) return reply.code(409).send({ error: 'that section is not open' });
      open.rss.start();
      open.measureStart = readResources();
      return reply.code(204).send();
    });
    app.post('/sections/:sectionId/end', { schema: { body: sectionEndSchema } }, async (request, reply) => {
      const measureEnd = readResources();
      const open = openSection((request.params as { sectionId: string }).sectionId);
      const { failure, transmitterCost } = request.body as { failure: string | null; transmitterCost: SideCost | null };
      if (run === undefined || open === undefined) return reply.code(409).send({ error: 'that section is not open' });
      const peakRssBytes = open.rss.stop();
      const receiverCost = open.measureStart === undefined ? null : sideCost(open.measureStart, measureEnd, peakRssBytes, open.recorder.plan.imageCount);
      const result = open.recorder.result(failure, { transmitter: transmitterCost, receiver: receiverCost });
      current = undefined;
      run.sections.push(result);
      log.info({ transport: result.transport, repeat: result.repeat, ok: result.ok, okCount: result.okCount, lostCount: result.lostCount, corruptCount: result.corruptCount, totalMs: result.totalMs }, 'section ended');
      return result;
    });
    app.post('/runs/finish', async (request, reply) => {
      if (run === undefined) return reply.code(409).send({ error: 'no run started' });
      const finished = await finishRun(run);
      run = undefined;
      return finished;
    });
    return app;
  }

  return {
    async start() {
      await startListeners();
      control = buildControl();
      await control.listen({ port: config.controlPort, host: config.bindHost });
      const address = control.server.address();
      const controlPort = typeof address === 'object' && address !== null ? address.port : config.controlPort;
      log.info({ controlPort }, 'receiver ready');
      return { controlPort, listeners: { ...listenerStatus } };
    },
    close() {
      closing ??= (async () => {
        closeCurrent();
        await control?.close();
        await Promise.all([...listeners.values()].map((l) => l.close()));
        listeners.clear();
      })();
      return closing;
    },
  };
}
