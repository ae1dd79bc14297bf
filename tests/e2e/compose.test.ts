import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { configVariables, parseConfig, type Config } from '../../services/core/config/config.js';
import { stopChild } from '../../services/shared/child-process.js';
import { SERVICE_NODE_FLAGS } from '../../services/shared/node-flags.js';
import { projectPath, projectRoot } from '../../services/shared/paths.js';
import { freePortsEnv } from '../../scripts/lib/ports.js';
import { freePort } from '../../services/shared/net.js';
import { transports } from '../../services/transports/index.js';
import { REDIS_IMAGE_LIMIT_ARGS } from '../../services/transports/redis/transport.js';

// No Docker engine runs here, so docker-compose.yml is checked two ways: resolved by a real
// Compose implementation (Debian's docker-compose, which needs no engine for `config`), and its
// services' commands and environment run as local processes, with the compose host names mapped
// to 127.0.0.1. A command, a variable name, a port or the output path that drifts from the code
// fails here. .ci/run installs docker-compose; elsewhere: apt-get install docker-compose.

const execFileAsync = promisify(execFile);
/** Variables the image's entrypoint reads, not the services' config. */
const ENTRYPOINT_VARIABLES = ['RUN_AS_OWNER_OF', 'ALSO_OWN'];

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile?: string };
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: (string | { type: string; source: string; target: string })[];
  healthcheck?: { test: string[] };
  depends_on?: Record<string, { condition: string }>;
  restart?: string;
}
interface ComposeFile {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

/** Paths in the container are under the Dockerfile's WORKDIR; locally they are under the repo. */
const CONTAINER_WORKDIR = '/app';

let projectDir: string;
let emptyEnvFile: string;

beforeAll(async () => {
  projectDir = await mkdtemp(path.join(os.tmpdir(), 'itb-compose-'));
  emptyEnvFile = path.join(projectDir, 'empty.env');
  await writeFile(emptyEnvFile, '');
});
afterAll(async () => {
  await rm(projectDir, { recursive: true, force: true });
});

/** docker-compose.yml as Compose resolves it, with `env` as the only environment. */
async function resolveCompose(env: Record<string, string>): Promise<ComposeFile> {
  const args = [
    '-f',
    projectPath('docker-compose.yml'),
    '--project-directory',
    projectDir,
    '--env-file',
    emptyEnvFile,
    'config',
  ];
  const { stdout } = await execFileAsync('docker-compose', args, {
    env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir(), ...env },
  });
  return parseYaml(stdout) as ComposeFile;
}

function service(compose: ComposeFile, name: string): ComposeService {
  const found = compose.services[name];
  if (!found) throw new Error(`docker-compose.yml has no service "${name}"`);
  return found;
}

function configOf(environment: Record<string, string> | undefined): Config {
  const result = parseConfig(environment ?? {}, transports);
  if (!result.ok) throw new Error(`a compose service's environment is invalid: ${JSON.stringify(result.issues)}`);
  return result.config;
}

/** A config without what the compose file fixes for its own network and volumes instead of taking from .env. */
function withoutNetworkVariables(config: Config): Partial<Config> {
  // The link in words follows RECEIVER_HOST (compose: the receiver service), not a default of its own.
  const {
    receiverHost: _r,
    urls: _u,
    bindHost: _b,
    outputDir: _o,
    authTokenFile: _a,
    link: _l,
    socketPaths: _s,
    ...rest
  } = config;
  return rest;
}

