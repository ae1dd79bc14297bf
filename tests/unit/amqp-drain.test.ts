import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { drainOrFail } from '../../services/transports/kit/amqp.js';

// The amqp link waits with drainOrFail when publish() returns false. An amqplib channel that closes
// never emits 'drain' (amqplib emits 'close' on every channel when its connection goes): the wait
// must end then too, and leave no listener behind on a channel that lives on.

/** Listeners drainOrFail may have left on `channel`. */
function listenersLeft(channel: EventEmitter): number {
  return ['drain', 'close', 'error'].reduce((sum, event) => sum + channel.listenerCount(event), 0);
}

describe('drainOrFail', () => {
  it("resolves on the channel's 'drain' and leaves no listener", async () => {
    const channel = new EventEmitter();
    const waiting = drainOrFail(channel);
    channel.emit('drain');
    await expect(waiting).resolves.toBeUndefined();
    expect(listenersLeft(channel)).toBe(0);
  });

  it('rejects when the channel closes before it drained, and leaves no listener', async () => {
    const channel = new EventEmitter();
    const waiting = drainOrFail(channel);
    channel.emit('close');
    await expect(waiting).rejects.toThrow('the channel closed while waiting for it to drain');
    expect(listenersLeft(channel)).toBe(0);
  });

  it("rejects with the channel's error when it errs before it drained", async () => {
    const channel = new EventEmitter();
    const waiting = drainOrFail(channel);
    const err = new Error('PRECONDITION_FAILED');
    channel.emit('error', err);
    await expect(waiting).rejects.toBe(err);
    expect(listenersLeft(channel)).toBe(0);
  });
});
