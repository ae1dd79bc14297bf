// The control protocol between transmitter and receiver: JSON over HTTP on CONTROL_PORT.
// Bodies are checked against these schemas (fastify validates them), and kept small.

/** Largest control request body, in bytes: the protocol's messages are a few hundred bytes. */
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
}

const wholeNumber = { type: 'integer', minimum: 0, maximum: 2 ** 53 - 1 } as const;
const shortText = { type: 'string', maxLength: 4096 } as const;

/** POST /runs: the facts of a run, sent once at its start. */
export const runInfoSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['startedAt', 'transmitterHost', 'nodeVersion', 'imageDescription', 'imageSizeBytes', 'imageCount', 'window', 'warmup', 'transports'],
  properties: {
    startedAt: shortText,
    transmitterHost: shortText,
    nodeVersion: shortText,
    imageDescription: shortText,
    imageSizeBytes: wholeNumber,
    imageCount: wholeNumber,
    window: wholeNumber,
    warmup: wholeNumber,
    transports: { type: 'array', maxItems: 64, items: { type: 'string', maxLength: 64 } },
  },
} as const;

/** POST /sections: a section's plan, before its first frame. */
export const sectionPlanSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['sectionId', 'transport', 'label', 'baseline', 'imageCount', 'warmup', 'imageSizeBytes', 'window'],
  properties: {
    sectionId: { type: 'integer', minimum: 0, maximum: 2 ** 32 - 1 },
    transport: { type: 'string', maxLength: 64 },
    label: { type: 'string', maxLength: 64 },
    baseline: { type: 'boolean' },
    imageCount: wholeNumber,
    warmup: wholeNumber,
    imageSizeBytes: wholeNumber,
    window: wholeNumber,
  },
} as const;

/** POST /sections/:sectionId/end: the transmitter's side of how the section ended. */
export const sectionEndSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['failure'],
  properties: { failure: { type: ['string', 'null'], maxLength: 4096 } },
} as const;