/** The last stage of the Dockerfile: the image the services run in. */
function runtimeStage(): string[] {
  const lines = readFileSync(projectPath('Dockerfile'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  const lastFrom = lines.map((l) => l.startsWith('FROM ')).lastIndexOf(true);
  return lines.slice(lastFrom);
}

describe('docker-compose.yml, resolved by docker-compose', () => {
  it('validates with and without a .env, and takes the knobs from .env', async () => {
    await resolveCompose({});
    // DURATION alone reaches both services, and IMAGE_COUNT stays unset: no clash between the two.
    const byDuration = await resolveCompose({ DURATION: '30s' });
    for (const name of ['receiver', 'transmitter'])
      expect(configOf(service(byDuration, name).environment)).toMatchObject({ durationMs: 30_000, imageCount: 10 });
    const envFile = path.join(projectDir, '.env');
    await writeFile(envFile, 'IMAGE_COUNT=50\nWINDOW=8\n');
    try {
      const args = ['-f', projectPath('docker-compose.yml'), '--project-directory', projectDir, 'config'];
      const { stdout } = await execFileAsync('docker-compose', args, {
        env: { PATH: process.env.PATH ?? '', HOME: os.tmpdir() },
      });
      const compose = parseYaml(stdout) as ComposeFile;
      for (const name of ['receiver', 'transmitter']) {
        expect(service(compose, name).environment).toMatchObject({ IMAGE_COUNT: '50', WINDOW: '8' });
      }
    } finally {
      await rm(envFile);
    }
  }, 90_000);

  it("has the two services and every transport's broker " +
    'service, wired as designed, with the code defaults', async () => {
    const compose = await resolveCompose({});
    const brokers = transports.flatMap((t) => (t.deployment.composeService ? [t] : []));
    // The Redis transports share one Redis service.
    const brokerServices = [...new Set(brokers.map((t) => t.deployment.composeService!))];
    expect(Object.keys(compose.services).sort()).toEqual(['receiver', 'transmitter', ...brokerServices].sort());
    // The config's variables, and the two the image's entrypoint reads (scripts/docker/entrypoint.sh).
    const known = [...configVariables(transports), ...ENTRYPOINT_VARIABLES];
    const defaults = withoutNetworkVariables(configOf({}));

    const redis = service(compose, 'redis');
    expect(redis.image).toMatch(/^redis:7/);
    expect(redis.healthcheck?.test).toEqual(['CMD', 'redis-cli', 'ping']);
    expect(redis.ports ?? []).toEqual([]);
    expect(redis.command?.join(' ')).toContain(REDIS_IMAGE_LIMIT_ARGS.join(' '));
    // NATS: its config file raises max_payload to NATS's hard limit, and the healthcheck asks the monitoring port.
    const nats = service(compose, 'nats');
    expect(nats.image).toMatch(/^nats:2/);
    expect(nats.command).toEqual(['nats-server', '--config', '/etc/itb/nats-server.conf']);
    expect(nats.volumes).toContain(
      `${path.join(projectDir, 'scripts', 'docker', 'nats-server.conf')}:/etc/itb/nats-server.conf:ro`,
    );
    expect(readFileSync(projectPath('scripts', 'docker', 'nats-server.conf'), 'utf8')).toMatch(/^max_payload: 64MB$/m);
    expect(nats.healthcheck?.test).toEqual(['CMD', 'wget', '-q', '-O', '/dev/null', 'http://127.0.0.1:8222/healthz']);
    expect(nats.ports ?? []).toEqual([]);
    // JetStream for nats-jetstream: memory streams only, no file store (nothing kept on disk).
    expect(readFileSync(projectPath('scripts', 'docker', 'nats-server.conf'), 'utf8')).toMatch(
      /^jetstream \{[^}]*max_file_store: 0\n[^}]*\}$/m,
    );
    // Mosquitto: MQTT 5 with nothing kept on disk and no queued QoS 1 message dropped.
    const mqtt = service(compose, 'mqtt');
    expect(mqtt.image).toMatch(/^eclipse-mosquitto:2/);
    expect(mqtt.command).toEqual(['mosquitto', '-c', '/etc/itb/mosquitto.conf']);
    expect(mqtt.volumes).toContain(
      `${path.join(projectDir, 'scripts', 'docker', 'mosquitto.conf')}:/etc/itb/mosquitto.conf:ro`,
    );
    expect(readFileSync(projectPath('scripts', 'docker', 'mosquitto.conf'), 'utf8')).toMatch(
      /^persistence false$[\s\S]*^max_queued_messages 0$/m,
    );
    expect(mqtt.healthcheck?.test?.[1]).toBe('mosquitto_sub');
    expect(mqtt.ports ?? []).toEqual([]);
    // RabbitMQ: guest reachable from the other containers, the message limit the amqp transport states.
    const rabbitmq = service(compose, 'rabbitmq');
    expect(rabbitmq.image).toMatch(/^rabbitmq:3/);
    expect(rabbitmq.volumes).toContain(
      `${path.join(projectDir, 'scripts', 'docker', 'rabbitmq.conf')}:/etc/rabbitmq/rabbitmq.conf:ro`,
    );
    expect(readFileSync(projectPath('scripts', 'docker', 'rabbitmq.conf'), 'utf8')).toMatch(
      /^max_message_size = 134217728$/m,
    );
    expect(rabbitmq.healthcheck?.test).toEqual(['CMD', 'rabbitmq-diagnostics', '-q', 'ping']);
    expect(rabbitmq.ports ?? []).toEqual([]);

    for (const name of ['receiver', 'transmitter']) {
      const s = service(compose, name);
      expect(s.build?.context, name).toBe(projectDir);
      // Each service runs with the flags npm start gives it (services/shared/node-flags.ts).
      expect(s.command, name).toEqual(['node', ...SERVICE_NODE_FLAGS, `dist/services/${name}/main.js`]);
      for (const variable of Object.keys(s.environment ?? {}))
        expect(known, `${name} sets ${variable}`).toContain(variable);
      // Every transport's own setting reaches both services (from .env, or fixed for the compose network).
      for (const t of transports)
        expect(Object.keys(s.environment ?? {}), `${name} lacks ${t.deployment.setting.envVar}`).toContain(
          t.deployment.setting.envVar,
        );
      expect(withoutNetworkVariables(configOf(s.environment)), name).toEqual(defaults);
    }

    const receiver = service(compose, 'receiver');
    const receiverConfig = configOf(receiver.environment);
    expect(receiverConfig.bindHost).toBe('0.0.0.0');
    // Only the control endpoint is published, and only on the host's loopback: a range by default,
    // a port per replica under --scale receiver=N.
    expect(receiver.ports).toEqual([`127.0.0.1:8080-8111:${receiverConfig.controlPort}/tcp`]);
    expect(receiver.volumes).toContain(`${path.join(projectDir, 'output')}:${receiverConfig.outputDir}:rw`);
    // Both run as the owner of ./output (the transmitter mounts it read-only only to know it), so
    // a fresh clone needs no mkdir or chmod and the receiver's secret file is the transmitter's too.
    expect(receiver.environment?.RUN_AS_OWNER_OF).toBe(receiverConfig.outputDir);
    const socketDir = path.posix.dirname(receiverConfig.socketPaths.unix!);
    expect(receiver.environment?.ALSO_OWN).toBe(`${path.posix.dirname(receiverConfig.authTokenFile)} ${socketDir}`);
    const brokerHealthy = Object.fromEntries(brokerServices.map((name) => [name, { condition: 'service_healthy' }]));
    expect(receiver.depends_on).toEqual(brokerHealthy);
    expect(receiver.restart).toBe('on-failure');

    const transmitter = service(compose, 'transmitter');
    const transmitterConfig = configOf(transmitter.environment);
    expect(transmitterConfig.receiverHost).toBe('receiver');
    // websocket-push's receiver dials the transmitter's own server across the compose network.
    expect(transmitterConfig.bindHost).toBe('0.0.0.0');
    // Both services reach each broker by its compose service name, with the transport's own scheme.
    for (const t of brokers) {
      const scheme = t.deployment.setting.kind === 'url' ? t.deployment.setting.schemes[0] : 'none';
      for (const config of [transmitterConfig, receiverConfig])
        expect(config.urls[t.name], t.name).toMatch(new RegExp(`^${scheme}://${t.deployment.composeService}:\\d+$`));
    }
    expect(transmitter.ports ?? []).toEqual([]);
    // Started, not healthy: the transmitter waits for /health itself, and a receiver that cannot
    // start shows its reason in the compose log instead of only "unhealthy".
    expect(transmitter.depends_on).toEqual({ receiver: { condition: 'service_started' }, ...brokerHealthy });
    expect(transmitter.environment?.RUN_AS_OWNER_OF).toBe(receiverConfig.outputDir);
    expect(transmitter.volumes).toContain(`${path.join(projectDir, 'output')}:${receiverConfig.outputDir}:ro`);
    // Without AUTH_TOKEN, the secret the receiver creates reaches the transmitter through a named
    // volume only the two services mount: the receiver writes it, the transmitter only reads.
    expect(receiverConfig.authToken).toBeUndefined();
    expect(transmitterConfig.authTokenFile).toBe(receiverConfig.authTokenFile);
    const secretDir = path.posix.dirname(receiverConfig.authTokenFile);
    expect(receiver.volumes).toContain(`auth:${secretDir}:rw`);
    // nocopy: the transmitter's mount must not reset the owner the receiver gave the volume.
    expect(transmitter.volumes).toContain(`auth:${secretDir}:ro,nocopy`);
    // The same-host transports' socket files go through a volume only the two services mount, at one path in both;
    // the transmitter's connect needs write permission on the socket file.
    expect(transmitterConfig.socketPaths).toEqual(receiverConfig.socketPaths);
    expect(receiver.volumes).toContain(`sockets:${socketDir}:rw`);
    expect(transmitter.volumes).toContain(`sockets:${socketDir}:nocopy`);
    expect(Object.keys(compose.volumes ?? {})).toEqual(['auth', 'sockets']);
    expect(service(compose, 'redis').volumes ?? []).toEqual([]);
  }, 90_000);
});

