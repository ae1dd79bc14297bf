import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  brokerVariables,
  configVariables,
  DURATION_ALLOWED,
  formatConfigIssues,
  MAX_DURATION_MS,
  MIN_DURATION_MS,
  parseConfig,
  passwordVariables,
  publicConfig,
  type Config,
  type TransportSpec,
} from '../../services/core/config/config.js';
import { runInfoSchema } from '../../services/core/control/control-protocol.js';
import { readSecretFile } from '../../services/shared/entry.js';
import { projectPath } from '../../services/shared/paths.js';

const COMMAND_RATE_ALLOWED =
  'unset (no command lane), or commands per second above 0 and at most 10,000, e.g. 100 or 2.5';
const specs: TransportSpec[] = [
  {
    name: 'websocket',
    deployment: { setting: { kind: 'port', envVar: 'WEBSOCKET_PORT', defaultPort: 8081 }, defaultRun: true },
    traits: {},
  },
  {
    name: 'redis',
    deployment: {
      setting: { kind: 'url', envVar: 'REDIS_URL', schemes: ['redis', 'rediss'], example: 'redis://127.0.0.1:6379' },
      defaultRun: true,
    },
    traits: {},
  },
  {
    name: 'tcp',
    deployment: { setting: { kind: 'port', envVar: 'TCP_PORT', defaultPort: 9000 }, defaultRun: true },
    traits: {},
  },
];

const TRANSPORTS_ALLOWED =
  'all, or a comma-separated list of distinct transports from: websocket, redis, tcp; no entry empty (unset for ' +
  'the default run: websocket,redis,tcp)';
// Says the limit whatever the fault: a value that is no size at all, or one over it.
const MAX_IMAGE_SIZE_ALLOWED =
  'a whole number of bytes, or a number with B, KB, MB, GB (×1000) or KiB, MiB, GiB (×1024), e.g. 533KB, 4MB, ' +
  '1MiB, at least 1 byte and at most 2.0 GiB (2146435071 bytes)';

