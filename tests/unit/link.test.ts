import { describe, expect, it } from 'vitest';
import { parseConfig, type TransportSpec } from '../../services/core/config/config.js';
import {
  describeShaping,
  formatBitRate,
  isLoopbackHost,
  isShaped,
  parseBitRate,
  parseDelayMs,
  parseLossPercent,
} from '../../services/core/config/link.js';
import { shapingCommands, tbfBurstBytes } from '../../scripts/lib/shaped-link.js';

const specs: TransportSpec[] = [
  {
    name: 'tcp',
    deployment: { setting: { kind: 'port', envVar: 'TCP_PORT', defaultPort: 9000 }, defaultRun: true },
    traits: {},
  },
];
const none = { rateBitsPerSecond: undefined, delayMs: undefined, lossPercent: undefined };

describe('NETWORK_RATE, NETWORK_DELAY and NETWORK_LOSS in tc units', () => {
  it('reads rates in bit, kbit, mbit and gbit (×1000), any case, within 8kbit to 100gbit', () => {
    expect(['200mbit', '200Mbit', '1.5gbit', '8kbit', '100gbit', '64000bit'].map(parseBitRate)).toEqual([
      200e6, 200e6, 1.5e9, 8000, 100e9, 64_000,
    ]);
    expect(['200', '200mbps', '200MB', '7kbit', '101gbit', '-1mbit', 'fast'].map(parseBitRate)).toEqual(
      Array(7).fill(undefined),
    );
  });

  it('reads delays in us, ms and s, above 0 and at most 60 s', () => {
    expect(['20ms', '500us', '1.5s', '60s'].map(parseDelayMs)).toEqual([20, 0.5, 1500, 60_000]);
    expect(['20', '0ms', '61s', '1m'].map(parseDelayMs)).toEqual(Array(4).fill(undefined));
  });

  it('reads losses as percentages above 0 and at most 100', () => {
    expect(['0.1%', '100%', '5 %'].map(parseLossPercent)).toEqual([0.1, 100, 5]);
    expect(['0.1', '0%', '101%'].map(parseLossPercent)).toEqual(Array(3).fill(undefined));
  });

  it('names rates in the largest whole unit and describes only what is set', () => {
    expect([200e6, 1e9, 8000, 1_500_000, 1234].map(formatBitRate)).toEqual([
      '200mbit',
      '1gbit',
      '8kbit',
      '1500kbit',
      '1234bit',
    ]);
    expect(describeShaping({ rateBitsPerSecond: 200e6, delayMs: 20, lossPercent: undefined })).toBe(
      'NETWORK_RATE=200mbit, NETWORK_DELAY=20ms',
    );
    expect([isShaped(none), isShaped({ ...none, lossPercent: 1 })]).toEqual([false, true]);
  });

  it('knows loopback addresses', () => {
    expect(['127.0.0.1', '127.1.2.3', 'localhost', '::1', '10.0.0.1', 'receiver'].map(isLoopbackHost)).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
    ]);
  });
});

describe('the link in the config', () => {
  it('is loopback, or the network to RECEIVER_HOST, when npm start shaped nothing', () => {
    const link = (env: Record<string, string>) => {
      const result = parseConfig(env, specs);
      return result.ok ? result.config.link : result.issues;
    };
    expect(link({})).toBe('loopback, not shaped');
    expect(link({ RECEIVER_HOST: 'receiver' })).toBe('the network to receiver, not shaped by image-transfer-bench');
    expect(link({ NETWORK_RATE: '200mbit', ITB_LINK: 'a veth pair, shaped' })).toBe('a veth pair, shaped');
  });

  it('refuses NETWORK_* in a service started on its own, naming each, and lets npm start take them', () => {
    const result = parseConfig({ NETWORK_RATE: '200mbit', NETWORK_LOSS: '1%' }, specs);
    expect(result.ok ? [] : result.issues.map((i) => [i.variable, i.value])).toEqual([
      ['NETWORK_RATE', '200mbit'],
      ['NETWORK_LOSS', '1%'],
    ]);
    const started = parseConfig({ NETWORK_RATE: '200mbit' }, specs, { shapesLink: true });
    expect(started.ok && started.config.network).toEqual({
      rateBitsPerSecond: 200e6,
      delayMs: undefined,
      lossPercent: undefined,
    });
  });
});

describe('the tc commands of a shaped link', () => {
  it('sizes the tbf bucket at 4 ms of the rate, at least four full-size frames', () => {
    expect([tbfBurstBytes(200e6), tbfBurstBytes(1e9), tbfBurstBytes(1e6)]).toEqual([100_000, 500_000, 6056]);
  });

  it('shapes a rate with tbf alone, in the namespace when given one', () => {
    expect(shapingCommands('itbt1', { ...none, rateBitsPerSecond: 200e6 }, 'itb-tx-1')).toEqual([
      [
        '-n',
        'itb-tx-1',
        'qdisc',
        'add',
        'dev',
        'itbt1',
        'root',
        'tbf',
        'rate',
        '200000000bit',
        'burst',
        '100000',
        'latency',
        '50ms',
      ],
    ]);
  });

  it('puts netem at the root for delay and loss, and the rate under it', () => {
    expect(shapingCommands('itbr1', { rateBitsPerSecond: 1e6, delayMs: 20, lossPercent: 0.1 })).toEqual([
      ['qdisc', 'add', 'dev', 'itbr1', 'root', 'handle', '1:', 'netem', 'delay', '20ms', 'loss', '0.1%'],
      [
        'qdisc',
        'add',
        'dev',
        'itbr1',
        'parent',
        '1:1',
        'handle',
        '10:',
        'tbf',
        'rate',
        '1000000bit',
        'burst',
        '6056',
        'latency',
        '50ms',
      ],
    ]);
    expect(shapingCommands('itbr1', none)).toEqual([]);
  });
});