describe('Dockerfile', () => {
  it('builds in one stage and runs a slim glibc image, never as root, with production dependencies only', () => {
    const stage = runtimeStage();
    expect(stage[0]).toMatch(/^FROM node:\d+-(bookworm|bullseye|trixie)-slim\b/);
    expect(readFileSync(projectPath('Dockerfile'), 'utf8').match(/^FROM /gm)).toHaveLength(2);
    expect(stage).toContain(`WORKDIR ${CONTAINER_WORKDIR}`);
    expect(stage.some((l) => /^RUN npm ci --omit=dev\b/.test(l))).toBe(true);
    // The entrypoint starts as root only to pick the owner of the data directory, and runs the service as that user.
    expect(stage.at(-2)).toBe('ENTRYPOINT ["itb-entrypoint"]');
    expect(stage.at(-1)).toBe(
      `CMD [` +
        ['node', ...SERVICE_NODE_FLAGS, 'dist/services/receiver/main.js']
          .map((word) => JSON.stringify(word))
          .join(', ') +
        `]`,
    );
    expect(stage).toContain(`ENV RUN_AS_OWNER_OF=${CONTAINER_WORKDIR}/output`);
    expect(readFileSync(projectPath('scripts', 'docker', 'entrypoint.sh'), 'utf8')).toMatch(
      /^exec setpriv --reuid="\$uid" --regid="\$gid" --clear-groups -- "\$@"$/m,
    );
    expect(stage.filter((l) => l.startsWith('COPY')).map((l) => l.split(/\s+/).slice(-2, -1)[0] ?? '')).toEqual([
      'package-lock.json',
      '/app/dist',
      'proto',
      'assets',
      'scripts/docker/entrypoint.sh',
    ]);
    const ignored = readFileSync(projectPath('.dockerignore'), 'utf8').split('\n');
    expect(ignored).toEqual(expect.arrayContaining(['node_modules', 'output', '.git']));
  });
});

