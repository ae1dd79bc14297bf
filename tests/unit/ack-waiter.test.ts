import { describe, expect, it } from 'vitest';
import { AckWaiter } from '../../services/transmitter/ack-waiter.js';

// A send loop waits on the AckWaiter before every image once its window is full: a wait is settled by the ack that
// ends it, makes nothing when there is nothing to wait for, and still times out or fails as it always did.

describe('AckWaiter', () => {
  it('makes no wait when the condition holds already', () => {
    expect(
      new AckWaiter().until(
        () => true,
        1000,
        () => 'nothing',
      ),
    ).toBeUndefined();
  });

  it('resolves at the ack that makes the condition hold, not before', async () => {
    const waiter = new AckWaiter();
    let acked = 0;
    let resolved = false;
    const wait = waiter.until(
      () => acked >= 2,
      1000,
      () => 'two acks',
    )!;
    void wait.then(() => {
      resolved = true;
    });
    acked = 1;
    waiter.notify();
    await Promise.resolve();
    expect(resolved).toBe(false);
    acked = 2;
    waiter.notify();
    await wait;
    expect(resolved).toBe(true);
  });

  it('rejects with the first link failure, now and in every later wait', async () => {
    const waiter = new AckWaiter();
    const wait = waiter.until(
      () => false,
      1000,
      () => 'an ack',
    )!;
    waiter.fail(new Error('link down'));
    waiter.fail(new Error('second'));
    await expect(wait).rejects.toThrow('link down');
    await expect(
      waiter.until(
        () => true,
        1000,
        () => 'an ack',
      ),
    ).rejects.toThrow('link down');
  });

  it('times out when no ack comes for the timeout, naming what it waited for; an ack restarts the clock', async () => {
    const waiter = new AckWaiter();
    const startMs = Date.now();
    const wait = waiter.until(
      () => false,
      120,
      () => 'a free slot',
    )!;
    const nudge = setTimeout(() => waiter.notify(), 80);
    await expect(wait).rejects.toThrow(
      'no acknowledgement for 120 ms (IMAGE_TIMEOUT_MS) while waiting for a free slot',
    );
    clearTimeout(nudge);
    // 80 ms to the ack, then 120 ms without one.
    expect(Date.now() - startMs).toBeGreaterThanOrEqual(195);
  });

  it('settles a silence (a transport that drops images) and then finds the condition met', async () => {
    const waiter = new AckWaiter();
    let settled = false;
    waiter.silence = {
      afterMs: () => 30,
      settle: () => {
        const first = !settled;
        settled = true;
        return first;
      },
    };
    await waiter.until(
      () => settled,
      5000,
      () => 'the last acks',
    );
    expect(settled).toBe(true);
  });
});
