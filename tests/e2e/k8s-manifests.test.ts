import { readdirSync, readFileSync } from 'node:fs';
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import type { IContainer } from 'kubernetes-models/v1/Container';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { projectPath } from '../../services/shared/paths.js';
import {
  container,
  deployment,
  label,
  MODELS,
  parseManifests,
  podSpec,
  schemaProblems,
  typeProblems,
  type K8sObject,
} from '../helpers/k8s.js';

// deploy/k8s as written, with no binary: every object the kustomizations list, checked against
// the Kubernetes schema and types (tests/helpers/k8s.ts). What kustomize makes of them (labels,
// namespace, knobs, the one-node patches) needs kubectl, which Debian lacks: k8s-kustomize.test.ts,
// run by .ci/run.

/** The kustomizations, by folder under deploy/k8s, whose resources include manifest files. */
const KUSTOMIZATIONS = ['base', 'overlays/default'] as const;

/** A kustomization's `resources`, those that are files (a folder such as ../../base is another kustomization). */
function resourceFiles(folder: string): string[] {
  const kustomization = parse(readFileSync(projectPath('deploy', 'k8s', folder, 'kustomization.yaml'), 'utf8')) as {
    resources?: string[];
  };
  return (kustomization.resources ?? []).filter((resource) => resource.endsWith('.yaml'));
}

let objects: K8sObject[] | undefined;
/** Every object of every listed manifest file, read once. */
function manifests(): K8sObject[] {
  objects ??= KUSTOMIZATIONS.flatMap((folder) =>
    resourceFiles(folder).flatMap((file) =>
      parseManifests(readFileSync(projectPath('deploy', 'k8s', folder, file), 'utf8'), `deploy/k8s/${folder}/${file}`),
    ),
  );
  return objects;
}

describe('deploy/k8s manifests as written', () => {
  it('every .yaml beside a kustomization.yaml is one of its resources, so none escapes the checks', () => {
    for (const folder of KUSTOMIZATIONS) {
      const files = readdirSync(projectPath('deploy', 'k8s', folder)).filter(
        (f) => f.endsWith('.yaml') && f !== 'kustomization.yaml',
      );
      expect(resourceFiles(folder).sort(), folder).toEqual(files.sort());
    }
  });

  it('every object is a known kind and valid against the Kubernetes schema', () => {
    expect(manifests().map(label).sort()).toEqual([
      'ConfigMap itb-mqtt-config',
      'ConfigMap itb-nats-config',
      'ConfigMap itb-rabbitmq-config',
      'Deployment itb-mqtt',
      'Deployment itb-nats',
      'Deployment itb-rabbitmq',
      'Deployment itb-receiver',
      'Deployment itb-redis',
      'Job itb-transmitter',
      'Namespace image-transfer-bench',
      'Service itb-mqtt',
      'Service itb-nats',
      'Service itb-rabbitmq',
      'Service itb-receiver',
      'Service itb-redis',
    ]);
    expect(schemaProblems(manifests())).toEqual([]);
  });

  it('no object has a field the Kubernetes API does not know', () => {
    expect(typeProblems(manifests())).toEqual([]);
  });
});

describe('the checks refuse a broken manifest, naming the field', () => {
  /** The manifests' objects, with the receiver's Deployment handed to `breakIt`. */
  function brokenReceiver(breakIt: (receiver: IDeployment) => void): K8sObject[] {
    const copy = structuredClone(manifests());
    breakIt(deployment(copy, 'itb-receiver'));
    return copy;
  }

  it('a wrong type: replicas "two"', () => {
    const objects = brokenReceiver((receiver) => {
      receiver.spec!.replicas = 'two' as unknown as number;
    });
    expect(schemaProblems(objects)).toEqual(['Deployment itb-receiver: data/spec/replicas must be integer']);
    // TypeScript refuses it too, naming the types only.
    expect(typeProblems(objects)).toEqual([
      expect.stringMatching(/^Deployment itb-receiver: error TS2322: Type 'string' is not assignable to type 'number'/),
    ]);
  });

  it('a missing required field: a container without a name', () => {
    const objects = brokenReceiver((receiver) => {
      delete (podSpec(receiver).containers[0] as Partial<IContainer>).name;
    });
    expect(schemaProblems(objects)).toEqual([
      'Deployment itb-receiver: data/spec/template/spec/containers/0 must have required property name',
    ]);
    expect(typeProblems(objects)).toEqual([
      expect.stringMatching(
        new RegExp(
          /^Deployment itb-receiver: error TS2741: Property '"name"' is missing in type .* but required /.source +
            /in type 'IContainer'/.source,
        ),
      ),
    ]);
  });

  it('a misspelt field: readinesProbe, which the schema lets through and the type check does not', () => {
    const objects = brokenReceiver((receiver) => {
      const c = container(podSpec(receiver), 'receiver');
      Object.assign(c, { readinesProbe: c.readinessProbe });
      delete c.readinessProbe;
    });
    expect(schemaProblems(objects)).toEqual([]);
    expect(typeProblems(objects)).toEqual([
      expect.stringMatching(
        new RegExp(
          /^Deployment itb-receiver: error TS2353: Object literal may only specify known properties, /.source +
            /and '"readinesProbe"' does not exist in type 'IContainer'/.source,
        ),
      ),
    ]);
  });

  it('a kind without a schema here', () => {
    const secret: K8sObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'itb-auth' },
      stringData: { token: 'x' },
    };
    expect(schemaProblems([secret])).toEqual([
      `Secret itb-auth: no schema for v1/Secret; known: ${Object.keys(MODELS).join(', ')}`,
    ]);
  });
});
