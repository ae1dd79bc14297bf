import { readFileSync } from 'node:fs';
import os from 'node:os';
import { version as zeromqLibraryVersion } from 'zeromq';
import type { HostFacts } from '../core/report.js';
import { projectPath } from './paths.js';

/** The libraries under test, and the measuring ones, whose versions a report names. */
const REPORTED_LIBRARIES = ['fastify', '@fastify/websocket', 'ws', 'bufferutil', '@grpc/grpc-js', '@grpc/proto-loader', 'zeromq', 'ioredis', '@node-rs/xxhash', 'hdr-histogram-js', 'pino'];

function installedVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(projectPath('node_modules', name, 'package.json'), 'utf8')) as { version: string }).version;
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

let cached: HostFacts | undefined;

/** Facts about this machine and the installed libraries (read once per process). */
export function hostFacts(): HostFacts {
  cached ??= {
    hostname: os.hostname(),
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    cores: os.availableParallelism(),
    totalMemoryBytes: os.totalmem(),
    platform: `${os.platform()}-${os.arch()}`,
    kernel: os.release(),
    nodeVersion: process.version,
    bootId: readBootId(),
    libraries: { ...Object.fromEntries(REPORTED_LIBRARIES.map((name) => [name, installedVersion(name)])), libzmq: zeromqLibraryVersion },
  };
  return cached;
}
