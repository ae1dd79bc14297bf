// The control protocol's JSON schemas: what fastify checks each POST body against, without type coercion, before a
// route's handler reads it. The message types they check are in control-protocol.ts, which re-exports these.

import { MAX_CLIENTS, MAX_DURATION_MS, MAX_IMAGE_COUNT, MAX_RECEIVERS, MIN_DURATION_MS } from '../config/config.js';
import { MAX_RATE_PER_SECOND } from '../model/schedule.js';
import { MAX_COMMAND_BYTES, MAX_COMMAND_RATE_PER_SECOND } from '../model/command-rules.js';

/** Longest section under DURATION, in seconds: bounds the per-second series a section end carries. */
export const MAX_SECTION_SECONDS = 7 * 24 * 3600;

const wholeNumber = { type: 'integer', minimum: 0, maximum: 2 ** 53 - 1 } as const;
const shortText = { type: 'string', maxLength: 4096 } as const;
const anyObject = { type: 'object' } as const;
const msOrNull = { type: ['number', 'null'], minimum: 0 } as const;

/** A section's warm-up plan (WarmupPlan): in the run's facts and in every section's plan. */
const warmupPlanSchema = {
  anyOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['mode', 'images'],
      properties: { mode: { const: 'images' }, images: wholeNumber },
    },
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

/**
 * POST /sections/:sectionId/measure: the warm-up is over (WarmupOutcome); the recorded images start at seq `images`.
 */
export const warmupOutcomeSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['images', 'ms', 'steady', 'mediansMs'],
  properties: {
    images: wholeNumber,
    ms: { type: 'number', minimum: 0 },
    steady: { type: ['boolean', 'null'] },
    mediansMs: {
      anyOf: [{ type: 'null' }, { type: 'array', minItems: 2, maxItems: 16, items: { type: 'number', minimum: 0 } }],
    },
  },
} as const;

/** POST /runs: the facts of a run, sent once at its start (the receiver adds its own host). */
export const runInfoSchema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'startedAt',
    'imageDescription',
    'imageSizeBytes',
    'imageCount',
    'window',
    'warmup',
    'repeat',
    'transports',
    'arrivalNotes',
    'config',
    'receivers',
    'receiverIndex',
    'hosts',
  ],
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
    // The transmitter's public config, open to what it holds; the fields named are checked.
    config: {
      type: 'object',
      properties: {
        // DURATION: each section ran for this long instead of imageCount images; absent when unset.
        durationMs: { type: 'integer', minimum: MIN_DURATION_MS, maximum: MAX_DURATION_MS },
      },
    },
    receivers: { type: 'integer', minimum: 1, maximum: MAX_RECEIVERS },
    receiverIndex: { type: 'integer', minimum: 0, maximum: MAX_RECEIVERS - 1 },
    hosts: {
      type: 'object',
      additionalProperties: false,
      required: ['transmitter'],
      properties: { transmitter: anyObject },
    },
  },
} as const;

const clockOffsetProperties = {
  offsetNs: { type: 'number' },
  uncertaintyNs: { type: 'number', minimum: 0 },
  roundTripNs: { type: 'number', minimum: 0 },
  samples: wholeNumber,
} as const;

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
  anyOf: [
    { type: 'null' },
    {
      type: 'object',
      additionalProperties: false,
      required: ['offsetNs', 'uncertaintyNs', 'roundTripNs', 'samples'],
      properties: clockOffsetProperties,
    },
  ],
} as const;

/** POST /sections: a section's plan, before its first frame. */
export const sectionPlanSchema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'sectionId',
    'transport',
    'label',
    'baseline',
    'repeat',
    'imageCount',
    'warmup',
    'imageSizeBytes',
    'window',
    'ratePerSecond',
    'clients',
    'receivers',
    'receiverIndex',
    'clock',
  ],
  properties: {
    sectionId: { type: 'integer', minimum: 0, maximum: 2 ** 32 - 1 },
    transport: { type: 'string', maxLength: 64 },
    label: { type: 'string', maxLength: 64 },
    baseline: { type: 'boolean' },
    repeat: wholeNumber,
    imageCount: wholeNumber,
    durationMs: { type: ['integer', 'null'], minimum: 1000, maximum: MAX_SECTION_SECONDS * 1000 },
    warmup: warmupPlanSchema,
    imageSizeBytes: wholeNumber,
    window: wholeNumber,
    ratePerSecond: { type: ['number', 'null'], exclusiveMinimum: 0, maximum: MAX_RATE_PER_SECOND },
    deadline: {
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          additionalProperties: false,
          required: ['deadlineMs', 'allowedLateShare'],
          properties: {
            deadlineMs: { type: 'number', exclusiveMinimum: 0, maximum: 3_600_000 },
            allowedLateShare: { type: 'number', minimum: 0, maximum: 1 },
          },
        },
      ],
    },
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

