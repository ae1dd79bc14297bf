import { errorMessage } from '../../core/errors.js';
import { decodeFrameHeader, type Ack, type FrameHeader } from '../../core/wire/frame.js';
import type { BrokerStamp } from '../../core/model/broker-split.js';
import type { PartsChecksum } from '../../core/wire/checksum.js';
import type { ReceivedFrame, ReceiverOptions } from '../contract.js';

// The one receive path. Every transport hands what it got to a gate, which decodes and checks the
// header, checks the payload's length, stamps the arrival and delivers, and words every rejection
// the same way. Its policies hold for every transport alike:
// - the arrival is stamped when the gate takes the whole image, before anything else is done
//   with it, so no transport's own bookkeeping moves a stamp; a transport that must hold a whole
//   image before handing it over (gRPC unary waits for earlier calls, to deliver in order) stamps
//   it when the image is in hand and passes that stamp, so the hold is not in the image's time;
// - no hash comes before the stamp: a transport that sums an image's parts as it reads them (a byte
//   stream) hashes every part but the last before the gate has the image, and the gate asks for the
//   sum (the last part's hash and the digest) only after it has stamped the arrival and checked the
//   length; the receiver then has the verdict at once. Every other image reaches the receiver
//   unhashed, and is hashed after its ack (services/receiver/verifier.ts);
// - a header is checked as soon as its bytes are in hand, before any payload memory is set aside;
// - input that fails a check, and a frame whose delivery throws, is dropped unacknowledged and
//   reported through onReject; whether the connection survives is the transport's to say (a byte
//   stream cannot resynchronise, a message stream can).

/** A transport's receive path; see the policies above. */
export interface FrameGate {
  /** Decodes a header whose bytes are in hand; undefined when it was rejected (and reported). */
  header(headerBytes: Buffer): FrameHeader | undefined;
  /**
   * Takes a whole image under a decoded header; returns the ack to send back at once, or undefined when it was dropped
   * (and reported). `sumParts`, from a transport that summed the image's parts as it read them, hashes what is left
   * (the last part) and gives the sum: the gate calls it after the stamp, before delivering.
   */
  take(header: FrameHeader, payload: Buffer | readonly Buffer[], sumParts?: () => PartsChecksum): Ack | undefined;
  /**
   * Header bytes and image in one call, for transports that get both at once; `arrivalNs` when the transport had them
   * in hand before now; `brokerStamp` when the broker stamped the message.
   */
  frame(headerBytes: Buffer, payload: Buffer, arrivalNs?: bigint, brokerStamp?: BrokerStamp): Ack | undefined;
  /** Reports input dropped for a reason of the transport's own (a text message, a wrong part count). */
  reject(reason: string): void;
}

/** The gate of one transport's listener; `source` starts every rejection ("tcp", "grpc from 127.0.0.1:5000"). */
export function frameGate(
  options: Pick<ReceiverOptions, 'deliver' | 'onReject' | 'maxImageBytes'>,
  source: string,
): FrameGate {
  const reject = (reason: string): void => options.onReject(`${source}: ${reason}`);
  const header = (headerBytes: Buffer): FrameHeader | undefined => {
    try {
      return decodeFrameHeader(headerBytes, options.maxImageBytes);
    } catch (err) {
      reject(errorMessage(err));
      return undefined;
    }
  };
  // `arrivalNs` is taken by the caller before this runs: the length check and the last part's hash come after it.
  const deliver = (
    decoded: FrameHeader,
    payload: Buffer | readonly Buffer[],
    arrivalNs: bigint,
    brokerStamp?: BrokerStamp,
    sumParts?: () => PartsChecksum,
  ): Ack | undefined => {
    const payloadBytes = Buffer.isBuffer(payload)
      ? payload.length
      : payload.reduce((sum, part) => sum + part.length, 0);
    if (payloadBytes !== decoded.sizeBytes) {
      reject(`image of ${payloadBytes} bytes, its header announces ${decoded.sizeBytes}`);
      return undefined;
    }
    const frame: ReceivedFrame = { header: decoded, payload, arrivalNs };
    if (brokerStamp !== undefined) frame.brokerStamp = brokerStamp;
    try {
      if (sumParts !== undefined) frame.partsChecksum = sumParts();
      return options.deliver(frame);
    } catch (err) {
      reject(`image seq ${decoded.seq} not delivered: ${errorMessage(err)}`);
      return undefined;
    }
  };
  return {
    header,
    take(decoded, payload, sumParts) {
      return deliver(decoded, payload, process.hrtime.bigint(), undefined, sumParts);
    },
    frame(headerBytes, payload, inHandNs, brokerStamp) {
      const arrivalNs = inHandNs ?? process.hrtime.bigint();
      const decoded = header(headerBytes);
      return decoded === undefined ? undefined : deliver(decoded, payload, arrivalNs, brokerStamp);
    },
    reject,
  };
}
