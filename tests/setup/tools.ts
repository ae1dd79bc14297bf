import { execFileSync } from 'node:child_process';
import type { TestProject } from 'vitest/node';

// Each project's global setup, before any of its test files: the programs its tests start besides
// npm packages. A missing one stops the run with one message saying how to install it, rather than
// a stack of failures. vitest reports an error thrown here as an unhandled error after a misleading
// "No test files found" (no file ran), so the message is printed here and the process exits
// before vitest says anything else.

const APT = 'bash scripts/install-test-tools.sh (on Debian or Ubuntu)';

interface Tool {
  command: string;
  usedFor: string;
  install: string;
}

const REDIS: Tool = { command: 'redis-server', usedFor: 'a private Redis per test', install: APT };
const NATS: Tool = { command: 'nats-server', usedFor: 'a private NATS server per test', install: APT };
const RABBITMQ: Tool = { command: 'rabbitmq-server', usedFor: "the integration tests' private RabbitMQ", install: APT };

/** The programs each vitest project's tests start, what each is for, and how to get it; unit needs none. */
const TOOLS_BY_PROJECT: Readonly<Record<string, readonly Tool[]>> = {
  unit: [],
  integration: [REDIS, NATS, RABBITMQ],
  'integration-mocks': [REDIS, NATS, RABBITMQ],
  e2e: [
    REDIS,
    NATS,
    {
      command: 'docker-compose',
      usedFor: 'resolving docker-compose.yml with a real Compose implementation',
      install: APT,
    },
    { command: 'chromium', usedFor: 'opening report.html in a browser', install: APT },
    { command: 'pgrep', usedFor: "finding npm start's receiver processes (procps)", install: APT },
  ],
  // Root, network namespaces and a user namespace besides: tests/helpers/privileges.ts probes those.
  privileged: [REDIS],
  // Debian's kubernetes-client (1.20) has a kustomize too old for deploy/k8s.
  k8s: [
    {
      command: 'kubectl',
      usedFor: 'rendering deploy/k8s with kustomize (kubectl 1.27 or later)',
      install: "https://kubernetes.io/docs/tasks/tools/ (or your cloud SDK's kubectl)",
    },
  ],
};

function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** What is missing for `projectName`'s tests, as the message the run stops with; null when nothing is. */
function missingToolsMessage(projectName: string): string | null {
  const tools = TOOLS_BY_PROJECT[projectName];
  if (!tools)
    return (
      `no tool list for the vitest project "${projectName}" in tests/setup/tools.ts; known: ` +
      Object.keys(TOOLS_BY_PROJECT).join(', ')
    );
  const missing = tools.filter((tool) => !onPath(tool.command));
  if (missing.length === 0) return null;
  const list = missing.map((tool) => `  ${tool.command}: ${tool.usedFor}; install: ${tool.install}`).join('\n');
  return `The ${projectName} tests need ${missing.length === 1 ? 'a program' : 'programs'} not on PATH:\n${list}`;
}

/** vitest's global setup of a project: exits 1 with the message when a tool its tests use is missing. */
export default function checkTools(project: TestProject): void {
  const message = missingToolsMessage(project.name);
  if (message === null) return;
  process.stderr.write(`\n${message}\n`);
  process.exit(1);
}
