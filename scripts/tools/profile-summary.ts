import { readFileSync } from 'node:fs';
import path from 'node:path';

// Where a process's CPU went, from the .cpuprofile files `node --cpu-prof` writes: self time by
// part (a package, node's own modules by area, this project's code, the garbage collector) and the
// functions that cost most. Idle time is left out, so the shares are of the time the process
// worked. Usage (the command docs/transports.md's profile came from):
//   NODE_OPTIONS="--cpu-prof --cpu-prof-dir=/tmp/prof" TRANSPORTS=grpc WINDOW=16 IMAGE_COUNT=5000 npm start
//   node dist/scripts/tools/profile-summary.js /tmp/prof/*.cpuprofile

/** The parts of a .cpuprofile this reads (Chrome DevTools' Profile type). */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

/** What a sampled frame is counted under: a package, an area of node's own code, ours, or V8's own. */
export function partOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const inPackage = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (inPackage) return inPackage[1]!;
  // node:internal/http2/core.js is node:http2's; node:internal/streams/writable.js, node:streams'.
  const area = /^node:internal\/([^/.]+)/.exec(url);
  if (area) return `node:${area[1]}`;
  if (url.startsWith('node:')) return url;
  if (url.includes('/dist/services/') || url.includes('/dist/scripts/')) return 'this project';
  return url;
}

/** Self time in microseconds, by key, of the samples not idle; and the total. */
function selfTimes(profile: CpuProfile, keyOf: (node: CpuProfile['nodes'][number]) => string) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const times = new Map<string, number>();
  let totalMicros = 0;
  profile.samples.forEach((id, i) => {
    const node = byId.get(id);
    if (node === undefined || node.callFrame.functionName === '(idle)') return;
    const micros = profile.timeDeltas[i] ?? 0;
    totalMicros += micros;
    const key = keyOf(node);
    times.set(key, (times.get(key) ?? 0) + micros);
  });
  return { times, totalMicros };
}

/** The `limit` largest entries of `times` as lines: ms, share of `totalMicros`, key. */
function ranked(times: Map<string, number>, totalMicros: number, limit: number): string[] {
  return [...times]
    .sort((a, b) => b[1] - a[1])
    .slice(0, limit)
    .map(([key, micros]) => {
      const share = `${((100 * micros) / totalMicros).toFixed(1)} %`.padStart(7);
      return `${(micros / 1000).toFixed(0).padStart(8)} ms ${share}  ${key}`;
    });
}

function main(): void {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error('usage: profile-summary <file.cpuprofile>...');
    process.exitCode = 2;
    return;
  }
  for (const file of files) {
    const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
    const parts = selfTimes(profile, (node) => partOf(node.callFrame.url, node.callFrame.functionName));
    const functions = selfTimes(profile, ({ callFrame }) => {
      const where = callFrame.url === '' ? '' : ` ${partOf(callFrame.url, '')}:${path.basename(callFrame.url)}`;
      return `${callFrame.functionName || '(anonymous)'}${where}:${callFrame.lineNumber + 1}`;
    });
    console.log(`${file}: ${(parts.totalMicros / 1000).toFixed(0)} ms of CPU sampled (idle left out)`);
    console.log('  by part:');
    for (const line of ranked(parts.times, parts.totalMicros, 12)) console.log(`  ${line}`);
    console.log('  by function (self time):');
    for (const line of ranked(functions.times, functions.totalMicros, 15)) console.log(`  ${line}`);
  }
}

if (process.argv[1]?.endsWith('profile-summary.js')) main();
