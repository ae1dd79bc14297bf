import { describe, expect, it } from 'vitest';
import { RssPeakTracker } from '../../services/shared/resources.js';
import { AckWaiter, Flight, type SectionProgress } from '../../services/transmitter/flight.js';
import { fixturePlan } from '../helpers/fixtures.js';

// The transmitter's bookkeeping of one section, driven by hand: which client carries the next
// image, when a slot frees with several receivers, and what is settled as lost.

const progress = (): SectionProgress => ({ transport: 'tcp', label: 'TCP', repeat: 1, repeats: 1, imageCount: 4, imageSizeBytes: 1000, sent: 0, acked: 0, startedAtMs: undefined });

function flightOf(overrides: { clients?: number; receivers?: number; window?: number; dropsImages?: boolean }) {
  const plan = fixturePlan({ transport: 'tcp', label: 'TCP', imageCount: 4, sectionId: 9, window: overrides.window ?? 1, clients: overrides.clients ?? 1, receivers: overrides.receivers ?? 1 });
  const waiter = new AckWaiter();
  const flight = new Flight(plan, { sizeBytes: 1000, checksum: 1n }, progress(), waiter, new RssPeakTracker(), overrides.dropsImages ?? false);
  return { flight, waiter };
}

const ack = (seq: number, receiver?: number) => ({ sectionId: 9, seq, status: 'accepted' as const, ...(receiver === undefined ? {} : { receiver }) });

describe('Flight', () => {
  it('deals images to the clients in turn, each within its own window, and frees the slot of the client that carried the image', () => {
    const { flight } = flightOf({ clients: 2, window: 1 });
    expect(flight.clientWithRoom()).toBe(0);
    flight.stamp(0, 0);
    expect(flight.clientWithRoom()).toBe(1);
    flight.stamp(1, 1);
    expect([flight.hasRoom(), flight.clientWithRoom(), flight.outstanding]).toEqual([false, undefined, 2]);
    flight.onAck(ack(1), 0);
    expect(flight.clientWithRoom()).toBe(1);
  });

  it('holds an image\'s slot until every receiver has acknowledged it, and keeps each receiver\'s round trip', () => {
    const { flight } = flightOf({ receivers: 2 });
    flight.recordedFrom = 0;
    flight.stamp(0, 0);
    flight.onAck(ack(0), 1);
    expect([flight.hasRoom(), flight.acked, flight.completed]).toEqual([false, 0, 0]);
    // The same receiver twice counts once.
    flight.onAck(ack(0), 1);
    expect(flight.completed).toBe(0);
    flight.onAck(ack(0), 0);
    expect([flight.hasRoom(), flight.acked, flight.completed]).toEqual([true, 1, 1]);
    expect(flight.rttNs(0)[0]).toBeGreaterThan(0);
    expect(flight.rttNs(1)[0]).toBeGreaterThan(0);
    expect(flight.rttNs(1)[1]).toBeNull();
  });

  it('ignores acks of another section, of an unstamped seq, or naming no receiver of the section', () => {
    const { flight } = flightOf({});
    flight.stamp(0, 0);
    flight.onAck({ ...ack(0), sectionId: 8 }, 0);
    flight.onAck(ack(1), 0);
    flight.onAck(ack(0), 3);
    expect(flight.completed).toBe(0);
  });

  it('for a transport that drops images: a later ack settles an earlier image as lost per receiver, and a late ack takes it back', () => {
    const { flight } = flightOf({ receivers: 2, window: 4, dropsImages: true });
    for (const seq of [0, 1, 2]) flight.stamp(seq, 0);
    // Receiver 1 acknowledges image 2 first: images 0 and 1 are lost for it, not for receiver 0.
    flight.onAck(ack(2), 1);
    expect([flight.lost, flight.completed]).toEqual([2, 0]);
    for (const seq of [0, 1, 2]) flight.onAck(ack(seq), 0);
    expect([flight.completed, flight.acked]).toEqual([3, 1]);
    flight.onAck(ack(1), 1);
    expect([flight.lost, flight.completed, flight.acked]).toEqual([1, 3, 2]);
  });

  it('with several clients, settles nothing on a later ack (acks may overtake each other): only silence does', () => {
    const { flight, waiter } = flightOf({ clients: 2, window: 2, dropsImages: true });
    flight.stamp(0, 0);
    flight.stamp(1, 1);
    flight.stamp(2, 0);
    flight.onAck(ack(2), 0);
    expect(flight.lost).toBe(0);
    expect(waiter.silence?.settle()).toBe(true);
    expect([flight.lost, flight.completed]).toEqual([2, 3]);
  });

  it('gives each client\'s share of the recorded images', () => {
    const { flight } = flightOf({ clients: 2, window: 1 });
    flight.recordedFrom = 0;
    flight.stamp(0, 0);
    flight.stamp(1, 1);
    flight.onAck(ack(0), 0);
    flight.onAck(ack(1), 0);
    flight.stamp(2, 0);
    flight.onAck(ack(2), 0);
    expect([flight.nextSeq, flight.completed]).toEqual([3, 3]);
    expect(flight.clientFigures()?.map((c) => c.images)).toEqual([2, 1]);
  });
});
