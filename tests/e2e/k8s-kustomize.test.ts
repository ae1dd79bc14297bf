import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IJob } from 'kubernetes-models/batch/v1/Job';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import { describe, expect, it } from 'vitest';
import { parseConfig, type Config } from '../../services/core/config/config.js';
import { SERVICE_NODE_FLAGS } from '../../services/shared/node-flags.js';
import { projectPath } from '../../services/shared/paths.js';
import { transports } from '../../services/transports/index.js';
import { REDIS_IMAGE_LIMIT_ARGS } from '../../services/transports/redis/transport.js';
import { knobVariables } from '../../scripts/lib/generated-files.js';
import {
  container,
  deployment,
  find,
  job,
  label,
  parseManifests,
  podSpec,
  schemaProblems,
  service,
  typeProblems,
  type K8sObject,
} from '../helpers/k8s.js';

// Each overlay of deploy/k8s rendered by real kustomize (`kubectl kustomize`), every object checked
// as tests/helpers/k8s.ts does, then what the manifests mean: placement, resources, security,
// probes, wiring and the knobs. Not part of npm test: kubectl 1.27 or later (kustomize v5) is not
// in Debian's packages. .ci/run runs it (`npx vitest run --project k8s`) and requires kubectl;
// without it every test here fails, none is skipped. The manifests as written are checked by
// k8s-manifests.test.ts, in npm test.

const OVERLAYS = ['default', 'one-node'] as const;
type Overlay = (typeof OVERLAYS)[number];
const NAMESPACE = 'image-transfer-bench';

/** The benchmark's knobs, in knobs.env's order: no address, port, secret, IMAGE_PATH or NETWORK_*. */
const KNOBS = knobVariables();

