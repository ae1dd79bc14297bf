import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import { Job, type IJob } from 'kubernetes-models/batch/v1/Job';
import { ConfigMap, type IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IContainer } from 'kubernetes-models/v1/Container';
import { Namespace, type INamespace } from 'kubernetes-models/v1/Namespace';
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec';
import { Service, type IService } from 'kubernetes-models/v1/Service';
import { parseAllDocuments } from 'yaml';
import { projectPath } from '../../services/shared/paths.js';

// deploy/k8s checked without a cluster: every object validated against Kubernetes' own OpenAPI
// schema (kubernetes-models), and unknown fields, which that schema lets through, refused by
// TypeScript's excess-property check against the same package's interfaces. Shared by the check of
// the manifests as written (npm test) and of the overlays kubectl's kustomize renders (.ci/run).

/** One Kubernetes object, as a manifest holds it or kustomize renders it. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
}

/**
 * Every kind the manifests may hold, by `apiVersion/kind` (also its module in kubernetes-models),
 * with the class whose validate() checks it against the schema. Any other kind is refused.
 */
export const MODELS: Readonly<Record<string, (data: K8sObject) => { validate(): void }>> = {
  'v1/Namespace': (data) => new Namespace(data as unknown as INamespace),
  'v1/ConfigMap': (data) => new ConfigMap(data as unknown as IConfigMap),
  'v1/Service': (data) => new Service(data as unknown as IService),
  'apps/v1/Deployment': (data) => new Deployment(data as unknown as IDeployment),
  'batch/v1/Job': (data) => new Job(data as unknown as IJob),
};

/** The objects of a multi-document YAML text; `source` names it when it does not parse. */
export function parseManifests(text: string, source: string): K8sObject[] {
  return parseAllDocuments(text).map((doc) => {
    if (doc.errors.length > 0)
      throw new Error(`${source} is YAML that does not parse: ${doc.errors.map((e) => e.message).join('; ')}`);
    return doc.toJS() as K8sObject;
  });
}

/** `Kind name`, as the problems name an object. */
export function label(object: K8sObject): string {
  return `${object.kind} ${object.metadata.name}`;
}

/** What the Kubernetes schema (kubernetes-models) refuses, one line per object; an unknown kind is refused too. */
export function schemaProblems(objects: readonly K8sObject[]): string[] {
  return objects.flatMap((object) => {
    const model = MODELS[`${object.apiVersion}/${object.kind}`];
    if (!model)
      return [
        `${label(object)}: no schema for ${object.apiVersion}/${object.kind}; known: ${Object.keys(MODELS).join(', ')}`,
      ];
    try {
      model(object).validate();
      return [];
    } catch (err) {
      return [`${label(object)}: ${(err as Error).message}`];
    }
  });
}

/**
 * What TypeScript refuses when each object is an object literal typed with its kubernetes-models
 * interface: above all a field the interface lacks, at any depth (the excess-property check), which
 * the schema lets through. One line per error, naming the object. The .mts file and its tsconfig
 * live in a temporary folder, removed afterwards.
 */
export function typeProblems(objects: readonly K8sObject[]): string[] {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'itb-k8s-types-'));
  try {
    const keys = [...new Set(objects.map((o) => `${o.apiVersion}/${o.kind}`))];
    const lines = keys.map(
      (key, i) =>
        `import type { I${key.split('/').at(-1)} as T${i} } from ` +
        JSON.stringify(projectPath('node_modules', 'kubernetes-models', `${key}.js`)) +
        `;`,
    );
    const starts: { line: number; label: string }[] = [];
    objects.forEach((object, i) => {
      starts.push({ line: lines.length + 1, label: label(object) });
      lines.push(
        ...(
          `export const object${i}: T` +
          keys.indexOf(`${object.apiVersion}/${object.kind}`) +
          ` = ${JSON.stringify(object, null, 1)};`
        ).split('\n'),
      );
    });
    writeFileSync(path.join(dir, 'objects.mts'), `${lines.join('\n')}\n`);
    const compilerOptions = {
      strict: true,
      module: 'nodenext',
      moduleResolution: 'nodenext',
      target: 'es2022',
      noEmit: true,
      skipLibCheck: true,
      types: [],
    };
    writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['objects.mts'] }));
    try {
      execFileSync(
        process.execPath,
        [projectPath('node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json', '--pretty', 'false'],
        { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
      );
      return [];
    } catch (err) {
      const { stdout = '', stderr = '' } = err as { stdout?: string; stderr?: string };
      const problems: string[] = [];
      for (const line of `${stdout}${stderr}`.split('\n').filter((l) => l.trim() !== '')) {
        const at = /^objects\.mts\((\d+),\d+\): (.*)$/.exec(line);
        // Lines that go on an error start with spaces; anything else (a tsconfig error) stands alone.
        if (!at && line.startsWith(' ') && problems.length > 0) problems[problems.length - 1] += ` ${line.trim()}`;
        else if (!at) problems.push(`tsc: ${line}`);
        else problems.push(`${starts.filter((s) => s.line <= Number(at[1])).at(-1)?.label ?? 'imports'}: ${at[2]}`);
      }
      return problems.length > 0 ? problems : [`tsc failed without a message: ${(err as Error).message}`];
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The object of that kind and name; throws naming the objects there are. */
export function find(objects: readonly K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} among ${objects.map(label).join(', ')}`);
  return found;
}
/** The Deployment, Job or Service of that name. */
export const deployment = (objects: readonly K8sObject[], name: string): IDeployment =>
  find(objects, 'Deployment', name) as unknown as IDeployment;
export const job = (objects: readonly K8sObject[], name: string): IJob => find(objects, 'Job', name) as unknown as IJob;
export const service = (objects: readonly K8sObject[], name: string): IService =>
  find(objects, 'Service', name) as unknown as IService;

/** A workload's pod spec; throws when it has none. */
export function podSpec(workload: IDeployment | IJob): IPodSpec {
  const spec = workload.spec?.template.spec;
  if (!spec) throw new Error(`${workload.kind} ${workload.metadata?.name} has no pod spec`);
  return spec;
}
/** The pod spec's container of that name. */
export function container(spec: IPodSpec, name: string): IContainer {
  const found = spec.containers.find((c) => c.name === name);
  if (!found) throw new Error(`no container ${name}`);
  return found;
}