describe('parseConfig', () => {
  describe('TRANSPORTS with transports outside the default run', () => {
    const withExtras: TransportSpec[] = [
      ...specs.slice(0, 2),
      {
        name: 'redis-list',
        deployment: {
          setting: {
            kind: 'url',
            envVar: 'REDIS_URL',
            schemes: ['redis', 'rediss'],
            example: 'redis://127.0.0.1:6379',
          },
          defaultRun: false,
        },
        traits: {},
      },
      {
        name: 'http',
        deployment: { setting: { kind: 'port', envVar: 'HTTP_PORT', defaultPort: 8083 }, defaultRun: false },
        traits: {},
      },
      specs[2]!,
    ];
    const transportsOf = (env: Record<string, string>): readonly string[] | string => {
      const result = parseConfig(env, withExtras);
      return result.ok ? result.config.transports : formatConfigIssues(result.issues);
    };

    it('runs only the default ones when unset', () => {
      expect(transportsOf({})).toEqual(['websocket', 'redis', 'tcp']);
    });

    // Unlike the other variables, TRANSPORTS set but empty is not the default: an empty entry is
    // most often a name deleted by mistake, and running other transports than meant is a guess.
    it.each(['', '  ', ',', ' , ', 'websocket,', ',tcp', 'websocket,,tcp'])(
      'refuses TRANSPORTS=%j, an empty list or entry, saying what is allowed and how to get the default',
      (raw) => {
        expect(parseConfig({ TRANSPORTS: raw }, withExtras)).toEqual({
          ok: false,
          issues: [
            {
              variable: 'TRANSPORTS',
              value: raw,
              allowed:
                'all, or a comma-separated list of distinct transports from: websocket, redis, redis-list, ' +
                'http, tcp; no entry empty (unset for the default run: websocket,redis,tcp)',
            },
          ],
        });
      },
    );

    it('runs every one, in table order, with all (any case)', () => {
      expect(transportsOf({ TRANSPORTS: 'all' })).toEqual(['websocket', 'redis', 'redis-list', 'http', 'tcp']);
      expect(transportsOf({ TRANSPORTS: ' ALL ' })).toEqual(['websocket', 'redis', 'redis-list', 'http', 'tcp']);
    });

    it('takes a non-default one by name, and names every valid one when a name is wrong', () => {
      expect(transportsOf({ TRANSPORTS: 'http,redis-list' })).toEqual(['http', 'redis-list']);
      expect(transportsOf({ TRANSPORTS: 'all,tcp' })).toMatch(
        new RegExp(
          /TRANSPORTS.*"all,tcp".*all, or a comma-separated list of distinct transports from: /.source +
            /websocket, redis, redis-list, http, tcp/.source,
          's',
        ),
      );
    });

    it('shares one URL variable between transports that go through the same server', () => {
      const result = parseConfig({ TRANSPORTS: 'all', REDIS_URL: 'redis://10.0.0.1:6379' }, withExtras);
      expect(result.ok && result.config.urls).toEqual({
        redis: 'redis://10.0.0.1:6379',
        'redis-list': 'redis://10.0.0.1:6379',
      });
    });
  });

  it('gives every default from an empty environment', () => {
    const result = parseConfig({}, specs);
    expect(result).toEqual({
      ok: true,
      config: {
        imageCount: 10,
        durationMs: undefined,
        imageSizeBytes: undefined,
        imagePath: undefined,
        transports: ['websocket', 'redis', 'tcp'],
        window: 1,
        clients: 1,
        commandRatePerSecond: undefined,
        commandSizeBytes: 64,
        receivers: 1,
        receiverAddresses: undefined,
        warmup: 'auto',
        warmupMinMs: 500,
        warmupMaxMs: 10_000,
        repeat: 1,
        verify: true,
        profile: false,
        receiverHost: '127.0.0.1',
        bindHost: '127.0.0.1',
        controlPort: 8080,
        ports: { websocket: 8081, tcp: 9000 },
        socketPaths: {},
        urls: { redis: undefined },
        brokerPasswords: { redis: undefined },
        outputDir: './output',
        logLevel: 'info',
        maxImageBytes: 256 * 1024 * 1024,
        imageTimeoutMs: 10_000,
        connectTimeoutMs: 30_000,
        authToken: undefined,
        authTokenFile: '.itb-auth-token',
        network: { rateBitsPerSecond: undefined, delayMs: undefined, lossPercent: undefined },
        link: 'loopback, not shaped',
      },
    });
    expect(result.ok && Object.isFrozen(result.config)).toBe(true);
  });

  it('reads every variable', () => {
    const result = parseConfig(
      {
        IMAGE_COUNT: '50',
        IMAGE_SIZE: '4MB',
        TRANSPORTS: 'tcp, WebSocket',
        WINDOW: '8',
        WARMUP: '0',
        WARMUP_MIN_MS: '250',
        WARMUP_MAX_MS: '4000',
        REPEAT: '3',
        RECEIVER_HOST: 'receiver',
        BIND_HOST: '0.0.0.0',
        CONTROL_PORT: '18080',
        WEBSOCKET_PORT: '18081',
        TCP_PORT: '19000',
        REDIS_URL: 'redis://redis:6379',
        OUTPUT_DIR: '/out',
        LOG_LEVEL: 'DEBUG',
        MAX_IMAGE_SIZE: '64MiB',
        IMAGE_TIMEOUT_MS: '500',
        CONNECT_TIMEOUT_MS: '1000',
        AUTH_TOKEN: 'dGhpcyBpcyBhIHNlY3JldA==',
        AUTH_TOKEN_FILE: '/run/secret',
      },
      specs,
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.config).toMatchObject({
      imageCount: 50,
      imageSizeBytes: 4_000_000,
      transports: ['tcp', 'websocket'],
      window: 8,
      warmup: 0,
      warmupMinMs: 250,
      warmupMaxMs: 4000,
      repeat: 3,
      receiverHost: 'receiver',
      bindHost: '0.0.0.0',
      controlPort: 18080,
      ports: { websocket: 18081, tcp: 19000 },
      urls: { redis: 'redis://redis:6379' },
      outputDir: '/out',
      logLevel: 'debug',
      maxImageBytes: 64 * 1024 * 1024,
      imageTimeoutMs: 500,
      connectTimeoutMs: 1000,
      authToken: 'dGhpcyBpcyBhIHNlY3JldA==',
      authTokenFile: '/run/secret',
    });
  });

  it(
    'refuses an AUTH_TOKEN that is short or holds characters a header cannot carry, naming what is allowed and ' +
      'never showing the value',
    () => {
      for (const token of ['short', 'has spaces in the middle', 'quote"inside-0123456789', 'x'.repeat(257)]) {
        const result = parseConfig({ AUTH_TOKEN: token }, specs);
        expect(result.ok, token).toBe(false);
        if (result.ok) continue;
        expect(result.issues).toEqual([
          { variable: 'AUTH_TOKEN', value: '***', allowed: expect.stringContaining('16 to 256 characters') },
        ]);
      }
      expect(parseConfig({ AUTH_TOKEN: 'a'.repeat(16) }, specs).ok).toBe(true);
    },
  );

  it('keeps the secret out of the configuration reports show', () => {
    const result = parseConfig({ AUTH_TOKEN: 'dGhpcyBpcyBhIHNlY3JldA==' }, specs);
    if (!result.ok) throw new Error('config refused');
    const shown = publicConfig(result.config);
    expect(shown).not.toHaveProperty('authToken');
    expect(JSON.stringify(shown)).not.toContain('dGhpcyBpcyBhIHNlY3JldA');
    expect(shown.authTokenFile).toBe('.itb-auth-token');
  });

  it('reads CLIENTS from 1 to 1,000, at most IMAGE_COUNT, and within what each transport in the run can take', () => {
    const clients = (env: Record<string, string>, withSpecs: TransportSpec[] = specs) => {
      const result = parseConfig(env, withSpecs);
      return result.ok ? result.config.clients : result.issues;
    };
    expect([
      clients({}),
      clients({ CLIENTS: '200', IMAGE_COUNT: '200' }),
      clients({ CLIENTS: '1000', IMAGE_COUNT: '5000' }),
    ]).toEqual([1, 200, 1000]);
    expect(clients({ CLIENTS: '1001', IMAGE_COUNT: '5000' })).toEqual([
      { variable: 'CLIENTS', value: '1001', allowed: 'a whole number from 1 to 1,000' },
    ]);
    expect(clients({ CLIENTS: '0' })).toEqual([
      { variable: 'CLIENTS', value: '0', allowed: 'a whole number from 1 to 1,000' },
    ]);
    expect(clients({ CLIENTS: '50' })).toEqual([
      {
        variable: 'CLIENTS',
        value: '50',
        allowed: 'at most IMAGE_COUNT (10): every client sends at least one recorded image',
      },
    ]);
    const single: TransportSpec[] = [
      ...specs,
      {
        name: 'push',
        deployment: { setting: { kind: 'port', envVar: 'PUSH_PORT', defaultPort: 8082 }, defaultRun: false },
        traits: { maxClients: { clients: 1, why: 'it dials back once' } },
      },
    ];
    expect(clients({ CLIENTS: '2', TRANSPORTS: 'tcp,push' }, single)).toEqual([
      { variable: 'CLIENTS', value: '2', allowed: 'at most 1 with push in TRANSPORTS (it dials back once)' },
    ]);
    expect(clients({ CLIENTS: '2', TRANSPORTS: 'tcp' }, single)).toBe(2);
  });

  it(
    'reads RECEIVERS from 1 to 32, within what each transport in the run can take, and the addresses npm start ' +
      'lists',
    () => {
      const parsed = (env: Record<string, string>, withSpecs: TransportSpec[] = specs) => {
        const result = parseConfig(env, withSpecs);
        return result.ok ? [result.config.receivers, result.config.receiverAddresses] : result.issues;
      };
      expect(parsed({})).toEqual([1, undefined]);
      expect(parsed({ RECEIVERS: '32' })).toEqual([32, undefined]);
      expect(parsed({ RECEIVERS: '33' })).toEqual([
        { variable: 'RECEIVERS', value: '33', allowed: 'a whole number from 1 to 32' },
      ]);
      expect(parsed({ RECEIVERS: '2', ITB_RECEIVERS: '127.0.0.1:8080,[::1]:9090' })).toEqual([
        2,
        [
          { host: '127.0.0.1', controlPort: 8080 },
          { host: '::1', controlPort: 9090 },
        ],
      ]);
      expect(parsed({ RECEIVERS: '3', ITB_RECEIVERS: '127.0.0.1:8080,127.0.0.1:9090' })).toEqual([
        {
          variable: 'ITB_RECEIVERS',
          value: '127.0.0.1:8080,127.0.0.1:9090',
          allowed: 'host:port of each of the RECEIVERS (3) receivers, comma-separated (npm start sets it)',
        },
      ]);
      const single: TransportSpec[] = [
        ...specs,
        {
          name: 'push',
          deployment: { setting: { kind: 'port', envVar: 'PUSH_PORT', defaultPort: 8082 }, defaultRun: false },
          traits: { maxReceivers: { receivers: 1, why: 'they would dial one port' } },
        },
      ];
      expect(parsed({ RECEIVERS: '2', TRANSPORTS: 'tcp,push' }, single)).toEqual([
        { variable: 'RECEIVERS', value: '2', allowed: 'at most 1 with push in TRANSPORTS (they would dial one port)' },
      ]);
    },
  );

  it('reads COMMAND_RATE (off by default) and COMMAND_SIZE (64 B by default); refuses it with RECEIVERS > 1', () => {
    const lane = (env: Record<string, string>) => {
      const result = parseConfig(env, specs);
      return result.ok ? [result.config.commandRatePerSecond, result.config.commandSizeBytes] : result.issues;
    };
    expect([lane({}), lane({ COMMAND_RATE: '2.5', COMMAND_SIZE: '1KiB' }), lane({ COMMAND_RATE: '10000' })]).toEqual([
      [undefined, 64],
      [2.5, 1024],
      [10_000, 64],
    ]);
    expect(lane({ COMMAND_RATE: '100', RECEIVERS: '2' })).toEqual([
      {
        variable: 'COMMAND_RATE',
        value: '100',
        allowed: 'unset when RECEIVERS is above 1 (RECEIVERS=2): the command lane times one receiver',
      },
    ]);
  });

  it('gives RATE a deadline of one frame interval and 1 % by default, and takes DEADLINE_MS and its share', () => {
    const deadline = (env: Record<string, string>) => {
      const result = parseConfig(env, specs);
      return result.ok ? result.config.deadline : result.issues;
    };
    expect([
      deadline({}),
      deadline({ RATE: '30' }),
      deadline({ RATE: '30', DEADLINE_MS: '100', DEADLINE_MISS_PERCENT: '0.5' }),
      deadline({ RATE: '60', DEADLINE_MS: '16.7', DEADLINE_MISS_PERCENT: '5%' }),
      deadline({ RATE: '30', DEADLINE_MISS_PERCENT: '0' }),
      deadline({ RATE: '30', DEADLINE_MS: '', DEADLINE_MISS_PERCENT: '' }),
    ]).toEqual([
      undefined,
      { deadlineMs: 1000 / 30, allowedLateShare: 0.01 },
      { deadlineMs: 100, allowedLateShare: 0.005 },
      { deadlineMs: 16.7, allowedLateShare: 0.05 },
      { deadlineMs: 1000 / 30, allowedLateShare: 0 },
      { deadlineMs: 1000 / 30, allowedLateShare: 0.01 },
    ]);
  });

  it('refuses a deadline without RATE, and one out of range, each with what is allowed', () => {
    const result = parseConfig({ DEADLINE_MS: '33', DEADLINE_MISS_PERCENT: '2' }, specs);
    const without = "unset when RATE is unset: a deadline counts from each frame's due time, which only RATE gives";
    expect(result.ok ? [] : result.issues).toEqual([
      { variable: 'DEADLINE_MS', value: '33', allowed: without },
      { variable: 'DEADLINE_MISS_PERCENT', value: '2', allowed: without },
    ]);
    const bad = parseConfig({ RATE: '30', DEADLINE_MS: '0', DEADLINE_MISS_PERCENT: '101' }, specs);
    expect(bad.ok ? [] : bad.issues.map((i) => [i.variable, i.value])).toEqual([
      ['DEADLINE_MS', '0'],
      ['DEADLINE_MISS_PERCENT', '101'],
    ]);
  });

  it('reads RATE as images per second, fractions and the maximum included; unset is a closed loop', () => {
    const rate = (raw: string | undefined) => {
      const result = parseConfig({ RATE: raw }, specs);
      return result.ok ? result.config.ratePerSecond : result.issues;
    };
    expect([rate(undefined), rate(''), rate('100'), rate('2.5'), rate('0.001'), rate('1000000')]).toEqual([
      undefined,
      undefined,
      100,
      2.5,
      0.001,
      1_000_000,
    ]);
  });

  describe('DURATION', () => {
    const parsed = (env: Record<string, string>) => {
      const result = parseConfig(env, specs);
      return result.ok ? result.config : result.issues;
    };

    it('is unset by default: a section runs IMAGE_COUNT images', () => {
      expect(parsed({})).toMatchObject({ durationMs: undefined, imageCount: 10 });
      expect(parsed({ DURATION: '  ' })).toMatchObject({ durationMs: undefined });
    });

    it.each([
      ['1s', 1000],
      ['30s', 30_000],
      ['1500ms', 1500],
      ['2m30s', 150_000],
      ['10m', 600_000],
      ['1h30m', 5_400_000],
      [' 1h ', 3_600_000],
      ['168h', 604_800_000],
    ])('reads DURATION=%j as %d ms', (raw, durationMs) => {
      expect(parsed({ DURATION: raw })).toMatchObject({ durationMs });
    });

    it.each(['5', '999ms', '0s', '168h1ms', '169h', '1.5h', '1h 30m', '30S', '-30s', 'forever'])(
      'refuses DURATION=%j: units, from 1 s to 7 days',
      (raw) => {
        expect(parsed({ DURATION: raw })).toEqual([{ variable: 'DURATION', value: raw, allowed: DURATION_ALLOWED }]);
      },
    );

    it('says what is allowed: units (a bare number has none), the grammar, and both bounds', () => {
      expect(DURATION_ALLOWED).toBe(
        'a time with units (a bare number has none): whole numbers with h, m, s or ms, largest first, e.g. 30s, ' +
          '10m, 1h30m, 2m30s, 1500ms; from 1s (the figures are per second) to 7 days (168h)',
      );
    });

    it('refuses DURATION together with IMAGE_COUNT, naming both and their values', () => {
      expect(parsed({ DURATION: '30s', IMAGE_COUNT: '10' })).toEqual([
        {
          variable: 'IMAGE_COUNT',
          value: '10',
          allowed:
            'unset when DURATION is set (DURATION="30s"): a section runs either IMAGE_COUNT images or for ' +
            'DURATION, so set one of the two',
        },
      ]);
      // An empty IMAGE_COUNT is unset, as in .env.example.
      expect(parsed({ DURATION: '30s', IMAGE_COUNT: '' })).toMatchObject({ durationMs: 30_000 });
    });

    it('reports a DURATION without units and the clash with IMAGE_COUNT at once, with every other bad variable', () => {
      const result = parseConfig({ DURATION: '5', IMAGE_COUNT: '3', WINDOW: '0' }, specs);
      expect(result.ok).toBe(false);
      if (result.ok) return;
      expect(result.issues.map((i) => i.variable).sort()).toEqual(['DURATION', 'IMAGE_COUNT', 'WINDOW']);
      const message = formatConfigIssues(result.issues);
      expect(message.split('\n')[0]).toBe('Invalid configuration (3 bad variables):');
      expect(message).toContain('  DURATION="5": expected a time with units (a bare number has none)');
      expect(message).toContain(
        '  IMAGE_COUNT="3": expected unset when DURATION is set (DURATION="5"): a section runs either ' +
          'IMAGE_COUNT images or for DURATION',
      );
    });

    it('lets CLIENTS pass the default IMAGE_COUNT, which a section under DURATION does not count to', () => {
      expect(parsed({ DURATION: '1m', CLIENTS: '50' })).toMatchObject({ durationMs: 60_000, clients: 50 });
    });

    it("goes into the public config, which results.json's schema and the control protocol's run schema accept", () => {
      const result = parseConfig({ DURATION: '1h30m' }, specs);
      if (!result.ok) throw new Error('config refused');
      const shown = JSON.parse(JSON.stringify(publicConfig(result.config))) as Record<string, unknown>;
      expect(shown.durationMs).toBe(5_400_000);
      const resultsSchema = JSON.parse(
        readFileSync(projectPath('services', 'core', 'report', 'results.schema.json'), 'utf8'),
      ) as { definitions: { config: object } };
      const ajv = new Ajv({ allErrors: true });
      const resultsConfig = ajv.compile(resultsSchema.definitions.config);
      const runConfig = ajv.compile(runInfoSchema.properties.config);
      for (const validate of [resultsConfig, runConfig]) {
        expect(validate(shown), JSON.stringify(validate.errors)).toBe(true);
        // Absent when unset (JSON drops undefined), never anything but milliseconds.
        const { durationMs: _d, ...unset } = shown;
        expect(validate(unset)).toBe(true);
        for (const bad of ['1h30m', null, MIN_DURATION_MS - 1, MAX_DURATION_MS + 1, 1500.5])
          expect(validate({ ...shown, durationMs: bad }), String(bad)).toBe(false);
      }
    });
  });

  it.each([
    ['1', true],
    ['0', false],
    ['TRUE', true],
    ['false', false],
    ['', false],
  ])('reads PROFILE=%j as %s', (value, profile) => {
    const result = parseConfig({ PROFILE: value }, specs);
    expect(result.ok && result.config.profile).toBe(profile);
  });

  it('treats empty values as unset, as a .env file with blank lines would give', () => {
    const result = parseConfig({ IMAGE_COUNT: '', REDIS_URL: ' ' }, specs);
    expect(result.ok && result.config.imageCount).toBe(10);
  });

  it.each([
    ['IMAGE_COUNT', '0', 'a whole number from 1 to 1,000,000,000'],
    ['IMAGE_COUNT', '-3', 'a whole number from 1 to 1,000,000,000'],
    ['IMAGE_COUNT', '2.5', 'a whole number from 1 to 1,000,000,000'],
    [
      'IMAGE_SIZE',
      'abc',
      'a whole number of bytes, or a number with B, KB, MB, GB (×1000) or KiB, MiB, GiB (×1024), e.g. 533KB, ' +
        '4MB, 1MiB, at least 1 byte',
    ],
    ['IMAGE_SIZE', '300MiB', 'at most MAX_IMAGE_SIZE, 268435456 bytes (256.0 MiB)'],
    ['IMAGE_SIZE', '10', 'at least 84 bytes, the smallest valid PNG it can generate'],
    ['TRANSPORTS', 'websocket,carrier-pigeon', TRANSPORTS_ALLOWED],
    ['TRANSPORTS', 'tcp,tcp', TRANSPORTS_ALLOWED],
    ['WINDOW', '0', 'a whole number from 1 to 1,024'],
    ['RATE', '0', 'unset (a closed loop), or images per second above 0 and at most 1,000,000, e.g. 100 or 2.5'],
    ['RATE', '-5', 'unset (a closed loop), or images per second above 0 and at most 1,000,000, e.g. 100 or 2.5'],
    ['RATE', '100/s', 'unset (a closed loop), or images per second above 0 and at most 1,000,000, e.g. 100 or 2.5'],
    ['RATE', '1000001', 'unset (a closed loop), or images per second above 0 and at most 1,000,000, e.g. 100 or 2.5'],
    ['COMMAND_RATE', '0', COMMAND_RATE_ALLOWED],
    ['COMMAND_RATE', '10001', COMMAND_RATE_ALLOWED],
    ['COMMAND_RATE', 'fast', COMMAND_RATE_ALLOWED],
    [
      'COMMAND_SIZE',
      '65537',
      'a whole number of bytes, or a number with B, KB, MB, GB (×1000) or KiB, MiB, GiB (×1024), e.g. 533KB, ' +
        '4MB, 1MiB, at least 1 byte and at most 64.0 KiB (65536 bytes)',
    ],
    ['WARMUP', '-1', 'auto, or a whole number of images from 0 to 100,000 (0: a cold run on purpose)'],
    ['WARMUP_MIN_MS', '-1', 'a whole number from 0 to 600,000'],
    ['WARMUP_MAX_MS', '0', 'a whole number from 1 to 3,600,000'],
    ['REPEAT', '0', 'a whole number from 1 to 100'],
    ['VERIFY', 'maybe', 'true or false'],
    ['VERIFY', 'constructor', 'true or false'],
    ['PROFILE', '2', '1 or 0 (or true or false)'],
    ['PROFILE', 'on', '1 or 0 (or true or false)'],
    ['TCP_PORT', '70000', 'a whole number from 1 to 65,535'],
    ['CONTROL_PORT', 'http', 'a whole number from 1 to 65,535'],
    ['REDIS_URL', 'localhost:6379', 'a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379'],
    ['LOG_LEVEL', 'loud', 'one of fatal, error, warn, info, debug, trace, silent'],
    ['MAX_IMAGE_SIZE', '3GiB', MAX_IMAGE_SIZE_ALLOWED],
    ['MAX_IMAGE_SIZE', '2146435072', MAX_IMAGE_SIZE_ALLOWED],
    ['MAX_IMAGE_SIZE', 'huge', MAX_IMAGE_SIZE_ALLOWED],
    ['IMAGE_TIMEOUT_MS', '0', 'a whole number from 1 to 3,600,000'],
    ['CONNECT_TIMEOUT_MS', 'soon', 'a whole number from 1 to 3,600,000'],
  ])('rejects %s=%j: expected %s', (variable, value, allowed) => {
    expect(parseConfig({ [variable]: value }, specs)).toEqual({ ok: false, issues: [{ variable, value, allowed }] });
  });

  describe('WARMUP, WARMUP_MIN_MS and WARMUP_MAX_MS', () => {
    const WARMUP_ALLOWED = 'auto, or a whole number of images from 0 to 100,000 (0: a cold run on purpose)';
    const parsed = (env: Record<string, string>) => {
      const result = parseConfig(env, specs);
      if (!result.ok) throw new Error(`config refused: ${JSON.stringify(result.issues)}`);
      return result.config;
    };

    it.each([
      ['unset', {}],
      ['auto', { WARMUP: 'auto' }],
      ['AUTO', { WARMUP: 'AUTO' }],
      ['Auto', { WARMUP: 'Auto' }],
      ['empty', { WARMUP: '' }],
    ])('warms up until steady when WARMUP is %s', (_name, env) => {
      expect(parsed(env).warmup).toBe('auto');
    });

    it.each([
      ['0', 0],
      ['250', 250],
      ['100000', 100_000],
    ])('takes WARMUP=%s as exactly %d warm-up images', (raw, images) => {
      expect(parsed({ WARMUP: raw }).warmup).toBe(images);
    });

    it.each(['-1', '1.5', '100001', 'soon', '1e3', '0x10', ' auto-ish'])(
      'rejects WARMUP=%j, naming the variable and what it allows',
      (raw) => {
        expect(parseConfig({ WARMUP: raw }, specs)).toEqual({
          ok: false,
          issues: [{ variable: 'WARMUP', value: raw, allowed: WARMUP_ALLOWED }],
        });
      },
    );

    it('defaults WARMUP_MIN_MS to 500 and WARMUP_MAX_MS to 10000 ms, and reads each boundary', () => {
      expect(parsed({})).toMatchObject({ warmupMinMs: 500, warmupMaxMs: 10_000 });
      expect(parsed({ WARMUP_MIN_MS: '0', WARMUP_MAX_MS: '1' })).toMatchObject({ warmupMinMs: 0, warmupMaxMs: 1 });
      expect(parsed({ WARMUP_MIN_MS: '600000', WARMUP_MAX_MS: '3600000' })).toMatchObject({
        warmupMinMs: 600_000,
        warmupMaxMs: 3_600_000,
      });
      // Equal is allowed: the warm-up then ends at that time, steady or not.
      expect(parsed({ WARMUP_MIN_MS: '2000', WARMUP_MAX_MS: '2000' })).toMatchObject({
        warmupMinMs: 2000,
        warmupMaxMs: 2000,
      });
    });

    it.each([
      ['WARMUP_MIN_MS', '600001', 'a whole number from 0 to 600,000'],
      ['WARMUP_MIN_MS', '1.5', 'a whole number from 0 to 600,000'],
      ['WARMUP_MAX_MS', '3600001', 'a whole number from 1 to 3,600,000'],
      ['WARMUP_MAX_MS', 'soon', 'a whole number from 1 to 3,600,000'],
    ])('rejects %s=%j: expected %s', (variable, value, allowed) => {
      expect(parseConfig({ [variable]: value }, specs)).toEqual({ ok: false, issues: [{ variable, value, allowed }] });
    });

    it('reports WARMUP_MIN_MS above WARMUP_MAX_MS on WARMUP_MIN_MS', () => {
      expect(parseConfig({ WARMUP_MIN_MS: '2001', WARMUP_MAX_MS: '2000' }, specs)).toEqual({
        ok: false,
        issues: [{ variable: 'WARMUP_MIN_MS', value: '2001', allowed: 'at most WARMUP_MAX_MS (2000)' }],
      });
      // Against the default maximum too.
      expect(parseConfig({ WARMUP_MIN_MS: '10001' }, specs)).toEqual({
        ok: false,
        issues: [{ variable: 'WARMUP_MIN_MS', value: '10001', allowed: 'at most WARMUP_MAX_MS (10000)' }],
      });
    });

    it('judges WARMUP_MIN_MS against the default maximum when WARMUP_MAX_MS is itself invalid', () => {
      const result = parseConfig({ WARMUP_MIN_MS: '5000', WARMUP_MAX_MS: '0' }, specs);
      expect(result.ok ? [] : result.issues).toEqual([
        { variable: 'WARMUP_MAX_MS', value: '0', allowed: 'a whole number from 1 to 3,600,000' },
      ]);
    });
  });

  it('rejects a port used twice, naming both variables', () => {
    expect(parseConfig({ TCP_PORT: '8081' }, specs)).toEqual({
      ok: false,
      issues: [
        { variable: 'TCP_PORT', value: '8081', allowed: 'a port no other variable uses (WEBSOCKET_PORT is 8081 too)' },
      ],
    });
  });

  describe('a transport that binds the port after its own too (nextPorts)', () => {
    const withNext: TransportSpec[] = [
      ...specs,
      {
        name: 'pubsub',
        deployment: {
          setting: { kind: 'port', envVar: 'PUBSUB_PORT', defaultPort: 5556, nextPorts: 1 },
          defaultRun: false,
        },
        traits: {},
      },
    ];

    it('leaves room for it below 65,536', () => {
      expect(parseConfig({ PUBSUB_PORT: '65535' }, withNext)).toEqual({
        ok: false,
        issues: [{ variable: 'PUBSUB_PORT', value: '65535', allowed: 'a whole number from 1 to 65,534' }],
      });
      expect(parseConfig({ PUBSUB_PORT: '65534' }, withNext).ok).toBe(true);
    });

    it('refuses a next port another variable has, in either order', () => {
      expect(parseConfig({ PUBSUB_PORT: '9000' }, withNext)).toEqual({
        ok: false,
        issues: [
          { variable: 'PUBSUB_PORT', value: '9000', allowed: 'a port no other variable uses (TCP_PORT is 9000 too)' },
        ],
      });
      expect(parseConfig({ PUBSUB_PORT: '8999' }, withNext)).toEqual({
        ok: false,
        issues: [
          {
            variable: 'PUBSUB_PORT',
            value: '8999',
            allowed: 'a port no other variable uses (it binds PUBSUB_PORT + 1 as well, 9000, and TCP_PORT is 9000)',
          },
        ],
      });
      const later: TransportSpec[] = [withNext[3]!, ...specs];
      expect(parseConfig({ PUBSUB_PORT: '8080', WEBSOCKET_PORT: '8081' }, later)).toEqual({
        ok: false,
        issues: [
          {
            variable: 'PUBSUB_PORT',
            value: '8080',
            allowed: 'a port no other variable uses (CONTROL_PORT is 8080 too)',
          },
        ],
      });
      expect(parseConfig({ PUBSUB_PORT: '7000', WEBSOCKET_PORT: '7001' }, later)).toEqual({
        ok: false,
        issues: [
          {
            variable: 'WEBSOCKET_PORT',
            value: '7001',
            allowed: 'a port no other variable uses (PUBSUB_PORT + 1 is 7001 too)',
          },
        ],
      });
    });
  });

  it('rejects IMAGE_PATH together with IMAGE_SIZE', () => {
    const result = parseConfig({ IMAGE_SIZE: '1MB', IMAGE_PATH: '/tmp/x.png' }, specs);
    expect(result.ok ? [] : result.issues.map((i) => i.variable)).toEqual(['IMAGE_PATH']);
  });

  it('reports every bad variable at once, and formats them one per line', () => {
    const result = parseConfig(
      { IMAGE_COUNT: '0', IMAGE_SIZE: 'abc', WINDOW: '0', TRANSPORTS: 'ftp', TCP_PORT: '-1' },
      specs,
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.issues.map((i) => i.variable).sort()).toEqual([
      'IMAGE_COUNT',
      'IMAGE_SIZE',
      'TCP_PORT',
      'TRANSPORTS',
      'WINDOW',
    ]);
    const message = formatConfigIssues(result.issues);
    expect(message.split('\n')[0]).toBe('Invalid configuration (5 bad variables):');
    expect(message).toContain('  IMAGE_SIZE="abc": expected a whole number of bytes');
    expect(message).toContain('  WINDOW="0": expected a whole number from 1 to 1,024');
  });
});