/** Fails with one clear message when kubectl is missing or its kustomize is older than v5. */
function requireKubectl(): void {
  let output: string;
  try {
    output = execFileSync('kubectl', ['version', '--client', '--output=json'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    throw new Error(
      `deploy/k8s is rendered with \`kubectl kustomize\`, and kubectl cannot be run (${(err as Error).message}` +
        `): install kubectl 1.27 or later (kustomize v5)`,
    );
  }
  const kustomize =
    (JSON.parse(output) as { kustomizeVersion?: string }).kustomizeVersion ?? 'not named (kubectl older than 1.24)';
  if (!/^v([5-9]|\d{2,})\./.test(kustomize))
    throw new Error(`kubectl's kustomize is ${kustomize}; deploy/k8s needs v5 (kubectl 1.27 or later)`);
}

/** An overlay rendered by kustomize; a kustomize error fails with its message. */
function render(overlay: Overlay): K8sObject[] {
  const text = execFileSync('kubectl', ['kustomize', projectPath('deploy', 'k8s', 'overlays', overlay)], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return parseManifests(text, `kustomize's render of ${overlay}`);
}

function podLabels(workload: IDeployment | IJob): Record<string, string> {
  return workload.spec?.template.metadata?.labels ?? {};
}
/** Every workload's pod spec, by workload. */
function podSpecs(objects: readonly K8sObject[]): [string, IPodSpec][] {
  return objects
    .filter((o) => o.kind === 'Deployment' || o.kind === 'Job')
    .map((o) => [label(o), podSpec(o as unknown as IDeployment | IJob)]);
}

/** knobs.env as kustomize reads an env file: NAME=value lines; blank lines and # comments skipped. */
function readEnvFile(file: string): [string, string][] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => {
      const at = line.indexOf('=');
      if (at < 1) throw new Error(`${file}: not NAME=value: ${line}`);
      return [line.slice(0, at), line.slice(at + 1)];
    });
}

/** The knobs ConfigMap the overlay generated (its name carries a hash of its content). */
function knobsConfigMap(objects: readonly K8sObject[]): IConfigMap {
  const found = objects.filter((o) => o.kind === 'ConfigMap' && /^itb-knobs-[a-z0-9]{10}$/.test(o.metadata.name));
  expect(found.map(label)).toHaveLength(1);
  return found[0] as unknown as IConfigMap;
}

/** The config a container runs with: its envFrom ConfigMaps, then its env, which wins (as the kubelet does). */
function containerConfig(objects: readonly K8sObject[], c: IContainer): Config {
  const env: Record<string, string> = {};
  for (const source of c.envFrom ?? [])
    Object.assign(env, (find(objects, 'ConfigMap', source.configMapRef?.name ?? '') as unknown as IConfigMap).data);
  for (const variable of c.env ?? []) env[variable.name] = variable.value ?? '';
  const result = parseConfig(env, transports);
  if (!result.ok) throw new Error(`container ${c.name}'s environment is invalid: ${JSON.stringify(result.issues)}`);
  return result.config;
}

const renders = new Map<Overlay, K8sObject[]>();
/** An overlay's objects, rendered once. Without kubectl every test fails (none is skipped) with the reason. */
function objectsOf(overlay: Overlay): K8sObject[] {
  let objects = renders.get(overlay);
  if (!objects) {
    requireKubectl();
    objects = render(overlay);
    renders.set(overlay, objects);
  }
  return objects;
}

describe('deploy/k8s overlays, rendered by kustomize', () => {
  for (const overlay of OVERLAYS) {
    it(`${overlay}: every object is a known kind and valid against the Kubernetes schema`, () => {
      expect(objectsOf(overlay).map(label).sort()).toEqual([
        `ConfigMap ${knobsConfigMap(objectsOf(overlay)).metadata?.name}`,
        'ConfigMap itb-mqtt-config',
        'ConfigMap itb-nats-config',
        'ConfigMap itb-rabbitmq-config',
        'Deployment itb-mqtt',
        'Deployment itb-nats',
        'Deployment itb-rabbitmq',
        'Deployment itb-receiver',
        'Deployment itb-redis',
        'Job itb-transmitter',
        `Namespace ${NAMESPACE}`,
        'Service itb-mqtt',
        'Service itb-nats',
        'Service itb-rabbitmq',
        'Service itb-receiver',
        'Service itb-redis',
      ]);
      expect(schemaProblems(objectsOf(overlay))).toEqual([]);
    });

    it(`${overlay}: no object has a field the Kubernetes API does not know`, () => {
      expect(typeProblems(objectsOf(overlay))).toEqual([]);
    });
  }
});

describe('what the manifests mean', () => {
  it(
    "the transmitter runs once, within 2 h, never on a receiver's node; the receivers spread over nodes where " +
      'they can',
    () => {
      const objects = objectsOf('default');
      const receiver = deployment(objects, 'itb-receiver');
      const transmitter = job(objects, 'itb-transmitter');
      // A retried transmitter would be a second run mixed into the first one's report.
      expect(transmitter.spec?.backoffLimit).toBe(0);
      expect(podSpec(transmitter).restartPolicy).toBe('Never');
      expect(transmitter.spec?.activeDeadlineSeconds).toBe(7200);
      // The API server picks a Job's selector; one set here would need manualSelector.
      expect(transmitter.spec?.selector).toBeUndefined();
      const receiverLabels = podLabels(receiver);
      expect(receiverLabels).toEqual({
        'app.kubernetes.io/name': 'image-transfer-bench',
        'app.kubernetes.io/component': 'receiver',
      });
      // Required, on the node, against exactly the receivers' pods (the scheduler applies it both ways).
      expect(podSpec(transmitter).affinity).toEqual({
        podAntiAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [
            { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: receiverLabels } },
          ],
        },
      });
      expect(podSpec(receiver).affinity).toEqual({
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 100,
              podAffinityTerm: {
                topologyKey: 'kubernetes.io/hostname',
                labelSelector: { matchLabels: receiverLabels },
              },
            },
          ],
        },
      });
      // Recreate: old and new receivers never both answer to itb-receiver.
      expect(receiver.spec?.strategy).toEqual({ type: 'Recreate' });
    },
  );

  it(
    "the one-node overlay is the default one without the transmitter's required anti-affinity, and small enough " +
      "for a laptop's node",
    () => {
      // What differs: the transmitter's affinity and every container's resources; nothing else.
      const withoutPlacementAndSize = (objects: readonly K8sObject[]): K8sObject[] => {
        const copy = structuredClone(objects) as K8sObject[];
        delete podSpec(job(copy, 'itb-transmitter')).affinity;
        for (const [, spec] of podSpecs(copy)) for (const c of spec.containers) delete c.resources;
        return copy;
      };
      const oneNode = objectsOf('one-node');
      expect(podSpec(job(oneNode, 'itb-transmitter')).affinity).toEqual({ podAntiAffinity: {} });
      expect(withoutPlacementAndSize(oneNode)).toEqual(withoutPlacementAndSize(objectsOf('default')));
      const sizes = Object.fromEntries(
        podSpecs(oneNode).flatMap(([, spec]) => spec.containers.map((c) => [c.name, c.resources] as const)),
      );
      expect(sizes).toEqual({
        receiver: { requests: { cpu: '1', memory: '2Gi' }, limits: { cpu: '1', memory: '2Gi' } },
        transmitter: { requests: { cpu: '1', memory: '2Gi' }, limits: { cpu: '1', memory: '2Gi' } },
        redis: { requests: { cpu: '500m', memory: '1Gi' }, limits: { cpu: '500m', memory: '1Gi' } },
        nats: { requests: { cpu: '500m', memory: '512Mi' }, limits: { cpu: '500m', memory: '512Mi' } },
        mqtt: { requests: { cpu: '250m', memory: '256Mi' }, limits: { cpu: '250m', memory: '256Mi' } },
        rabbitmq: { requests: { cpu: '250m', memory: '512Mi' }, limits: { cpu: '250m', memory: '512Mi' } },
      });
    },
  );

  it(
    "every container has cpu and memory requests and limits; the two services' are equal, in whole CPUs " +
      '(Guaranteed QoS)',
    () => {
      for (const [workload, spec] of podSpecs(objectsOf('default'))) {
        for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
          const { requests = {}, limits = {} } = c.resources ?? {};
          expect(Object.keys(requests).sort(), `${workload} ${c.name} requests`).toEqual(['cpu', 'memory']);
          expect(Object.keys(limits).sort(), `${workload} ${c.name} limits`).toEqual(['cpu', 'memory']);
        }
      }
      for (const c of [
        container(podSpec(deployment(objectsOf('default'), 'itb-receiver')), 'receiver'),
        container(podSpec(job(objectsOf('default'), 'itb-transmitter')), 'transmitter'),
      ]) {
        expect(c.resources?.requests, c.name).toEqual(c.resources?.limits);
        expect(String(c.resources?.limits?.cpu), c.name).toMatch(/^[1-9]\d*$/);
      }
    },
  );

  it(
    'every pod runs as a non-root user, with no privilege escalation, writable root, capability, API token or ' +
      'service-link variable',
    () => {
      for (const [workload, spec] of podSpecs(objectsOf('default'))) {
        expect(spec.securityContext, workload).toMatchObject({
          runAsNonRoot: true,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        expect(spec.securityContext?.runAsUser, workload).toBeGreaterThan(0);
        expect(spec.automountServiceAccountToken, workload).toBe(false);
        // Service links would add ITB_REDIS_PORT=tcp://… and the like to the services' environment.
        expect(spec.enableServiceLinks, workload).toBe(false);
        for (const c of spec.containers) {
          expect(c.securityContext, `${workload} ${c.name}`).toEqual({
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          });
        }
      }
      // The image's node user, which the pod's fsGroup lets read the secret.
      for (const workload of [
        deployment(objectsOf('default'), 'itb-receiver'),
        job(objectsOf('default'), 'itb-transmitter'),
      ]) {
        expect(podSpec(workload).securityContext).toMatchObject({ runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000 });
      }
    },
  );

  it('the receiver is ready when GET /health answers on its control port, 8080, and has no liveness probe', () => {
    const receiver = container(podSpec(deployment(objectsOf('default'), 'itb-receiver')), 'receiver');
    expect(receiver.readinessProbe?.httpGet).toEqual({ path: '/health', port: 'control' });
    expect(receiver.ports?.find((p) => p.name === 'control')?.containerPort).toBe(8080);
    expect(containerConfig(objectsOf('default'), receiver).controlPort).toBe(8080);
    // A busy receiver that misses /health must not be restarted mid-run.
    expect(receiver.livenessProbe).toBeUndefined();
  });

  it(
    'the receivers listen on every port their config gives, each named in the headless Service that selects them; ' +
      "the transmitter on websocket-push's",
    () => {
      const objects = objectsOf('default');
      const receiverDeployment = deployment(objects, 'itb-receiver');
      const receiver = container(podSpec(receiverDeployment), 'receiver');
      const transmitter = container(podSpec(job(objects, 'itb-transmitter')), 'transmitter');
      const config = containerConfig(objects, receiver);
      const listened = (dials: boolean): number[] =>
        transports.flatMap((t) =>
          t.deployment.setting.kind === 'port' && Boolean(t.traits.receiverDials) === dials
            ? Array.from({ length: 1 + (t.deployment.setting.nextPorts ?? 0) }, (_, k) => config.ports[t.name]! + k)
            : [],
        );
      const numbers = (c: IContainer): number[] => (c.ports ?? []).map((p) => p.containerPort).sort((a, b) => a - b);
      expect(numbers(receiver)).toEqual([config.controlPort, ...listened(false)].sort((a, b) => a - b));
      // websocket-push: the receiver dials the transmitter's pod back.
      expect(numbers(transmitter)).toEqual(listened(true));
      for (const c of [receiver, transmitter])
        expect(
          c.ports?.every((p) => p.name !== undefined && p.name.length <= 15),
          c.name,
        ).toBe(true);

      const headless = service(objects, 'itb-receiver');
      expect(headless.spec?.clusterIP).toBe('None');
      expect(headless.spec?.publishNotReadyAddresses).toBe(false);
      expect(headless.spec?.selector).toEqual(podLabels(receiverDeployment));
      expect(receiverDeployment.spec?.selector.matchLabels).toEqual(podLabels(receiverDeployment));
      expect(headless.spec?.ports).toEqual(
        (receiver.ports ?? []).map((p) => ({ name: p.name, port: p.containerPort, targetPort: p.name })),
      );
    },
  );

  it(
    'both services take the knobs from the generated ConfigMap and the addresses, secret and output folder from ' +
      'env',
    () => {
      const objects = objectsOf('default');
      const knobs = knobsConfigMap(objects);
      const receiver = container(podSpec(deployment(objects, 'itb-receiver')), 'receiver');
      const transmitter = container(podSpec(job(objects, 'itb-transmitter')), 'transmitter');
      for (const c of [receiver, transmitter]) {
        expect(c.envFrom, c.name).toEqual([{ configMapRef: { name: knobs.metadata?.name } }]);
        expect(Object.fromEntries((c.env ?? []).map((e) => [e.name, e.value])), c.name).toMatchObject({
          RECEIVER_HOST: 'itb-receiver',
          REDIS_URL: 'redis://itb-redis:6379',
          NATS_URL: 'nats://itb-nats:4222',
          BIND_HOST: '0.0.0.0',
          AUTH_TOKEN_FILE: '/var/run/itb-auth/token',
        });
        // env wins over envFrom: no knob may be overridden there unseen.
        expect(
          (c.env ?? []).map((e) => e.name).filter((name) => KNOBS.includes(name)),
          c.name,
        ).toEqual([]);
        expect(c.image, c.name).toBe('image-transfer-bench:latest');
        expect(c.imagePullPolicy, c.name).toBe('IfNotPresent');
        // args, not command: the image's entrypoint stays, and execs them as they are.
        expect(c.command, c.name).toBeUndefined();
        expect(c.args, c.name).toEqual(['node', ...SERVICE_NODE_FLAGS, `dist/services/${c.name}/main.js`]);
      }

      for (const [workload, c] of [
        [deployment(objects, 'itb-receiver'), receiver],
        [job(objects, 'itb-transmitter'), transmitter],
      ] as const) {
        const config = containerConfig(objects, c);
        const spec = podSpec(workload);
        const mountAt = (dir: string) => c.volumeMounts?.find((m) => m.mountPath === dir);
        const volume = (name: string | undefined) => spec.volumes?.find((v) => v.name === name);
        // Every broker URL names a Service of the render, on a port it serves.
        for (const url of new Set(Object.values(config.urls))) {
          const { hostname, port } = new URL(url ?? 'missing://');
          expect(
            service(objects, hostname).spec?.ports?.map((p) => String(p.port)),
            url,
          ).toContain(port);
        }
        // The user's Secret itb-auth, read-only, the token readable by owner and group (fsGroup), mounted
        // as the file itself (subPath): a regular file, where a whole secret volume's would be a link,
        // which the services refuse.
        expect(mountAt(config.authTokenFile), c.name).toMatchObject({
          readOnly: true,
          subPath: path.posix.basename(config.authTokenFile),
        });
        expect(volume(mountAt(config.authTokenFile)?.name)?.secret, c.name).toEqual({
          secretName: 'itb-auth',
          items: [{ key: 'token', path: path.posix.basename(config.authTokenFile) }],
          defaultMode: 0o440,
        });
        // The root filesystem is read-only: /tmp, and the folder the receiver's output folder is made in, are
        // emptyDirs (an emptyDir is 0777 without the sticky bit: not an OUTPUT_DIR the receiver accepts).
        const writable = c.name === 'receiver' ? ['/tmp', path.posix.dirname(config.outputDir)] : ['/tmp'];
        for (const dir of writable) expect(volume(mountAt(dir)?.name)?.emptyDir, `${c.name} ${dir}`).toEqual({});
        if (c.name === 'receiver') expect(config.outputDir).toBe('/app/output/results');
      }
    },
  );

  it('knobs.env (written by npm run generate) holds exactly the knobs, and the receivers number RECEIVERS', () => {
    const knobs = readEnvFile(projectPath('deploy', 'k8s', 'overlays', 'default', 'knobs.env'));
    expect(knobs.map(([name]) => name)).toEqual(KNOBS);
    // kustomize read the same file.
    expect(knobsConfigMap(objectsOf('default')).data).toEqual(Object.fromEntries(knobs));
    const receiver = deployment(objectsOf('default'), 'itb-receiver');
    expect(receiver.spec?.replicas).toBe(
      containerConfig(objectsOf('default'), container(podSpec(receiver), 'receiver')).receivers,
    );
  });

  it('Redis and NATS run as docker-compose.yml runs them, ready when they answer', () => {
    const objects = objectsOf('default');
    const redis = container(podSpec(deployment(objects, 'itb-redis')), 'redis');
    expect(redis.image).toBe('redis:7');
    expect(redis.args).toEqual(['redis-server', '--save', '', '--appendonly', 'no', ...REDIS_IMAGE_LIMIT_ARGS]);
    expect(redis.readinessProbe?.exec?.command).toEqual(['redis-cli', 'ping']);
    // The official image's redis user, with its working directory writable.
    expect(podSpec(deployment(objects, 'itb-redis')).securityContext).toMatchObject({ runAsUser: 999 });
    expect(redis.volumeMounts?.map((m) => m.mountPath)).toEqual(['/data']);

    const nats = container(podSpec(deployment(objects, 'itb-nats')), 'nats');
    expect(nats.image).toBe('nats:2-alpine');
    expect(nats.args).toEqual(['nats-server', '--config', '/etc/itb/nats-server.conf']);
    expect(nats.readinessProbe?.httpGet).toEqual({ path: '/healthz', port: 'monitor' });
    expect(nats.ports?.find((p) => p.name === 'monitor')?.containerPort).toBe(8222);
    // The config compose mounts, word for word, mounted where the command reads it.
    const natsConfig = find(objects, 'ConfigMap', 'itb-nats-config') as unknown as IConfigMap;
    expect(natsConfig.data).toEqual({
      'nats-server.conf': readFileSync(projectPath('scripts', 'docker', 'nats-server.conf'), 'utf8'),
    });
    // And an empty directory for JetStream's store (memory streams only: it stays empty).
    expect(nats.volumeMounts).toEqual([
      { name: 'config', mountPath: '/etc/itb', readOnly: true },
      { name: 'jetstream', mountPath: '/tmp' },
    ]);
    expect(podSpec(deployment(objects, 'itb-nats')).volumes).toEqual([
      { name: 'config', configMap: { name: 'itb-nats-config' } },
      { name: 'jetstream', emptyDir: {} },
    ]);
  });

  it(
    'Mosquitto and RabbitMQ run as docker-compose.yml runs them, with its configuration files, ready when they ' +
      'answer',
    () => {
      const objects = objectsOf('default');
      const mqtt = container(podSpec(deployment(objects, 'itb-mqtt')), 'mqtt');
      expect(mqtt.image).toBe('eclipse-mosquitto:2');
      expect(mqtt.args).toEqual(['mosquitto', '-c', '/etc/itb/mosquitto.conf']);
      expect(mqtt.readinessProbe?.exec?.command?.[0]).toBe('mosquitto_sub');
      const mqttConfig = find(objects, 'ConfigMap', 'itb-mqtt-config') as unknown as IConfigMap;
      expect(mqttConfig.data).toEqual({
        'mosquitto.conf': readFileSync(projectPath('scripts', 'docker', 'mosquitto.conf'), 'utf8'),
      });
      expect(mqtt.volumeMounts).toEqual([{ name: 'config', mountPath: '/etc/itb', readOnly: true }]);

      const rabbitmq = container(podSpec(deployment(objects, 'itb-rabbitmq')), 'rabbitmq');
      expect(rabbitmq.image).toBe('rabbitmq:3');
      expect(rabbitmq.readinessProbe?.exec?.command).toEqual(['rabbitmq-diagnostics', '-q', 'ping']);
      const rabbitmqConfig = find(objects, 'ConfigMap', 'itb-rabbitmq-config') as unknown as IConfigMap;
      expect(rabbitmqConfig.data).toEqual({
        'rabbitmq.conf': readFileSync(projectPath('scripts', 'docker', 'rabbitmq.conf'), 'utf8'),
      });
      expect(rabbitmq.volumeMounts?.map((m) => m.mountPath)).toEqual([
        '/etc/rabbitmq/rabbitmq.conf',
        '/var/lib/rabbitmq',
        '/tmp',
      ]);
    },
  );

  it(
    'everything is in the namespace image-transfer-bench, ' + "labelled as the benchmark's, and no Secret is rendered",
    () => {
      for (const object of objectsOf('default')) {
        if (object.kind === 'Namespace') expect(object.metadata.name).toBe(NAMESPACE);
        else expect(object.metadata.namespace, label(object)).toBe(NAMESPACE);
        expect(object.metadata.labels?.['app.kubernetes.io/name'], label(object)).toBe('image-transfer-bench');
      }
      // The user creates itb-auth: a secret is never committed nor rendered.
      expect(objectsOf('default').filter((o) => o.kind === 'Secret')).toEqual([]);
    },
  );
});
