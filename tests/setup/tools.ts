import { execFileSync } from 'node:child_process';

// Runs once before any test file: the tools the tests drive besides npm packages. A missing one
// stops the run with one message saying how to install it, rather than a stack of failures.

/** The programs the tests start, and what each is for. */
const TOOLS: readonly { command: string; usedFor: string }[] = [
  { command: 'redis-server', usedFor: 'a private Redis per test' },
  { command: 'nats-server', usedFor: 'a private NATS server per test' },
  { command: 'docker-compose', usedFor: 'resolving docker-compose.yml with a real Compose implementation' },
  { command: 'chromium', usedFor: 'opening report.html in a browser' },
];

function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** vitest's global setup: throws when a tool is missing. */
export default function checkTools(): void {
  const missing = TOOLS.filter((tool) => !onPath(tool.command));
  if (missing.length === 0) return;
  const list = missing.map((tool) => `  ${tool.command}: ${tool.usedFor}`).join('\n');
  throw new Error(`npm test needs ${missing.length === 1 ? 'a program' : 'programs'} not on PATH:\n${list}\nOn Debian or Ubuntu: bash scripts/install-test-tools.sh (apt-get install redis-server nats-server docker-compose chromium)`);
}
