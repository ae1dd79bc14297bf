import type * as grpc from '@grpc/grpc-js';
import { headerSeq, type CeilingPair } from '../ceiling-contract.js';
import {
  channelOptions,
  grpcJs,
  openClient,
  protoMethod,
  serve,
  type AckMessage,
  type FrameMessage,
} from '../kit/ceiling-grpc.js';

// @grpc/grpc-js, as the grpc-unary transport: one unary Put(Frame) -> Ack call per image (the
// 40-byte header in `header`, the image in `payload`), up to WINDOW calls in flight as HTTP/2
// streams on ONE channel; channel options, limits and proto are grpc.ts's. HTTP/2 interleaves the
// DATA frames of concurrent calls, so their messages can complete out of order; images must
// arrive in order, as the transport delivers them, so the handler answers an image (its Ack is the
// call's response) once every image before it was answered, holding an early one until then. The
// transport orders by call opening; here the seq in the header says the same, since the driver
// sends seqs 0, 1, 2... on one link. No metadata, no door, no interceptor, no gate.

/** The grpc-unary transport's ceiling: one unary Put call per image, WINDOW in flight on one channel. */
export const grpcUnaryCeiling: CeilingPair = {
  transport: 'grpc-unary',
  how:
    '@grpc/grpc-js: client.makeUnaryRequest(Put, Frame{header, payload}) per image, WINDOW in flight on one ' +
    'channel; the handler answers Ack in seq order',
  async receive(options) {
    const { service } = protoMethod('itb.ImageUnary', 'Put');
    // HTTP/2's default stream limit (2^32 − 1) already exceeds any WINDOW.
    const server = new (grpcJs().Server)(channelOptions(options.maxImageBytes));
    /** The seq answered next: the driver's first image is 0. */
    let next = 0;
    /** Calls whose image came in before an earlier one's, by seq. */
    const early = new Map<number, { payload: Buffer; answer: grpc.sendUnaryData<AckMessage> }>();
    const put: grpc.handleUnaryCall<FrameMessage, AckMessage> = (call, answer) => {
      const { header, payload } = call.request;
      const seq = headerSeq(header);
      if (seq !== next) {
        early.set(seq, { payload, answer });
        return;
      }
      options.arrived(seq);
      answer(null, { seq });
      options.onImage?.(seq, payload);
      for (let held = early.get(++next); held !== undefined; held = early.get(++next)) {
        early.delete(next);
        options.arrived(next);
        held.answer(null, { seq: next });
        options.onImage?.(next, held.payload);
      }
    };
    server.addService(service, { Put: put });
    return serve(server, options.bindHost, options.port);
  },
  async connect(options) {
    const { method } = protoMethod('itb.ImageUnary', 'Put');
    const client = await openClient(options.host, options.port, options.maxImageBytes);
    // Only for close(): a call still open then is cancelled rather than left to the channel.
    const inFlight = new Set<grpc.ClientUnaryCall>();
    let closing = false;
    return {
      send(_seq, header, image) {
        // No deadline: the driver's ack timeout governs a late answer.
        const call = client.makeUnaryRequest<FrameMessage, AckMessage>(
          method.path,
          method.requestSerialize,
          method.responseDeserialize,
          { header, payload: image },
          (err, ack) => {
            // grpc-js calls back on a later tick, never from inside makeUnaryRequest: `call` is set.
            inFlight.delete(call);
            if (closing) return;
            if (err) options.onFailure(`grpc-unary: call failed: ${err.message}`);
            else options.onAck(ack?.seq ?? 0);
          },
        );
        inFlight.add(call);
      },
      async close() {
        closing = true;
        for (const call of inFlight) call.cancel();
        inFlight.clear();
        client.close();
      },
    };
  },
};
