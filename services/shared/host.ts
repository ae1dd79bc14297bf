import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { HostFacts } from '../core/report/report.js';
import { projectPath } from './paths.js';

/** The measuring libraries every report names besides the transports' own. */
const MEASURING_LIBRARIES = ['@node-rs/xxhash', 'hdr-histogram-js', 'pino'];

function installedVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(projectPath('node_modules', name, 'package.json'), 'utf8')) as { version: string })
      .version;
  } catch {
    return 'not installed';
  }
}

function readBootId(): string | null {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return null;
  }
}

let machine: Omit<HostFacts, 'libraries'> | undefined;
const versions = new Map<string, string>();

/**
 * Facts about this machine, and the versions of the libraries `transportTable` uses (each
 * transport's `library.packages` and native ones, then the measuring ones). Pass the run's transports:
 * reading a native library's version loads it.
 */
export function hostFacts(
  transportTable: readonly {
    library: { packages: readonly string[]; nativeVersions?(): Readonly<Record<string, string>> };
  }[],
): HostFacts {
  const reported = [...new Set([...transportTable.flatMap((t) => t.library.packages), ...MEASURING_LIBRARIES])];
  machine ??= {
    hostname: os.hostname(),
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    cores: os.availableParallelism(),
    totalMemoryBytes: os.totalmem(),
    platform: `${os.platform()}-${os.arch()}`,
    kernel: os.release(),
    nodeVersion: process.version,
    nodeFlags: [...process.execArgv],
    bootId: readBootId(),
  };
  const version = (name: string): string => {
    let known = versions.get(name);
    if (known === undefined) {
      known = installedVersion(name);
      versions.set(name, known);
    }
    return known;
  };
  return {
    ...machine,
    libraries: {
      ...Object.fromEntries(reported.map((name) => [name, version(name)])),
      ...Object.assign({}, ...transportTable.map((t) => t.library.nativeVersions?.() ?? {})),
    },
  };
}