describe('broker passwords', () => {
  const withNats: TransportSpec[] = [
    ...specs,
    {
      name: 'nats',
      deployment: {
        setting: { kind: 'url', envVar: 'NATS_URL', schemes: ['nats'], example: 'nats://127.0.0.1:4222' },
        defaultRun: false,
      },
      traits: {},
    },
  ];
  const PASSWORD = 'S3cretRedisPw';
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'itb-config-password-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const parsed = (env: Record<string, string>) => parseConfig(env, withNats, { readSecretFile });
  const issuesOf = (env: Record<string, string>) => {
    const result = parsed(env);
    if (result.ok) throw new Error('config accepted');
    // Whatever is wrong, the message printed on stderr never holds the password.
    expect(formatConfigIssues(result.issues)).not.toContain(PASSWORD);
    return result.issues;
  };

  it('names the two variables after the URL setting, for any broker', () => {
    expect(passwordVariables('REDIS_URL')).toEqual({ password: 'REDIS_PASSWORD', file: 'REDIS_PASSWORD_FILE' });
    expect(passwordVariables('NATS_URL')).toEqual({ password: 'NATS_PASSWORD', file: 'NATS_PASSWORD_FILE' });
    expect(configVariables(withNats)).toEqual(
      expect.arrayContaining(['REDIS_PASSWORD', 'REDIS_PASSWORD_FILE', 'NATS_PASSWORD', 'NATS_PASSWORD_FILE']),
    );
    expect(brokerVariables(withNats)).toEqual([
      'REDIS_URL',
      'REDIS_PASSWORD',
      'REDIS_PASSWORD_FILE',
      'NATS_URL',
      'NATS_PASSWORD',
      'NATS_PASSWORD_FILE',
    ]);
  });

  it('takes REDIS_PASSWORD as given, for the transports of REDIS_URL only', () => {
    const result = parsed({ REDIS_URL: 'redis://alice@host:6379', REDIS_PASSWORD: ` ${PASSWORD} ` });
    expect(result.ok && result.config.brokerPasswords).toEqual({ redis: ` ${PASSWORD} `, nats: undefined });
  });

  it('reads REDIS_PASSWORD_FILE, its trailing newline dropped', async () => {
    const file = path.join(dir, 'redis-password');
    await writeFile(file, `${PASSWORD}\n`);
    const result = parsed({
      REDIS_URL: 'redis://host:6379',
      REDIS_PASSWORD_FILE: file,
      NATS_URL: 'nats://host:4222',
      NATS_PASSWORD: 'n4ts',
    });
    expect(result.ok && result.config.brokerPasswords).toEqual({ redis: PASSWORD, nats: 'n4ts' });
  });

  it('refuses both variables set, naming the file variable', async () => {
    const file = path.join(dir, 'both');
    await writeFile(file, PASSWORD);
    expect(issuesOf({ REDIS_URL: 'redis://host:6379', REDIS_PASSWORD: PASSWORD, REDIS_PASSWORD_FILE: file })).toEqual([
      {
        variable: 'REDIS_PASSWORD_FILE',
        value: file,
        allowed: 'unset when REDIS_PASSWORD is set: the password comes from one of the two',
      },
    ]);
  });

  it('refuses a file it cannot read, an empty one and one that is not a regular file, with the reason', async () => {
    const empty = path.join(dir, 'empty');
    await writeFile(empty, '\n');
    const missing = path.join(dir, 'missing');
    for (const [file, reason] of [
      [missing, `ENOENT: no such file or directory, stat '${missing}'`],
      [empty, 'the file is empty'],
      [dir, `${dir} is not a regular file`],
    ] as const) {
      expect(issuesOf({ REDIS_URL: 'redis://host:6379', REDIS_PASSWORD_FILE: file }), file).toEqual([
        {
          variable: 'REDIS_PASSWORD_FILE',
          value: file,
          allowed: `a readable file holding the password of the server REDIS_URL names (${reason})`,
        },
      ]);
    }
  });

  it('refuses a password also in the URL, and one with no URL, never printing either', () => {
    expect(issuesOf({ REDIS_URL: `redis://:${PASSWORD}@host:6379`, REDIS_PASSWORD: PASSWORD })).toEqual([
      {
        variable: 'REDIS_URL',
        value: 'redis://***@host:6379',
        allowed: 'a URL without a password when REDIS_PASSWORD is set: the password comes from one place',
      },
    ]);
    expect(issuesOf({ NATS_PASSWORD: PASSWORD })).toEqual([
      {
        variable: 'NATS_PASSWORD',
        value: '***',
        allowed:
          'unset while NATS_URL is unset: it is the password of the server NATS_URL names (a private server npm ' +
          'start runs has none)',
      },
    ]);
  });

  it('shows a refused URL without its credentials', () => {
    const issues = issuesOf({ REDIS_URL: `http://:${PASSWORD}@host:6379` });
    expect(issues).toEqual([
      {
        variable: 'REDIS_URL',
        value: 'http://***@host:6379',
        allowed: expect.stringContaining('redis:// or rediss:// URL'),
      },
    ]);
  });

  it('keeps passwords out of the configuration reports show, and every URL there redacted', () => {
    const result = parsed({
      TRANSPORTS: 'redis,nats',
      REDIS_URL: `redis://:${PASSWORD}@host:6379`,
      NATS_URL: 'nats://bob@nats:4222',
      NATS_PASSWORD: 'n4tsPw',
    });
    if (!result.ok) throw new Error(formatConfigIssues(result.issues));
    // The config the services connect with keeps them.
    expect(result.config.urls).toEqual({ redis: `redis://:${PASSWORD}@host:6379`, nats: 'nats://bob@nats:4222' });
    const shown = publicConfig(result.config);
    expect(shown).not.toHaveProperty('brokerPasswords');
    expect(shown.urls).toEqual({ redis: 'redis://***@host:6379', nats: 'nats://***@nats:4222' });
    expect(JSON.stringify(shown)).not.toMatch(/S3cretRedisPw|n4tsPw/);
  });
});

