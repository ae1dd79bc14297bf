import { describe, expect, it } from 'vitest';
import { RssPeakTracker } from '../../services/shared/resources.js';
import { AckWaiter, Flight, type RoundTripSink, type SectionProgress } from '../../services/transmitter/flight.js';
import { fixturePlan } from '../helpers/fixtures.js';

// The transmitter's bookkeeping of one section, driven by hand: which client carries the next
// image, when a slot frees with several receivers, and what is settled as lost.

const progress = (imageCount: number): SectionProgress => ({
  transport: 'tcp',
  label: 'TCP',
  repeat: 1,
  repeats: 1,
  imageCount,
  imageSizeBytes: 1000,
  sent: 0,
  acked: 0,
  startedAtMs: undefined,
});

function flightOf(overrides: {
  clients?: number;
  receivers?: number;
  window?: number;
  dropsImages?: boolean;
  supersedesImages?: boolean;
  imageCount?: number;
}) {
  const imageCount = overrides.imageCount ?? 4;
  const plan = fixturePlan({
    transport: 'tcp',
    label: 'TCP',
    imageCount,
    sectionId: 9,
    window: overrides.window ?? 1,
    clients: overrides.clients ?? 1,
    receivers: overrides.receivers ?? 1,
  });
  const waiter = new AckWaiter();
  const flight = new Flight(
    plan,
    { sizeBytes: 1000, checksum: 1n },
    progress(imageCount),
    waiter,
    new RssPeakTracker(),
    overrides.dropsImages ?? false,
    overrides.supersedesImages ?? false,
  );
  return { flight, waiter };
}

/** A round-trip sink that keeps every call: [receiver, image, rttNs, dueLagNs]. */
function roundTripLog(): { sink: RoundTripSink; calls: [number, number, number, number][] } {
  const calls: [number, number, number, number][] = [];
  return { sink: (receiver, image, rttNs, dueLagNs) => calls.push([receiver, image, rttNs, dueLagNs]), calls };
}

const ack = (seq: number, receiver?: number) => ({
  sectionId: 9,
  seq,
  status: 'accepted' as const,
  ...(receiver === undefined ? {} : { receiver }),
});