const msValue = { type: 'number', minimum: 0 } as const;
const msValueOrNull = { type: ['number', 'null'], minimum: 0 } as const;

/** A LatencySummary (stats.ts), or null. */
const latencySummarySchema = {
  anyOf: [
    { type: 'null' },
    {
      type: 'object',
      additionalProperties: false,
      required: ['count', 'p50Ms', 'p90Ms', 'p99Ms', 'p999Ms', 'minMs', 'maxMs', 'meanMs', 'stdDevMs'],
      properties: {
        count: { type: 'integer', minimum: 1 },
        p50Ms: msValue,
        p90Ms: msValueOrNull,
        p99Ms: msValueOrNull,
        p999Ms: msValueOrNull,
        minMs: msValue,
        maxMs: msValue,
        meanMs: msValue,
        stdDevMs: msValue,
      },
    },
  ],
} as const;

/** A SecondDistribution (series.ts), or null. */
const secondDistributionSchema = {
  anyOf: [
    { type: 'null' },
    {
      type: 'object',
      additionalProperties: false,
      required: ['minMs', 'p50Ms', 'p99Ms', 'maxMs'],
      properties: { minMs: msValue, p50Ms: msValue, p99Ms: msValueOrNull, maxMs: msValue },
    },
  ],
} as const;

/** One phase of the transmitter's command figures (TransmitterCommandPhase). */
const commandPhaseSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['sent', 'acked', 'rtt', 'sendLag'],
  properties: {
    sent: { type: 'integer', minimum: 0 },
    acked: { type: 'integer', minimum: 0 },
    rtt: latencySummarySchema,
    sendLag: latencySummarySchema,
  },
} as const;

/** POST /sections/:sectionId/end: the transmitter's side of how the section ended and what it cost. */
export const sectionEndSchema = {
  type: 'object',
  additionalProperties: false,
  required: [
    'failure',
    'transmitterCost',
    'imagesSent',
    'roundTripsShipped',
    'sendLag',
    'rttFromDue',
    'meanInFlight',
    'rttSeconds',
    'achievedRatePerSecond',
    'clientFigures',
    'coldStart',
    'clockAfter',
    'commands',
  ],
  properties: {
    failure: { type: ['string', 'null'], maxLength: 4096 },
    transmitterCost: sideCostSchema,
    imagesSent: { type: 'integer', minimum: 0, maximum: MAX_IMAGE_COUNT },
    roundTripsShipped: { type: 'integer', minimum: 0, maximum: MAX_IMAGE_COUNT * MAX_RECEIVERS },
    sendLag: latencySummarySchema,
    rttFromDue: latencySummarySchema,
    meanInFlight: { type: ['number', 'null'], minimum: 0 },
    rttSeconds: {
      type: 'array',
      maxItems: MAX_SECTION_SECONDS,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['second', 'rtt'],
        properties: { second: { type: 'integer', minimum: 0 }, rtt: secondDistributionSchema },
      },
    },
    achievedRatePerSecond: { type: ['number', 'null'], minimum: 0 },
    clientFigures: {
      anyOf: [
        { type: 'null' },
        {
          type: 'array',
          maxItems: MAX_CLIENTS,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['images', 'imagesPerSecond'],
            properties: {
              images: { type: 'integer', minimum: 0 },
              imagesPerSecond: { type: ['number', 'null'], minimum: 0 },
            },
          },
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
    commands: {
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          additionalProperties: false,
          required: ['ratePerSecond', 'sizeBytes', 'notRun', 'alone', 'beside'],
          properties: {
            ratePerSecond: { type: 'number', exclusiveMinimum: 0, maximum: MAX_COMMAND_RATE_PER_SECOND },
            sizeBytes: { type: 'integer', minimum: 1, maximum: MAX_COMMAND_BYTES },
            notRun: { type: ['string', 'null'], maxLength: 4096 },
            alone: commandPhaseSchema,
            beside: commandPhaseSchema,
          },
        },
      ],
    },
  },
} as const;

/**
 * POST /sections/:sectionId/fan-out: every receiver's figures and the aggregate (RECEIVERS > 1), to the first receiver.
 */
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
