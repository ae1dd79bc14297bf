import type * as grpc from '@grpc/grpc-js';
import { settlesWithin } from '../../shared/waits.js';
import { headerSeq, type CeilingPair } from '../ceiling-contract.js';
import {
  type AckMessage,
  channelOptions,
  CLOSE_GRACE_MS,
  type FrameMessage,
  GRPC_VARIANT_ENV,
  type GrpcCeilingVariant,
  grpcJs,
  openClient,
  parseGrpcVariant,
  protoMethod,
  serve,
} from '../kit/ceiling-grpc.js';
import { MAX_WINDOW_BYTES } from '../kit/http2-windows.js';

/**
 * The grpc ceiling with `variantOf()`'s change (read as each side starts; {} is the reference): the grpc-options bench
 * runs it through GRPC_VARIANT_ENV.
 */
export function grpcCeilingWith(variantOf: () => GrpcCeilingVariant): CeilingPair {
  return {
    transport: 'grpc',
    how:
      '@grpc/grpc-js: one bidi Transfer stream, call.write(Frame{header, payload}) per image; the handler ' +
      'call.write(Ack) back',
    async receive(options) {
      const variant = variantOf();
      const { service } = protoMethod('itb.ImageTransfer', 'Transfer');
      const server = new (grpcJs().Server)({ ...channelOptions(options.maxImageBytes), ...variant.server });
      const transfer: grpc.handleBidiStreamingCall<FrameMessage, AckMessage> = (call) => {
        call.on('data', (frame: FrameMessage) => {
          const seq = headerSeq(frame.header);
          options.arrived(seq);
          call.write({ seq });
          options.onImage?.(seq, frame.payload);
        });
        // The sender half-closed: end with OK so its close() completes at once.
        call.on('end', () => call.end());
        // Cancellation at close; nothing to report on this side.
        call.on('error', () => undefined);
      };
      server.addService(service, { Transfer: transfer });
      return serve(server, options.bindHost, options.port, {
        windowBytes: variant.serverWindowBytes ?? MAX_WINDOW_BYTES,
        settings: variant.serverSettings,
      });
    },
    async connect(options) {
      const variant = variantOf();
      const { method } = protoMethod('itb.ImageTransfer', 'Transfer');
      const client = await openClient(options.host, options.port, options.maxImageBytes, variant.client);
      const call = client.makeBidiStreamRequest<FrameMessage, AckMessage>(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
      );
      let closing = false;
      const ended = new Promise<void>((resolve) => call.once('status', () => resolve()));
      call.on('data', (ack: AckMessage) => options.onAck(ack.seq ?? 0));
      // grpc-js emits 'error' (CANCELLED) even after close(): the listener stays, quiet once closing.
      call.on('error', (err) => {
        if (!closing) options.onFailure(`grpc: ${err.message}`);
      });
      call.on('end', () => {
        if (!closing) options.onFailure('grpc: the receiver ended the stream');
      });
      // waitForDrain: frames held back while grpc-js is over its buffer mark, written in order on 'drain'.
      const held: FrameMessage[] = [];
      let overMark = false;
      if (variant.waitForDrain) {
        call.on('drain', () => {
          overMark = false;
          while (!overMark && held.length > 0) overMark = !call.write(held.shift()!);
        });
      }
      return {
        send(_seq, header, image) {
          const frame: FrameMessage = { header, payload: image };
          // The reference: the window bounds what grpc-js buffers past its high-water mark, so no wait for 'drain'.
          if (!variant.waitForDrain) call.write(frame);
          else if (overMark) held.push(frame);
          else overMark = !call.write(frame);
        },
        async close() {
          closing = true;
          call.end();
          if (!(await settlesWithin(ended, CLOSE_GRACE_MS))) call.cancel();
          client.close();
        },
      };
    },
  };
}

let envVariant: GrpcCeilingVariant | undefined;

/**
 * The grpc transport's ceiling: one Frame message per image on a bidi stream, an Ack back (a bench variant's, if set).
 */
export const grpcCeiling: CeilingPair = grpcCeilingWith(
  () => (envVariant ??= parseGrpcVariant(process.env[GRPC_VARIANT_ENV])),
);