describe('publicConfig on an announced config', () => {
  it(
    'takes one without urls, or with other than strings in them, as the open control protocol may carry, without ' +
      'throwing',
    () => {
      const announced = (urls: unknown) => publicConfig({ imageCount: 3, urls } as unknown as Config);
      expect(announced(undefined).urls).toEqual({});
      expect(announced(null).urls).toEqual({});
      expect(announced({ redis: 'redis://u:pw@h:6379', odd: 42 }).urls).toEqual({
        redis: 'redis://***@h:6379',
        odd: undefined,
      });
    },
  );
});

describe("parseConfig: SOCKET_DIR, the same-host transports' directory", () => {
  const withSockets: TransportSpec[] = [
    ...specs,
    {
      name: 'unix',
      deployment: { setting: { kind: 'socket', envVar: 'SOCKET_DIR', fileName: 'unix.sock' }, defaultRun: false },
      traits: {},
    },
    {
      name: 'zeromq-ipc',
      deployment: { setting: { kind: 'socket', envVar: 'SOCKET_DIR', fileName: 'zeromq-ipc.sock' }, defaultRun: false },
      traits: {},
    },
  ];
  const parsed = (env: Record<string, string>) => parseConfig(env, withSockets);

  it('puts each socket file in SOCKET_DIR, /tmp/itb-sockets by default, normalised', () => {
    const byDefault = parsed({});
    expect(byDefault.ok && byDefault.config.socketPaths).toEqual({
      unix: '/tmp/itb-sockets/unix.sock',
      'zeromq-ipc': '/tmp/itb-sockets/zeromq-ipc.sock',
    });
    const given = parsed({ SOCKET_DIR: '/run//itb/' });
    expect(given.ok && given.config.socketPaths.unix).toBe('/run/itb/unix.sock');
  });

  it('refuses a relative directory and one too long for its longest socket file, saying how long it may be', () => {
    // 107 bytes a socket path may have, less "/zeromq-ipc.sock" (16): 91.
    const allowed =
      'an absolute directory path of at most 91 bytes (its socket files, e.g. zeromq-ipc.sock, must fit the 107 ' +
      'bytes a Unix-domain socket path may have)';
    const longest = `/${'d'.repeat(90)}`;
    expect(parsed({ SOCKET_DIR: longest }).ok).toBe(true);
    for (const value of ['sockets', `${longest}x`]) {
      const result = parsed({ SOCKET_DIR: value });
      expect(result.ok ? [] : result.issues).toEqual([{ variable: 'SOCKET_DIR', value, allowed }]);
    }
  });

  it('refuses a same-host transport under a shaped link: the shaping never reaches its socket', () => {
    const result = parseConfig({ TRANSPORTS: 'tcp,unix', NETWORK_RATE: '100mbit' }, withSockets, { shapesLink: true });
    expect(result.ok ? [] : result.issues).toEqual([
      {
        variable: 'TRANSPORTS',
        value: 'tcp,unix',
        allowed:
          'transports a shaped link can carry: unix goes through a socket file on this host, never the network ' +
          'NETWORK_RATE, NETWORK_DELAY or NETWORK_LOSS shape (leave them out, or the shaping)',
      },
    ]);
    expect(parseConfig({ TRANSPORTS: 'tcp', NETWORK_RATE: '100mbit' }, withSockets, { shapesLink: true }).ok).toBe(
      true,
    );
  });
});

