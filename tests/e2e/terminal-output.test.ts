import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopChild } from '../../services/shared/child-process.js';
import { freePort } from '../../services/shared/net.js';
import { SERVICE_NODE_FLAGS } from '../../services/shared/node-flags.js';
import { projectPath } from '../../services/shared/paths.js';
import { withoutColour } from '../helpers/harness.js';
import { freePortsEnv, startService, TEST_AUTH_TOKEN_FILE } from '../helpers/processes.js';

// What a person sees on a terminal: `npm start` and the receiver run in a pseudo-terminal made by
// util-linux `script`, with a Redis URL nobody answers so warnings and errors come while the
// progress bars are drawn. The captured stream is checked as written, cursor sequences included.

let outputDir: string;
beforeAll(async () => {
  outputDir = await mkdtemp(path.join(os.tmpdir(), 'itb-terminal-'));
});
afterAll(async () => {
  await rm(outputDir, { recursive: true, force: true });
});

// A log line as the terminal shows it: "WARN (receiver): ...".
const HUMAN_LOG_LINE = /(?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL) \((\w+)\): /g;
// A progress bar's text: "ZeroMQ |████░░| 3/20".
const BAR = /\|[█░]+\| \d+\/\d+/;

/**
 * Runs `command` in a pseudo-terminal 100 columns wide (log lines are wider: they wrap); resolves
 * with everything the terminal received and the exit code.
 */
function inTerminal(
  command: readonly string[],
  env: Record<string, string>,
  until?: RegExp,
): Promise<{ code: number | null; screen: string }> {
  const quoted = command.map((word) => `'${word.replaceAll("'", `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-qfec', `stty cols 100 rows 50 && exec ${quoted}`, '/dev/null'], {
    env: { PATH: process.env.PATH ?? '', TERM: 'xterm-256color', AUTH_TOKEN_FILE: TEST_AUTH_TOKEN_FILE, ...env },
    // script's own stderr ("Session terminated, killing shell...") is not what the terminal shows.
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let screen = '';
  let stopping = false;
  child.stdout.on('data', (data: Buffer) => {
    screen += data.toString();
    // A service that runs until stopped: stopped once it printed what the test waits for.
    if (!stopping && until?.test(withoutColour(screen))) {
      stopping = true;
      void stopChild(child, 5000);
    }
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, screen })));
}

/**
 * Every place where a human log line starts in the terminal stream, with whether it sits on rows
 * of its own: it starts at column 1 with nothing below it (the stream's start, after a newline, or
 * where the cursor went to column 1 and cleared the screen below, "ESC[1G ESC[0J", as over the
 * bars: a wrapped line's second row then holds no bar's remains) and runs to a newline with no
 * cursor movement in between.
 */
function logLines(screen: string): { service: string; text: string; ownRow: boolean; afterBars: boolean }[] {
  const stream = withoutColour(screen);
  const firstBar = stream.search(BAR);
  return [...stream.matchAll(HUMAN_LOG_LINE)].map((match) => {
    const before = stream.slice(0, match.index);
    const rest = /^[^\x1b\r\n]*\r?\n/.exec(stream.slice(match.index));
    return {
      service: match[1]!,
      text: rest?.[0].trimEnd() ?? stream.slice(match.index, match.index + 200),
      ownRow: rest !== null && /(?:^|\n|\x1b\[1G\x1b\[0J(?:\x1b\[2K)?)$/.test(before),
      afterBars: firstBar >= 0 && match.index > firstBar,
    };
  });
}

// npm start with the Redis section doomed: its listener cannot reach REDIS_URL.
async function doomedRedisEnv(): Promise<Record<string, string>> {
  return {
    ...(await freePortsEnv()),
    OUTPUT_DIR: outputDir,
    REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
    TRANSPORTS: 'zeromq,redis,tcp',
    IMAGE_COUNT: '20',
    // Over the receiver's 5 s Redis attempt before its control port opens, short of the 30 s default.
    CONNECT_TIMEOUT_MS: '12000',
  };
}

describe('terminal output', () => {
  it('npm start on a terminal: every log line is one human line on a row of its own, above the bars, the ' +
    "receiver's too", async () => {
    const { code, screen } = await inTerminal(
      [process.execPath, projectPath('dist', 'scripts', 'start.js')],
      await doomedRedisEnv(),
    );
    expect(code).toBe(1);
    expect(screen).not.toContain('{"level"');
    expect(screen).not.toContain('"msg"');
    const lines = logLines(screen);
    const misplaced = lines.filter((line) => !line.ownRow || BAR.test(line.text));
    expect(misplaced, screen.slice(-4000)).toEqual([]);
    // The mechanism was exercised: lines of both services came while bars were drawn.
    expect(lines.filter((line) => line.afterBars).map((line) => line.service)).toEqual(
      expect.arrayContaining(['transmitter', 'receiver']),
    );
    expect(lines.map((line) => line.text)).toContainEqual(
      expect.stringMatching(/^ERROR \(receiver\): redis: .*ECONNREFUSED/),
    );
  }, 90_000);

  it('npm start with stderr a pipe keeps JSON lines', async () => {
    const start = startService('start', await doomedRedisEnv());
    expect(await start.exited).toBe(1);
    const stderr = start.stderr();
    expect(stderr).not.toMatch(HUMAN_LOG_LINE);
    const entries = stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; service: string; msg: string });
    expect(entries.filter((entry) => entry.level >= 40).map((entry) => entry.service)).toEqual(
      expect.arrayContaining(['transmitter', 'receiver']),
    );
  }, 90_000);

  it('the receiver alone on a terminal prints human lines', async () => {
    const env = { ...(await doomedRedisEnv()), TRANSPORTS: 'redis' };
    const { screen } = await inTerminal(
      [process.execPath, ...SERVICE_NODE_FLAGS, projectPath('dist', 'services', 'receiver', 'main.js')],
      env,
      /ERROR \(receiver\)[^\n]*\n/,
    );
    expect(screen).not.toContain('{"level"');
    const lines = logLines(screen);
    expect(lines.map((line) => line.text)).toContainEqual(
      expect.stringMatching(
        new RegExp(
          /^ERROR \(receiver\): redis: listener failed to start.*\(no connection to Redis at /.source +
            /redis:\/\/127\.0\.0\.1:\d+ .*ECONNREFUSED.*\)$/.source,
        ),
      ),
    );
    expect(lines.every((line) => line.ownRow)).toBe(true);
  }, 60_000);
});