describe('the compose services, run as local processes', () => {
  const started: ChildProcess[] = [];
  afterAll(async () => {
    await Promise.all(started.map((child) => stopChild(child, 2000)));
  });

  /** Starts a service's command as the container would run it, from the repo instead of /app. */
  function run(command: string[], env: Record<string, string>): ChildProcess {
    const [program, ...args] = command;
    const executable = program === 'node' ? process.execPath : program!;
    for (const arg of args) {
      if (arg.startsWith('dist/'))
        expect(existsSync(path.join(projectRoot(), arg)), `${arg} (run "npm run build")`).toBe(true);
    }
    const child = spawn(executable, args, {
      cwd: projectRoot(),
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.resume();
    child.stderr?.resume();
    started.push(child);
    return child;
  }

  it('produce output.log: redis, then the receiver until healthy, then the transmitter', async () => {
    const ports = await freePortsEnv();
    const compose = await resolveCompose({ ...ports, IMAGE_COUNT: '3' });
    const redisPort = await freePort();
    // Compose host names and container paths, as seen from this host.
    const receiver = service(compose, 'receiver');
    // Each container path under a mount, as a host path: a bind mount's own, a named volume's a folder of its own.
    const mounts = (receiver.volumes ?? [])
      .map((v) => (typeof v === 'string' ? v.split(':') : [v.source, v.target]))
      .map(([source = '', target = '']) => ({
        hostPath: path.isAbsolute(source) ? source : path.join(projectDir, 'volumes', source),
        target,
      }));
    for (const mount of mounts) await mkdir(mount.hostPath, { recursive: true });
    const localEnv = (environment: Record<string, string> | undefined): Record<string, string> =>
      Object.fromEntries(
        Object.entries(environment ?? {}).map(([name, value]) => {
          const mount = mounts.find(({ target }) => value === target || value.startsWith(`${target}/`));
          const mapped = mount
            ? `${mount.hostPath}${value.slice(mount.target.length)}`
            : value
                .replace('redis://redis:6379', `redis://127.0.0.1:${redisPort}`)
                .replace(/^(receiver|0\.0\.0\.0)$/, '127.0.0.1');
          return [name, mapped];
        }),
      );

    const redisCommand = service(compose, 'redis').command ?? [];
    const redis = run([...redisCommand, '--port', String(redisPort), '--bind', '127.0.0.1'], {});
    const receiverEnv = localEnv(receiver.environment);
    expect(receiverEnv.OUTPUT_DIR).toBe(path.join(projectDir, 'output'));
    const receiverProcess = run(receiver.command ?? [], receiverEnv);

    // The healthcheck is what compose waits on before starting the transmitter.
    const healthcheck = receiver.healthcheck?.test.slice(1) ?? [];
    const deadline = Date.now() + 20_000;
    for (;;) {
      const code = await new Promise<number | null>((resolve) => run(healthcheck, receiverEnv).on('exit', resolve));
      if (code === 0) break;
      if (Date.now() > deadline) throw new Error('the receiver never became healthy');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }

    const transmitter = service(compose, 'transmitter');
    const transmitterProcess = run(transmitter.command ?? [], localEnv(transmitter.environment));
    const exitCode = await new Promise<number | null>((resolve) =>
      transmitterProcess.on('exit', (code) => resolve(code)),
    );
    expect(exitCode).toBe(0);

    const log = await readFile(path.join(projectDir, 'output', 'output.log'), 'utf8');
    // The secret the receiver made for itself, readable by its owner only, and never in a report.
    const secretFile = localEnv(receiver.environment).AUTH_TOKEN_FILE!;
    expect((await stat(secretFile)).mode & 0o777).toBe(0o600);
    const secret = (await readFile(secretFile, 'utf8')).trim();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await readFile(path.join(projectDir, 'output', 'results.json'), 'utf8')).not.toContain(secret);
    expect(log).not.toContain(secret);
    expect(log.match(/^=== .* performance test: 3 images transfer/gm)).toHaveLength(5);
    expect(log).toContain('Result: every transport delivered every image intact.');

    // `docker compose down` sends SIGTERM: the receiver must be gone within 5 s, cleanly.
    const receiverExit = new Promise((resolve) => receiverProcess.on('exit', resolve));
    const sentAt = Date.now();
    receiverProcess.kill('SIGTERM');
    expect(await receiverExit).toBe(0);
    expect(Date.now() - sentAt).toBeLessThan(5000);
    await stopChild(redis, 2000);
  }, 90_000);
});
