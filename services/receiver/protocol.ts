// The control protocol between transmitter and receiver: JSON over HTTP on CONTROL_PORT.
// Bodies are checked against these schemas (fastify validates them, without type coercion), and
// kept small.

import type { HostFacts } from '../core/report.js';

/** Largest control request body, in bytes: the protocol's messages are a few kilobytes. */
export const CONTROL_BODY_LIMIT_BYTES = 64 * 1024;

/** State of one transport's listener, as GET /health reports it. */
export interface ListenerStatus {
  ready: boolean;
  port: number;
  error: string | null;
}

/** GET /health's answer. */
export interface HealthResponse {
  status: 'ready';
  listeners: Record<string, ListenerStatus>;
  host: HostFacts;
  /** Since the receiver started: input the transports dropped, and well-formed frames it refused. */
  counters: { rejectedInputs: number; rejectedFrames: number };
}

/** Header of GET /clock's answer: the receiver's monotonic clock, in decimal nanoseconds. */
export const CLOCK_HEADER = 'x-receiver-clock-ns';

const wholeNumber = { type: 'integer', minimum: 0, maximum: 2 ** 53 - 1 } as const;
const shortText = { type: 'string', maxLength: 4096 } as const;
const anyObject = { type: 'object' } as const;

/** POST /runs: the facts of a run, sent once at its start (the receiver adds its own host). */
export const runInfoSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['startedAt', 'imageDescription', 'imageSizeBytes', 'imageCount', 'window', 'warmup', 'repeat', 'transports', 'config', 'hosts'],
  properties: {
    startedAt: shortText,
    imageDescription: shortText,
    imageSizeBytes: wholeNumber,
    imageCount: wholeNumber,
    window: wholeNumber,
    warmup: wholeNumber,
    repeat: wholeNumber,
    transports: { type: 'array', maxItems: 64, items: { type: 'string', maxLength: 64 } },
    config: anyObject,
    hosts: { type: 'object', additionalProperties: false, required: ['transmitter'], properties: { transmitter: anyObject } },
  },
} as const;

const clockSchema = {
  anyOf: [
    { type: 'null' },
    {
      type: 'object',
      additionalProperties: false,
      required: ['offsetNs', 'uncertaintyNs', 'roundTripNs', 'samples', 'applied'],
      properties: { offsetNs: { type: 'number' }, uncertaintyNs: { type: 'number' }, roundTripNs: { type: 'number' }, samples: wholeNumber, applied: { type: 'boolean' } },
    },
  ],
} as const;

/** POST /sections: a section's plan, before its first frame. */
export const sectionPlanSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['sectionId', 'transport', 'label', 'baseline', 'repeat', 'imageCount', 'warmup', 'imageSizeBytes', 'window', 'clock'],
  properties: {
    sectionId: { type: 'integer', minimum: 0, maximum: 2 ** 32 - 1 },
    transport: { type: 'string', maxLength: 64 },
    label: { type: 'string', maxLength: 64 },
    baseline: { type: 'boolean' },
    repeat: wholeNumber,
    imageCount: wholeNumber,
    warmup: wholeNumber,
    imageSizeBytes: wholeNumber,
    window: wholeNumber,
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
        eventLoopUtilization: { type: 'number' },
      },
    },
  ],
} as const;

/** POST /sections/:sectionId/end: the transmitter's side of how the section ended and what it cost. */
export const sectionEndSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['failure', 'transmitterCost'],
  properties: { failure: { type: ['string', 'null'], maxLength: 4096 }, transmitterCost: sideCostSchema },
} as const;
