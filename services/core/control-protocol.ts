// The control protocol between transmitter and receiver: JSON over HTTP on CONTROL_PORT. Both
// services use these types and schemas and meet only over the wire. Bodies are checked against
// the schemas (fastify validates them, without type coercion), and kept small.

import { MAX_CLIENTS, MAX_IMAGE_COUNT, MAX_RECEIVERS } from './config.js';
import type { SideCost } from './cost.js';
import { MAX_RATE_PER_SECOND } from './schedule.js';
import type { HostFacts, RunInfo, RunReport } from './report.js';
import type { ClockOffset } from './clock.js';
import type { ClientFigures, TransmitterColdStart } from './section.js';

/** Largest control request body, in bytes: the protocol's messages are a few kilobytes. */
export const CONTROL_BODY_LIMIT_BYTES = 64 * 1024;

/**
 * Largest body of POST /sections/:id/end, which carries every recorded image's round trip and,
 * under RATE, its send lag: each a whole number of nanoseconds (at most 16 digits and a comma) or null.
 */
export const SECTION_END_BODY_LIMIT_BYTES = CONTROL_BODY_LIMIT_BYTES + 2 * MAX_IMAGE_COUNT * 17;

/** POST /runs: what the transmitter announces at the start of a run (the receiver adds its own host). */
export type RunAnnouncement = Omit<RunInfo, 'hosts'> & { hosts: Pick<RunInfo['hosts'], 'transmitter'> };

/** POST /sections/:id/end: how the section ended on the transmitter's side. */
export interface SectionEnd {
  failure: string | null;
  transmitterCost: SideCost | null;
  /** Round trip of every recorded image in whole nanoseconds, by image; null where no ack came. */
  rttNs: (number | null)[];
  /** Under RATE: every recorded image's stamp − due time in whole nanoseconds, by image; null for one dropped at the sender. Null in a closed loop. */
  dueLagNs: (number | null)[] | null;
  /** Under RATE: images per second actually sent; null in a closed loop or with fewer than two sends. */
  achievedRatePerSecond: number | null;
  /** CLIENTS > 1: each client's acknowledged recorded images and its rate, by client; null with one client. */
  clientFigures: ClientFigures[] | null;
  /** The connection's connect time and first round trip. */
  coldStart: TransmitterColdStart;
  /** The clock offset estimated again after the last ack (drift since the section's start); null when it was not. */
  clockAfter: ClockOffset | null;
}

/** The end of a section that failed before the transmitter had figures: only the reason. */
export function failedSectionEnd(failure: string): SectionEnd {
  return { failure, transmitterCost: null, rttNs: [], dueLagNs: null, achievedRatePerSecond: null, clientFigures: null, coldStart: { connectMs: null, firstImageRttMs: null }, clockAfter: null };
}

/** POST /runs/finish's answer, and what a transmitter's run ends with. */
export interface RunOutcome {
  report: RunReport;
  summary: string;
  succeeded: boolean;
  /** Set when the receiver went away mid-run: the report is the transmitter's own, and no output.log was written. */
  receiverLost?: string;
  /**
   * Set when the receiver could not write the run's output files: the file and the system's
   * reason ("could not write /x/output.log: ENOSPC: no space left on device"). The report is
   * whole but only here; the previous run's files were left as they were, and the run fails.
   */
  filesNotWritten?: string;
}

/** State of one transport's listener, as GET /health reports it. */
export interface ListenerStatus {
  ready: boolean;
  port: number;
  error: string | null;
  /** A listener that is down and will be tried again (its broker may come up); false when ready, or when a setting is missing and no retry can help. */
  retrying: boolean;
}

/** GET /health's answer. */
export interface HealthResponse {
  status: 'ready';
  listeners: Record<string, ListenerStatus>;
  host: HostFacts;
  /**
   * Since the receiver started: input the transports dropped, well-formed frames it refused, data
   * connections refused (no or a wrong credential, over a cap, fell silent), and control requests
   * refused for want of AUTH_TOKEN.
   */
  counters: { rejectedInputs: number; rejectedFrames: number; refusedConnections: number; refusedRequests: number };
}

