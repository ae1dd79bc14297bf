import { execFileSync } from 'node:child_process';

// Runs once before any test file: the tools the tests drive besides npm packages. A missing one
// stops the run with one message saying how to install it, rather than a stack of failures.

const APT = 'bash scripts/install-test-tools.sh (on Debian or Ubuntu)';

/** The programs the tests start, what each is for, and how to get it. */
const TOOLS: readonly { command: string; usedFor: string; install: string }[] = [
  { command: 'redis-server', usedFor: 'a private Redis per test', install: APT },
  { command: 'nats-server', usedFor: 'a private NATS server per test', install: APT },
  { command: 'docker-compose', usedFor: 'resolving docker-compose.yml with a real Compose implementation', install: APT },
  { command: 'chromium', usedFor: 'opening report.html in a browser', install: APT },
  // Debian's kubernetes-client (1.20) has a kustomize too old for deploy/k8s.
  { command: 'kubectl', usedFor: 'rendering deploy/k8s with kustomize (kubectl 1.27 or later)', install: 'https://kubernetes.io/docs/tasks/tools/ (or your cloud SDK\'s kubectl)' },
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
  const list = missing.map((tool) => `  ${tool.command}: ${tool.usedFor}; install: ${tool.install}`).join('\n');
  throw new Error(`npm test needs ${missing.length === 1 ? 'a program' : 'programs'} not on PATH:\n${list}`);
}
