import { describe, expect, it } from 'vitest';
import { isThisHost, processReading, USER_HZ } from '../../services/shared/process-reading.js';

// /proc/<pid>/stat as Linux writes it: the command in parentheses may hold spaces and parentheses
// of its own, so fields are counted from the last ')'. utime is field 14, stime field 15.
const STAT =
  '2974 (beam.smp (odd) x) S 1 2974 2974 0 -1 4194560 51234 0 12 0 530 254 0 0 20 0 37 0 1804 2918 30342 ' +
  '18446744073709551615 1 1 0 0 0 0 0 4096 1536 0 0 0 17 1 0 0 0 0 0';
const STATUS = 'Name:\tbeam.smp\nVmPeak:\t 2945128 kB\nVmRSS:\t  121372 kB\nRssAnon:\t  90000 kB\n';

describe('processReading', () => {
  it('takes utime and stime in ticks of USER_HZ, and VmRSS in KiB', () => {
    expect(USER_HZ).toBe(100);
    expect(processReading(STAT, STATUS)).toEqual({
      cpuUserMicros: 5_300_000,
      cpuSystemMicros: 2_540_000,
      rssBytes: 121_372 * 1024,
    });
  });

  it('reads a process without resident memory (a zombie has no VmRSS line) as 0 bytes', () => {
    expect(processReading('7 (z) Z 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 1 0 0', 'Name:\tz\n')).toEqual({
      cpuUserMicros: 30_000,
      cpuSystemMicros: 40_000,
      rssBytes: 0,
    });
  });
});

describe('isThisHost', () => {
  it('knows loopback names and addresses, and refuses names and addresses elsewhere', () => {
    for (const host of ['localhost', '127.0.0.1', '127.3.2.1', '::1', '[::1]']) expect(isThisHost(host)).toBe(true);
    // 192.0.2.0/24 is TEST-NET-1: never an address of a machine's interface.
    for (const host of ['192.0.2.1', 'mqtt', 'rabbitmq.example']) expect(isThisHost(host)).toBe(false);
  });
});