/** Header of GET /clock's answer: the receiver's monotonic clock, in decimal nanoseconds. */
export const CLOCK_HEADER = 'x-receiver-clock-ns';

const wholeNumber = { type: 'integer', minimum: 0, maximum: 2 ** 53 - 1 } as const;
const shortText = { type: 'string', maxLength: 4096 } as const;
const anyObject = { type: 'object' } as const;
const msOrNull = { type: ['number', 'null'], minimum: 0 } as const;

/** A section's warm-up plan (WarmupPlan): in the run's facts and in every section's plan. */
const warmupPlanSchema = {
  anyOf: [
    { type: 'object', additionalProperties: false, required: ['mode', 'images'], properties: { mode: { const: 'images' }, images: wholeNumber } },
    {
      type: 'object',
      additionalProperties: false,
      required: ['mode', 'minMs', 'minImages', 'maxMs', 'maxImages', 'blockImages', 'tolerance'],
      properties: {
        mode: { const: 'steady' },
        minMs: wholeNumber,
        minImages: wholeNumber,
        maxMs: wholeNumber,
        maxImages: wholeNumber,
        blockImages: { type: 'integer', minimum: 1, maximum: 2 ** 20 },
        blocks: { type: 'integer', minimum: 2, maximum: 16 },
        tolerance: { type: 'number', minimum: 0, maximum: 1 },
      },
    },
  ],
} as const;

/** POST /sections/:sectionId/measure: the warm-up is over (WarmupOutcome); the recorded images start at seq `images`. */
export const warmupOutcomeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['images', 'ms', 'steady', 'mediansMs'],
  properties: {
    images: wholeNumber,
    ms: { type: 'number', minimum: 0 },
    steady: { type: ['boolean', 'null'] },
    mediansMs: { anyOf: [{ type: 'null' }, { type: 'array', minItems: 2, maxItems: 16, items: { type: 'number', minimum: 0 } }] },
  },
} as const;

/** POST /runs: the facts of a run, sent once at its start (the receiver adds its own host). */
export const runInfoSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['startedAt', 'imageDescription', 'imageSizeBytes', 'imageCount', 'window', 'warmup', 'repeat', 'transports', 'arrivalNotes', 'config', 'receivers', 'receiverIndex', 'hosts'],
  properties: {
    startedAt: shortText,
    imageDescription: shortText,
    imageSizeBytes: wholeNumber,
    imageCount: wholeNumber,
    window: wholeNumber,
    warmup: warmupPlanSchema,
    repeat: wholeNumber,
    transports: { type: 'array', maxItems: 64, items: { type: 'string', maxLength: 64 } },
    arrivalNotes: { type: 'array', maxItems: 64, items: shortText },
    config: anyObject,
    receivers: { type: 'integer', minimum: 1, maximum: MAX_RECEIVERS },
    receiverIndex: { type: 'integer', minimum: 0, maximum: MAX_RECEIVERS - 1 },
    hosts: { type: 'object', additionalProperties: false, required: ['transmitter'], properties: { transmitter: anyObject } },
  },
} as const;

const clockOffsetProperties = { offsetNs: { type: 'number' }, uncertaintyNs: { type: 'number', minimum: 0 }, roundTripNs: { type: 'number', minimum: 0 }, samples: wholeNumber } as const;

// Before a section: the offset and whether it was applied.
const clockSchema = {
  anyOf: [
    { type: 'null' },
    {
      type: 'object',
      additionalProperties: false,
      required: ['offsetNs', 'uncertaintyNs', 'roundTripNs', 'samples', 'applied'],
      properties: { ...clockOffsetProperties, applied: { type: 'boolean' } },
    },
  ],
} as const;

// After a section: the offset again, to bound its drift.
const clockAfterSchema = {
  anyOf: [{ type: 'null' }, { type: 'object', additionalProperties: false, required: ['offsetNs', 'uncertaintyNs', 'roundTripNs', 'samples'], properties: clockOffsetProperties }],
} as const;

