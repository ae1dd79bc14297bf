import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { IDEMPOTENCY_HEADER } from '../core/control/control-protocol.js';

// The transmitter sends a control request again when its connection fails (a flood on the control port, a kept-alive
// socket closed under it), and a failure after the receiver took the request (the answer lost on the way back) looks
// the same to it as one before. Acted on twice, a round-trip batch would be counted twice, a second POST /runs
// refused as another run, a section's end refused as "not open". So each try of one request carries the same key
// (IDEMPOTENCY_HEADER, as the IETF's Idempotency-Key draft names it), and the receiver acts on a key once: a try that
// comes again gets the first one's answer, after it is made when the first is still under way.

/** Answers kept for keys: a transmitter's tries of one request come within seconds, a few requests apart. */
export const KEPT_ANSWERS = 64;

interface Answer {
  statusCode: number;
  contentType: string | undefined;
  payload: unknown;
}

/**
 * Makes every POST of `app` that carries IDEMPOTENCY_HEADER act once per key: later tries get the first one's answer.
 * Its hooks run after each route's own onRequest, so a request refused there (no AUTH_TOKEN) neither takes nor reads
 * a key. Call before the routes are registered.
 */
export function answerOncePerKey(app: FastifyInstance): void {
  // Oldest first: a Map keeps insertion order.
  const answers = new Map<string, Promise<Answer>>();
  // The request that acts on its key, and how its answer is handed to the tries waiting for it.
  const owners = new WeakMap<FastifyRequest, (answer: Answer) => void>();
  app.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    const key = request.headers[IDEMPOTENCY_HEADER];
    if (request.method !== 'POST' || typeof key !== 'string' || key === '') return;
    const known = answers.get(key);
    if (known === undefined) {
      answers.set(key, new Promise<Answer>((resolve) => owners.set(request, resolve)));
      while (answers.size > KEPT_ANSWERS) answers.delete(answers.keys().next().value!);
      return;
    }
    const answer = await known;
    if (answer.contentType !== undefined) void reply.header('content-type', answer.contentType);
    return reply.code(answer.statusCode).send(answer.payload);
  });
  app.addHook('onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const settle = owners.get(request);
    if (settle !== undefined) {
      owners.delete(request);
      const contentType = reply.getHeader('content-type');
      settle({
        statusCode: reply.statusCode,
        contentType: typeof contentType === 'string' ? contentType : undefined,
        payload,
      });
    }
    return payload;
  });
}
