// biome-ignore-all lint/suspicious/noTemplateCurlyInString: ${VAR:-default} is Compose's interpolation, checked as text
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { configVariables } from '../../services/core/config/config.js';
import { SERVICE_NODE_FLAGS } from '../../services/shared/node-flags.js';
import { projectPath } from '../../services/shared/paths.js';
import { transports } from '../../services/transports/index.js';
import { REDIS_IMAGE_LIMIT_ARGS } from '../../services/transports/redis/transport.js';

// deploy/swarm/stack.yml as text: what it means, beside docker-compose.yml.
// It is deployed for real by scripts/swarm-check.ts in .ci/run (a single-node swarm).

interface StackService {
  image: string;
  command: string[];
  environment?: Record<string, string>;
  secrets?: { source: string; uid: string; gid: string; mode: number }[];
  volumes?: string[];
  ports?: { target: string; published: string; mode: string }[];
  configs?: { source: string; target: string }[];
  networks?: string[];
  healthcheck?: { test: string[] };
  deploy: {
    mode?: string;
    replicas?: string;
    endpoint_mode?: string;
    placement?: { constraints?: string[]; max_replicas_per_node?: number };
    restart_policy?: { condition: string };
  };
}
interface Stack {
  services: Record<string, StackService>;
  networks: Record<string, { driver: string }>;
  volumes: Record<string, unknown>;
  configs: Record<string, { file: string }>;
  secrets: Record<string, { external: boolean }>;
}

const read = (file: string): string => readFileSync(projectPath(file), 'utf8');
// merge: compose files use YAML merge keys (<<: *bench-env), as the Docker CLI reads them.
const stack = parseYaml(read('deploy/swarm/stack.yml'), { merge: true }) as Stack;
const compose = parseYaml(read('docker-compose.yml'), { merge: true }) as {
  services: Record<string, { environment: Record<string, string>; command: string[] }>;
};
const service = (name: string): StackService => {
  const found = stack.services[name];
  if (!found) throw new Error(`no service ${name} in deploy/swarm/stack.yml`);
  return found;
};

/**
 * compose's variables that the stack sets otherwise: the secret through a swarm secret, the entrypoint's owner from the
 * image; no image file, which would have to be inside the image.
 */
const NOT_IN_STACK = ['AUTH_TOKEN', 'RUN_AS_OWNER_OF', 'ALSO_OWN', 'IMAGE_PATH'];

describe('deploy/swarm/stack.yml', () => {
  // Its knob block is compose's, both written by `npm run generate` (tests/unit/generated.test.ts).
  it('sets only variables the config reads, never the secret itself, the image path or the entrypoint owner', () => {
    for (const name of ['receiver', 'transmitter']) {
      const stackEnv = service(name).environment ?? {};
      for (const variable of NOT_IN_STACK) expect(stackEnv, `${name} ${variable}`).not.toHaveProperty(variable);
      for (const variable of Object.keys(stackEnv))
        expect(configVariables(transports), `${name} ${variable}`).toContain(variable);
    }
  });

  it(
    'places the receiver and the transmitter by the itb.role node label, one switch letting the transmitter onto ' +
      'a receiver node',
    () => {
      expect(service('receiver').deploy.placement).toEqual({
        constraints: ['node.labels.itb.role == receiver'],
        max_replicas_per_node: 1,
      });
      expect(service('transmitter').deploy.placement?.constraints).toEqual([
        'node.labels.itb.role == ${TRANSMITTER_NODE_ROLE:-transmitter}',
      ]);
      expect(service('receiver').deploy.replicas).toBe('${RECEIVERS:-1}');
    },
  );

  it('runs the transmitter once, as a job that is never restarted', () => {
    expect(service('transmitter').deploy.mode).toBe('replicated-job');
    expect(service('transmitter').deploy.restart_policy).toEqual({ condition: 'none' });
    expect(service('transmitter').command).toEqual(compose.services.transmitter!.command);
    expect(service('transmitter').command).toEqual([
      'node',
      ...SERVICE_NODE_FLAGS,
      'dist/services/transmitter/main.js',
    ]);
  });

  it('keeps results in a volume on the receiver node and publishes only the control port, on that node', () => {
    const receiver = service('receiver');
    expect(receiver.command).toEqual(['node', ...SERVICE_NODE_FLAGS, 'dist/services/receiver/main.js']);
    expect(receiver.volumes).toEqual(['results:/app/output']);
    expect(receiver.environment?.OUTPUT_DIR).toBe('/app/output');
    expect(stack.volumes).toHaveProperty('results');
    expect(receiver.ports).toEqual([
      { target: '${CONTROL_PORT:-8080}', published: '${CONTROL_PORT:-8080}', protocol: 'tcp', mode: 'host' },
    ]);
    expect(receiver.healthcheck?.test).toEqual(['CMD', 'node', 'dist/services/receiver/healthcheck.js']);
  });

  it('reaches every service by DNS round robin, on one overlay network, none through a virtual IP', () => {
    expect(stack.networks).toEqual({ bench: { driver: 'overlay' } });
    for (const name of ['receiver', 'redis', 'nats']) expect(service(name).deploy.endpoint_mode, name).toBe('dnsrr');
    for (const name of Object.keys(stack.services)) expect(service(name).networks, name).toEqual(['bench']);
    for (const name of ['receiver', 'transmitter']) {
      expect(service(name).environment).toMatchObject({
        RECEIVER_HOST: 'receiver',
        REDIS_URL: 'redis://redis:6379',
        NATS_URL: 'nats://nats:4222',
        BIND_HOST: '0.0.0.0',
      });
    }
  });

  it(
    'runs Redis, NATS, Mosquitto and RabbitMQ as ' + 'docker-compose.yml does, each with the same configuration file',
    () => {
      expect(service('redis').command).toEqual([
        'redis-server',
        '--save',
        '',
        '--appendonly',
        'no',
        ...REDIS_IMAGE_LIMIT_ARGS,
      ]);
      expect(service('nats').command).toEqual(['nats-server', '--config', '/etc/itb/nats-server.conf']);
      expect(service('nats').configs).toEqual([{ source: 'nats_conf', target: '/etc/itb/nats-server.conf' }]);
      expect(service('mqtt').command).toEqual(['mosquitto', '-c', '/etc/itb/mosquitto.conf']);
      expect(service('mqtt').configs).toEqual([{ source: 'mosquitto_conf', target: '/etc/itb/mosquitto.conf' }]);
      expect(service('rabbitmq').configs).toEqual([{ source: 'rabbitmq_conf', target: '/etc/rabbitmq/rabbitmq.conf' }]);
      expect(stack.configs).toEqual({
        nats_conf: { file: '../../scripts/docker/nats-server.conf' },
        mosquitto_conf: { file: '../../scripts/docker/mosquitto.conf' },
        rabbitmq_conf: { file: '../../scripts/docker/rabbitmq.conf' },
      });
    },
  );

  it("gives both services the secret from an external swarm secret, readable by the image's node user only", () => {
    expect(stack.secrets).toEqual({ itb_auth_token: { external: true } });
    for (const name of ['receiver', 'transmitter']) {
      expect(service(name).secrets).toEqual([{ source: 'itb_auth_token', uid: '1000', gid: '1000', mode: 0o400 }]);
      expect(service(name).environment?.AUTH_TOKEN_FILE).toBe('/run/secrets/itb_auth_token');
    }
  });
});