describe('parseConfig: a bad variable never hides one that depends on it', () => {
  // Each cross-variable rule, with the variable it relates to bad too: both are named, the rule
  // judged against the bad one's default (what runs once it is unset), and the message says so.
  const issuesOf = (env: Record<string, string>, withSpecs: TransportSpec[] = specs) => {
    const result = parseConfig(env, withSpecs);
    return result.ok ? [] : result.issues;
  };
  const WHOLE = (min: string, max: string) => `a whole number from ${min} to ${max}`;

  it('IMAGE_SIZE above the default MAX_IMAGE_SIZE, with MAX_IMAGE_SIZE no size or over its limit', () => {
    for (const max of ['huge', '3GiB']) {
      expect(issuesOf({ IMAGE_SIZE: '300MiB', MAX_IMAGE_SIZE: max }), max).toEqual([
        { variable: 'MAX_IMAGE_SIZE', value: max, allowed: MAX_IMAGE_SIZE_ALLOWED },
        {
          variable: 'IMAGE_SIZE',
          value: '300MiB',
          allowed: 'at most MAX_IMAGE_SIZE, 268435456 bytes (256.0 MiB, its default: MAX_IMAGE_SIZE itself is bad)',
        },
      ]);
    }
    // Within the default: only MAX_IMAGE_SIZE is wrong.
    expect(issuesOf({ IMAGE_SIZE: '100MiB', MAX_IMAGE_SIZE: '3GiB' })).toEqual([
      { variable: 'MAX_IMAGE_SIZE', value: '3GiB', allowed: MAX_IMAGE_SIZE_ALLOWED },
    ]);
    expect(issuesOf({ IMAGE_SIZE: '10', MAX_IMAGE_SIZE: 'huge' })).toEqual([
      { variable: 'MAX_IMAGE_SIZE', value: 'huge', allowed: MAX_IMAGE_SIZE_ALLOWED },
      { variable: 'IMAGE_SIZE', value: '10', allowed: 'at least 84 bytes, the smallest valid PNG it can generate' },
    ]);
  });

  it('IMAGE_PATH with an IMAGE_SIZE that is itself bad', () => {
    expect(issuesOf({ IMAGE_SIZE: 'abc', IMAGE_PATH: '/tmp/x.png' }).map((i) => i.variable)).toEqual([
      'IMAGE_SIZE',
      'IMAGE_PATH',
    ]);
  });

  it('WARMUP_MIN_MS above the default WARMUP_MAX_MS, with WARMUP_MAX_MS bad', () => {
    expect(issuesOf({ WARMUP_MIN_MS: '20000', WARMUP_MAX_MS: '0' })).toEqual([
      { variable: 'WARMUP_MAX_MS', value: '0', allowed: WHOLE('1', '3,600,000') },
      {
        variable: 'WARMUP_MIN_MS',
        value: '20000',
        allowed: 'at most WARMUP_MAX_MS (10000, its default: WARMUP_MAX_MS itself is bad)',
      },
    ]);
  });

  it('CLIENTS above the default IMAGE_COUNT, with IMAGE_COUNT bad', () => {
    expect(issuesOf({ CLIENTS: '50', IMAGE_COUNT: '0' })).toEqual([
      { variable: 'IMAGE_COUNT', value: '0', allowed: WHOLE('1', '1,000,000,000') },
      {
        variable: 'CLIENTS',
        value: '50',
        allowed:
          'at most IMAGE_COUNT (10, its default: IMAGE_COUNT itself is bad): every client sends at least one ' +
          'recorded image',
      },
    ]);
  });

  it('CLIENTS and RECEIVERS above what a transport takes, named in a TRANSPORTS that is bad for another name', () => {
    const single: TransportSpec[] = [
      ...specs,
      {
        name: 'push',
        deployment: { setting: { kind: 'port', envVar: 'PUSH_PORT', defaultPort: 8082 }, defaultRun: false },
        traits: {
          maxClients: { clients: 1, why: 'it dials back once' },
          maxReceivers: { receivers: 1, why: 'one port' },
        },
      },
    ];
    expect(issuesOf({ CLIENTS: '2', RECEIVERS: '2', TRANSPORTS: 'Push,pigeon' }, single)).toEqual([
      {
        variable: 'TRANSPORTS',
        value: 'Push,pigeon',
        allowed:
          'all, or a comma-separated list of distinct transports from: websocket, redis, tcp, push; no entry ' +
          'empty (unset for the default run: websocket,redis,tcp)',
      },
      { variable: 'CLIENTS', value: '2', allowed: 'at most 1 with push in TRANSPORTS (it dials back once)' },
      { variable: 'RECEIVERS', value: '2', allowed: 'at most 1 with push in TRANSPORTS (one port)' },
    ]);
  });

  it('ITB_RECEIVERS against the default RECEIVERS, with RECEIVERS bad', () => {
    expect(issuesOf({ RECEIVERS: 'two', ITB_RECEIVERS: '127.0.0.1:8080,127.0.0.1:9090' })).toEqual([
      { variable: 'RECEIVERS', value: 'two', allowed: WHOLE('1', '32') },
      {
        variable: 'ITB_RECEIVERS',
        value: '127.0.0.1:8080,127.0.0.1:9090',
        allowed:
          'host:port of each of the RECEIVERS (1, its default: RECEIVERS itself is bad) receivers, ' +
          'comma-separated (npm start sets it)',
      },
    ]);
  });

  it('a port equal to the default of a port variable that is bad, whichever comes first', () => {
    expect(issuesOf({ CONTROL_PORT: 'http', WEBSOCKET_PORT: '8080' })).toEqual([
      { variable: 'CONTROL_PORT', value: 'http', allowed: WHOLE('1', '65,535') },
      {
        variable: 'WEBSOCKET_PORT',
        value: '8080',
        allowed: "a port no other variable uses (CONTROL_PORT's default is 8080 too)",
      },
    ]);
    // TCP_PORT comes after WEBSOCKET_PORT in the table; the bad one's default is taken first all the same.
    expect(issuesOf({ WEBSOCKET_PORT: 'x', TCP_PORT: '8081' })).toEqual([
      { variable: 'WEBSOCKET_PORT', value: 'x', allowed: WHOLE('1', '65,535') },
      {
        variable: 'TCP_PORT',
        value: '8081',
        allowed: "a port no other variable uses (WEBSOCKET_PORT's default is 8081 too)",
      },
    ]);
  });

  it("names all 8 of the issue's 8 bad values, each once, in one message", () => {
    const env = {
      IMAGE_COUNT: '0',
      IMAGE_SIZE: '300MiB',
      MAX_IMAGE_SIZE: 'huge',
      TRANSPORTS: '',
      WINDOW: '0',
      WARMUP_MIN_MS: '20000',
      WARMUP_MAX_MS: '0',
      CLIENTS: '50',
    };
    expect(issuesOf(env)).toEqual([
      { variable: 'IMAGE_COUNT', value: '0', allowed: WHOLE('1', '1,000,000,000') },
      { variable: 'TRANSPORTS', value: '', allowed: TRANSPORTS_ALLOWED },
      { variable: 'WINDOW', value: '0', allowed: WHOLE('1', '1,024') },
      { variable: 'WARMUP_MAX_MS', value: '0', allowed: WHOLE('1', '3,600,000') },
      { variable: 'MAX_IMAGE_SIZE', value: 'huge', allowed: MAX_IMAGE_SIZE_ALLOWED },
      {
        variable: 'IMAGE_SIZE',
        value: '300MiB',
        allowed: 'at most MAX_IMAGE_SIZE, 268435456 bytes (256.0 MiB, its default: MAX_IMAGE_SIZE itself is bad)',
      },
      {
        variable: 'WARMUP_MIN_MS',
        value: '20000',
        allowed: 'at most WARMUP_MAX_MS (10000, its default: WARMUP_MAX_MS itself is bad)',
      },
      {
        variable: 'CLIENTS',
        value: '50',
        allowed:
          'at most IMAGE_COUNT (10, its default: IMAGE_COUNT itself is bad): every client sends at least one ' +
          'recorded image',
      },
    ]);
    expect(formatConfigIssues(issuesOf(env)).split('\n')[0]).toBe('Invalid configuration (8 bad variables):');
  });
});

