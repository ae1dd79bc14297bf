import { describe, expect, it } from 'vitest';
import { exerciseSharedPaths } from '../../services/core/model/prewarm.js';

describe('exerciseSharedPaths', () => {
  it('runs every frame through the codecs and the record, accepted and intact, and hashes the image 20 times', () => {
    // 100 acks decoded as accepted + 20 hashes matching the checksum + 100 images ok in the record.
    expect(exerciseSharedPaths(Buffer.alloc(1000, 7), 100)).toBe(220);
  });

  it('hashes a large image fewer times: at most 64 MiB in all', () => {
    expect(exerciseSharedPaths(Buffer.alloc(16 * 1024 * 1024, 7), 10)).toBe(10 + 4 + 10);
  });
});