describe('Flight', () => {
  it(
    'deals images to the clients in turn, each within its own window, and frees the slot of the client that ' +
      'carried the image',
    () => {
      const { flight } = flightOf({ clients: 2, window: 1 });
      expect(flight.clientWithRoom()).toBe(0);
      flight.stamp(0, 0);
      expect(flight.clientWithRoom()).toBe(1);
      flight.stamp(1, 1);
      expect([flight.hasRoom(), flight.clientWithRoom(), flight.outstanding]).toEqual([false, undefined, 2]);
      flight.onAck(ack(1), 0);
      expect(flight.clientWithRoom()).toBe(1);
    },
  );

  it(
    "holds an image's slot until every receiver has acknowledged it, and sends each receiver's round trip on as " +
      'its ack comes',
    () => {
      const { flight } = flightOf({ receivers: 2 });
      const roundTrips = roundTripLog();
      flight.startRecording(0, roundTrips.sink);
      flight.stamp(0, 0);
      flight.onAck(ack(0), 1);
      expect([flight.hasRoom(), flight.acked, flight.completed]).toEqual([false, 0, 0]);
      // Receiver 2's round trip of image 1 leaves at once; a closed loop has no due lag (NaN).
      expect(roundTrips.calls).toEqual([[1, 1, expect.any(Number), Number.NaN]]);
      expect(roundTrips.calls[0]![2]).toBeGreaterThan(0);
      // The same receiver twice counts once, and sends no second round trip.
      flight.onAck(ack(0), 1);
      expect([flight.completed, roundTrips.calls.length]).toEqual([0, 1]);
      flight.onAck(ack(0), 0);
      expect([flight.hasRoom(), flight.acked, flight.completed]).toEqual([true, 1, 1]);
      expect(roundTrips.calls.map(([receiver, image]) => [receiver, image])).toEqual([
        [1, 1],
        [0, 1],
      ]);
      // Receiver 1's ack came last: the transmitter's own round trip of the image is to it.
      expect(roundTrips.calls[1]![2]).toBeGreaterThanOrEqual(roundTrips.calls[0]![2]);
      expect(flight.tally.rtt.summary()).toMatchObject({ count: 1, maxMs: roundTrips.calls[1]![2] / 1e6 });
      // Done with by both: nothing of it is held.
      expect(flight.heldImages).toBe(0);
      flight.destroy();
    },
  );

  it('numbers the recorded images from 1 after the warm-up, and sends no warm-up round trip', () => {
    const { flight } = flightOf({ window: 4 });
    const roundTrips = roundTripLog();
    flight.stamp(0, 0);
    flight.stamp(1, 0);
    flight.onAck(ack(0), 0);
    flight.startRecording(2, roundTrips.sink);
    flight.stamp(2, 0);
    flight.onAck(ack(1), 0);
    flight.onAck(ack(2), 0);
    expect(roundTrips.calls.map(([receiver, image]) => [receiver, image])).toEqual([[0, 1]]);
    expect([flight.recordedAcked, flight.recordedStamped, flight.tally.rtt.size]).toEqual([1, 1, 1]);
    expect(flight.meanInFlight()).toBeGreaterThan(0);
    flight.destroy();
  });

  it('holds no more images than the window, however many went: 100,000 images over two receivers', () => {
    const window = 8;
    const imageCount = 100_000;
    const { flight } = flightOf({ receivers: 2, window, imageCount });
    let roundTrips = 0;
    let lastImage = 0;
    let inOrder = true;
    flight.startRecording(0, (receiver, image) => {
      roundTrips++;
      if (receiver === 0) {
        inOrder &&= image === lastImage + 1;
        lastImage = image;
      }
    });
    let mostHeld = 0;
    let acked = 0;
    for (let seq = 0; seq < imageCount; seq++) {
      if (!flight.hasRoom()) {
        // The oldest image's acks come in, from both receivers.
        flight.onAck(ack(acked), 1);
        flight.onAck(ack(acked), 0);
        acked++;
      }
      flight.stamp(seq, flight.clientWithRoom()!);
      mostHeld = Math.max(mostHeld, flight.heldImages);
    }
    while (acked < imageCount) {
      flight.onAck(ack(acked), 0);
      flight.onAck(ack(acked), 1);
      acked++;
    }
    expect(mostHeld).toBe(window);
    expect([flight.heldImages, flight.acked, flight.recordedAcked, roundTrips, lastImage, inOrder]).toEqual([
      0,
      imageCount,
      imageCount,
      2 * imageCount,
      imageCount,
      true,
    ]);
    expect(flight.tally.rtt.size).toBe(imageCount);
    flight.destroy();
  });

  it('ignores acks of another section, of an unstamped seq, or naming no receiver of the section', () => {
    const { flight } = flightOf({});
    flight.stamp(0, 0);
    flight.onAck({ ...ack(0), sectionId: 8 }, 0);
    flight.onAck(ack(1), 0);
    flight.onAck(ack(0), 3);
    expect(flight.completed).toBe(0);
  });

  it(
    'for a transport that supersedes images: a later ack settles every earlier unacknowledged image of that ' +
      'receiver as superseded, which frees its slot, is never lost, and is counted among the recorded',
    () => {
      const { flight } = flightOf({ window: 4, supersedesImages: true, imageCount: 5 });
      flight.startRecording(0, undefined);
      for (let seq = 0; seq < 4; seq++) flight.stamp(seq, 0);
      flight.onAck(ack(0), 0);
      flight.onAck(ack(3), 0);
      // 1 and 2 were written over before they were read: done with, not acked, not lost.
      expect([flight.outstanding, flight.acked, flight.lost, flight.supersededAmongRecorded()]).toEqual([0, 2, 0, 2]);
      // An ack that comes for a superseded seq after all changes nothing.
      flight.onAck(ack(2), 0);
      expect([flight.outstanding, flight.acked, flight.supersededAmongRecorded()]).toEqual([0, 2, 2]);
      flight.stamp(4, 0);
      flight.onAck(ack(4), 0);
      expect([flight.outstanding, flight.acked, flight.supersededAmongRecorded()]).toEqual([0, 3, 2]);
      // The last ack ended the recorded images: the transmitter's cost span closed there.
      expect(flight.end).toBeDefined();
    },
  );

  it('without the trait, a later ack settles nothing: an earlier image keeps its slot until its own ack', () => {
    const { flight } = flightOf({ window: 4 });
    flight.startRecording(0, undefined);
    for (let seq = 0; seq < 3; seq++) flight.stamp(seq, 0);
    flight.onAck(ack(2), 0);
    expect([flight.outstanding, flight.acked, flight.supersededAmongRecorded()]).toEqual([2, 1, 0]);
  });

  it(
    'for a transport that drops images: a later ack settles an earlier image as lost per receiver, and a late ack ' +
      'takes it back',
    () => {
      const { flight } = flightOf({ receivers: 2, window: 4, dropsImages: true });
      for (const seq of [0, 1, 2]) flight.stamp(seq, 0);
      // Receiver 1 acknowledges image 2 first: images 0 and 1 are lost for it, not for receiver 0.
      flight.onAck(ack(2), 1);
      expect([flight.lost, flight.completed]).toEqual([2, 0]);
      for (const seq of [0, 1, 2]) flight.onAck(ack(seq), 0);
      expect([flight.completed, flight.acked]).toEqual([3, 1]);
      flight.onAck(ack(1), 1);
      expect([flight.lost, flight.completed, flight.acked]).toEqual([1, 3, 2]);
    },
  );

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

  it("gives each client's share of the recorded images", () => {
    const { flight } = flightOf({ clients: 2, window: 1 });
    flight.startRecording(0, undefined);
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