describe('configVariables', () => {
  it('lists every variable the config reads, ports included', () => {
    expect(configVariables(specs).sort()).toEqual(
      [
        'AUTH_TOKEN',
        'AUTH_TOKEN_FILE',
        'BIND_HOST',
        'CLIENTS',
        'COMMAND_RATE',
        'COMMAND_SIZE',
        'CONNECT_TIMEOUT_MS',
        'CONTROL_PORT',
        'DEADLINE_MISS_PERCENT',
        'DEADLINE_MS',
        'DURATION',
        'IMAGE_COUNT',
        'IMAGE_PATH',
        'IMAGE_SIZE',
        'IMAGE_TIMEOUT_MS',
        'LOG_LEVEL',
        'MAX_IMAGE_SIZE',
        'NETWORK_DELAY',
        'NETWORK_LOSS',
        'NETWORK_RATE',
        'OUTPUT_DIR',
        'PROFILE',
        'RATE',
        'RECEIVER_HOST',
        'RECEIVERS',
        'REDIS_PASSWORD',
        'REDIS_PASSWORD_FILE',
        'REDIS_URL',
        'REPEAT',
        'TCP_PORT',
        'TRANSPORTS',
        'VERIFY',
        'WARMUP',
        'WARMUP_MAX_MS',
        'WARMUP_MIN_MS',
        'WEBSOCKET_PORT',
        'WINDOW',
      ].sort(),
    );
  });
});
