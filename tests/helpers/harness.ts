import { pino } from 'pino';
import { imageChecksum } from '../../services/core/checksum.js';
import { encodeFrameHeader, stampSentAt, type Ack } from '../../services/core/frame.js';
import type { ReceivedFrame, Transport } from '../../services/transports/contract.js';

/** A logger that prints only when a test run asks for it (ITB_TEST_LOG=debug). */
export const testLog = pino({ level: process.env.ITB_TEST_LOG ?? 'silent' });

/** What one pass of images through a transport produced, on both sides. */
export interface TransferOutcome {
  received: { seq: number; sectionId: number; bytes: Buffer; sentAtNs: bigint; arrivalNs: bigint }[];
  acks: Ack[];
  rejects: string[];
}

/**
 * Sends `images` through one transport with at most `window` unacknowledged, with the same
 * rules the transmitter follows (one pending send, stamp just before sending), and returns what
 * the receiver side delivered and what came back. Everything is closed before it returns.
 */
export async function transferThrough(
  transport: Transport,
  images: readonly Buffer[],
  options: { window: number; redisUrl?: string; maxImageBytes?: number; sectionId?: number; timeoutMs?: number; closeTwice?: boolean },
): Promise<TransferOutcome> {
  const sectionId = options.sectionId ?? 7;
  const maxImageBytes = options.maxImageBytes ?? 64 * 1024 * 1024;
  const outcome: TransferOutcome = { received: [], acks: [], rejects: [] };
  const listener = await transport.listen({
    host: '127.0.0.1', bindHost: '127.0.0.1', port: 0, redisUrl: options.redisUrl, maxImageBytes, log: testLog,
    deliver(frame: ReceivedFrame): Ack {
      const bytes = Buffer.isBuffer(frame.payload) ? Buffer.from(frame.payload) : Buffer.concat(frame.payload);
      outcome.received.push({ seq: frame.header.seq, sectionId: frame.header.sectionId, bytes, sentAtNs: frame.header.sentAtNs, arrivalNs: frame.arrivalNs });
      return { sectionId: frame.header.sectionId, seq: frame.header.seq, status: 'ok' };
    },
    onReject(reason) {
      outcome.rejects.push(reason);
    },
  });
  let wake: (() => void) | undefined;
  let failure: Error | undefined;
  const link = await transport.connect({
    host: '127.0.0.1', bindHost: '127.0.0.1', port: listener.port, redisUrl: options.redisUrl, maxImageBytes, log: testLog,
    connectTimeoutMs: 5000,
    onAck(ack) {
      outcome.acks.push(ack);
      wake?.();
    },
    onFailure(err) {
      failure = err;
      wake?.();
    },
  });
  const waitFor = async (condition: () => boolean): Promise<void> => {
    const deadline = Date.now() + (options.timeoutMs ?? 20_000);
    while (!condition()) {
      if (failure) throw failure;
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new Error(`timed out with ${outcome.acks.length}/${images.length} acks`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, remaining);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  };
  try {
    for (const [seq, image] of images.entries()) {
      const header = encodeFrameHeader({ sectionId, seq, sizeBytes: image.length, checksum: imageChecksum(image), sentAtNs: 0n });
      await waitFor(() => seq - outcome.acks.length < options.window);
      stampSentAt(header, process.hrtime.bigint());
      await link.send(header, image);
    }
    await waitFor(() => outcome.acks.length >= images.length);
  } finally {
    await link.close();
    await listener.close();
    if (options.closeTwice) {
      await link.close();
      await listener.close();
    }
  }
  return outcome;
}