/** POST /sections: a section's plan, before its first frame. */
export const sectionPlanSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['sectionId', 'transport', 'label', 'baseline', 'repeat', 'imageCount', 'warmup', 'imageSizeBytes', 'window', 'ratePerSecond', 'clients', 'receivers', 'receiverIndex', 'clock'],
  properties: {
    sectionId: { type: 'integer', minimum: 0, maximum: 2 ** 32 - 1 },
    transport: { type: 'string', maxLength: 64 },
    label: { type: 'string', maxLength: 64 },
    baseline: { type: 'boolean' },
    repeat: wholeNumber,
    imageCount: wholeNumber,
    warmup: warmupPlanSchema,
    imageSizeBytes: wholeNumber,
    window: wholeNumber,
    ratePerSecond: { type: ['number', 'null'], exclusiveMinimum: 0, maximum: MAX_RATE_PER_SECOND },
    clients: { type: 'integer', minimum: 1, maximum: MAX_CLIENTS },
    receivers: { type: 'integer', minimum: 1, maximum: MAX_RECEIVERS },
    receiverIndex: { type: 'integer', minimum: 0, maximum: MAX_RECEIVERS - 1 },
    clock: clockSchema,
  },
} as const;

const sideCostSchema = {
  anyOf: [
    { type: 'null' },
    {
      type: 'object',
      additionalProperties: false,
      required: ['cpuUserMs', 'cpuSystemMs', 'cpuMs', 'cpuMsPerImage', 'peakRssBytes', 'eventLoopUtilization'],
      properties: {
        cpuUserMs: { type: 'number' },
        cpuSystemMs: { type: 'number' },
        cpuMs: { type: 'number' },
        cpuMsPerImage: { type: 'number' },
        peakRssBytes: { type: 'number' },
        eventLoopUtilization: { type: ['number', 'null'] },
      },
    },
  ],
} as const;

/** POST /sections/:sectionId/end: the transmitter's side of how the section ended and what it cost. */
export const sectionEndSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['failure', 'transmitterCost', 'rttNs', 'dueLagNs', 'achievedRatePerSecond', 'clientFigures', 'coldStart', 'clockAfter'],
  properties: {
    failure: { type: ['string', 'null'], maxLength: 4096 },
    transmitterCost: sideCostSchema,
    rttNs: { type: 'array', maxItems: MAX_IMAGE_COUNT, items: { type: ['integer', 'null'], minimum: 0, maximum: 2 ** 53 - 1 } },
    dueLagNs: { anyOf: [{ type: 'null' }, { type: 'array', maxItems: MAX_IMAGE_COUNT, items: { type: ['integer', 'null'], minimum: 0, maximum: 2 ** 53 - 1 } }] },
    achievedRatePerSecond: { type: ['number', 'null'], minimum: 0 },
    clientFigures: {
      anyOf: [
        { type: 'null' },
        {
          type: 'array',
          maxItems: MAX_CLIENTS,
          items: { type: 'object', additionalProperties: false, required: ['images', 'imagesPerSecond'], properties: { images: { type: 'integer', minimum: 0 }, imagesPerSecond: { type: ['number', 'null'], minimum: 0 } } },
        },
      ],
    },
    coldStart: {
      type: 'object',
      additionalProperties: false,
      required: ['connectMs', 'firstImageRttMs'],
      properties: { connectMs: msOrNull, firstImageRttMs: msOrNull },
    },
    clockAfter: clockAfterSchema,
  },
} as const;

/** POST /sections/:sectionId/fan-out: every receiver's figures and the aggregate (RECEIVERS > 1), to the first receiver. */
export const fanOutSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['mode', 'perReceiver', 'aggregate'],
  properties: {
    mode: { enum: ['copies', 'one send'] },
    perReceiver: { type: 'array', maxItems: MAX_RECEIVERS, items: anyObject },
    aggregate: anyObject,
  },
} as const;
