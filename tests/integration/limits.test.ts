import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transports } from '../../services/transports/index.js';
import { LocalServers } from '../helpers/harness.js';
import { runBoth } from '../helpers/in-process.js';

// Every transport at the edges of its defaults: images far over gRPC's 4 MB and Redis's usual
// sizes with several in flight, and many tiny images with a wide window. Each must arrive intact,
// or the failure must be reported with its cause; nothing may be dropped silently.

const servers = new LocalServers();
let outputDir: string;
beforeAll(async () => {
  await servers.startFor(transports);
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-limits-'));
});
afterAll(async () => {
  await servers.closeAll();
  await rm(outputDir, { recursive: true, force: true });
});

describe('every transport at its limits', () => {
  it('moves 64 MB images with WINDOW=4, all intact, but for Redis pub/sub, whose default output-buffer limit one ' +
    'such image passes: failed at connect with that reason', async () => {
    const outcome = await runBoth(outputDir, {
      TRANSPORTS: 'all',
      IMAGE_SIZE: '64MB',
      WINDOW: '4',
      IMAGE_COUNT: '4',
      // No warm-up: a fifth 64 MB image per transport would add a fifth of this file's time and assert nothing.
      WARMUP: '0',
      ...servers.env(transports),
      IMAGE_TIMEOUT_MS: '30000',
    });
    expect(outcome.report.transports.map((t) => t.transport)).toEqual(transports.map((t) => t.name));
    for (const t of outcome.report.transports) {
      if (t.transport === 'redis-pubsub') {
        expect(t.failure).toMatch(
          new RegExp(
            /images of 64000000 bytes cannot go through Redis pub\/sub at .*: one such message alone /.source +
              /can fill a subscriber's output buffer up to client-output-buffer-limit pubsub 32mb/.source,
          ),
        );
        expect(t.okCount).toBe(0);
      } else {
        // A latest-frame key (redis-kv) may write one of the 4 in flight over before it is read: superseded, not lost.
        expect(
          [t.transport, t.okCount + (t.supersededCount ?? 0), t.lostCount, t.corruptCount],
          outcome.summary,
        ).toEqual([t.transport, 4, 0, 0]);
      }
    }
  }, 240_000);

  it('moves 1,000 images of 1 KB with WINDOW=64, all intact', async () => {
    const outcome = await runBoth(outputDir, {
      TRANSPORTS: 'all',
      IMAGE_SIZE: '1KB',
      WINDOW: '64',
      IMAGE_COUNT: '1000',
      ...servers.env(transports),
    });
    expect(outcome.succeeded, outcome.summary).toBe(true);
    expect(outcome.report.transports.map((t) => t.transport)).toEqual(transports.map((t) => t.name));
    // A latest-frame key (redis-kv) delivers what it read and supersedes the rest: none lost either way.
    for (const t of outcome.report.transports)
      expect([t.transport, t.okCount + (t.supersededCount ?? 0), t.lostCount, t.corruptCount]).toEqual([
        t.transport,
        1000,
        0,
        0,
      ]);
  }, 120_000);
});
