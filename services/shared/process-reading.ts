import { readdir, readFile, readlink } from 'node:fs/promises';
import os from 'node:os';
import { isLoopbackHost } from '../core/config/link.js';
import type { BrokerReading } from '../core/model/cost.js';

// A broker that is a process of this host (a private server npm start began, or the machine's own
// service) can be read from /proc like any process: its CPU totals and its resident memory. This
// is how a broker with no CPU figure of its own over its protocol (Mosquitto, RabbitMQ without its
// management plugin, NATS without its monitoring port) gets one. Linux only; elsewhere nothing is found.

/**
 * Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks. It is 100 on every architecture Linux
 * builds for user space (x86, arm64, riscv), whatever the kernel's own HZ, so CPU read here has 10 ms resolution.
 */
export const USER_HZ = 100;

/** A listening TCP socket in /proc/net/tcp{,6}: state 0A. */
const LISTEN_STATE = '0A';

/** The inodes of the TCP sockets of this network namespace listening on `port`, any address. */
async function listeningInodes(port: number): Promise<Set<string>> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const text = await readFile(table, 'latin1').catch(() => '');
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      const inode = fields[9];
      if (local === undefined || inode === undefined || fields[3] !== LISTEN_STATE) continue;
      if (Number.parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port) inodes.add(inode);
    }
  }
  return inodes;
}

/**
 * The pid of the process of this host (and network namespace) that listens on TCP `port`; undefined when none
 * can be seen (none listens, or its /proc/<pid>/fd is another user's).
 */
export async function listeningPid(port: number): Promise<number | undefined> {
  const inodes = await listeningInodes(port);
  if (inodes.size === 0) return undefined;
  const wanted = new Set([...inodes].map((inode) => `socket:[${inode}]`));
  const pids = (await readdir('/proc').catch(() => [] as string[])).filter((name) => /^\d+$/.test(name));
  for (const pid of pids) {
    const fds = await readdir(`/proc/${pid}/fd`).catch(() => [] as string[]);
    for (const fd of fds) {
      const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
      if (wanted.has(target)) return Number(pid);
    }
  }
  return undefined;
}

/** The fields of /proc/<pid>/stat after the command's closing parenthesis (which may itself hold spaces). */
function statFields(stat: string): string[] {
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** A process's CPU totals and resident memory from its /proc/<pid>/stat and status text. */
export function processReading(stat: string, status: string): BrokerReading {
  const fields = statFields(stat);
  // utime and stime are the stat file's 14th and 15th fields; fields[0] here is the 3rd (state).
  const ticksToMicros = (field: string | undefined): number => (Number(field) * 1e6) / USER_HZ;
  const rssKib = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  return {
    cpuUserMicros: ticksToMicros(fields[11]),
    cpuSystemMicros: ticksToMicros(fields[12]),
    rssBytes: rssKib === undefined ? 0 : Number(rssKib) * 1024,
  };
}

/** Process `pid`'s totals now; rejects when it is gone. */
export async function readProcess(pid: number): Promise<BrokerReading> {
  const [stat, status] = await Promise.all([
    readFile(`/proc/${pid}/stat`, 'latin1'),
    readFile(`/proc/${pid}/status`, 'latin1'),
  ]);
  return processReading(stat, status);
}

/** The command name of process `pid` (its /proc comm), for a log line. */
export async function processName(pid: number): Promise<string> {
  return (await readFile(`/proc/${pid}/comm`, 'latin1').catch(() => '?')).trim();
}

/** True when `host` names this machine: loopback, or one of its interfaces' addresses. */
export function isThisHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  if (isLoopbackHost(bare)) return true;
  return Object.values(os.networkInterfaces()).some((addresses) =>
    (addresses ?? []).some((address) => address.address === bare),
  );
}
