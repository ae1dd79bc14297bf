import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ErrorCode } from '../../services/core/errors.js';
import { answersWith, startLocalProcessInTempDir, type LocalProcessSpec } from '../../services/shared/local-server.js';

// startLocalProcessInTempDir owns its directory: made before the start, removed when the process
// stops and when the start fails, whatever failed. The process here is node itself, serving a
// greeting read from the directory (so the directory is in use while it runs).

/** A node that greets every client with the first line of `greeting.txt` in `dir`. */
function greeter(dir: string, timeoutMs?: number): LocalProcessSpec {
  const script =
    `const text = require('fs').readFileSync(${JSON.stringify(path.join(dir, 'greeting.txt'))}, 'utf8');` +
    "require('net').createServer((s) => s.end(text)).listen(Number(process.argv[1]), '127.0.0.1');";
  return {
    command: process.execPath,
    args: (port) => ['-e', script, String(port)],
    ready: (port) => answersWith(port, 'hello'),
    timeoutMs,
  };
}

describe('startLocalProcessInTempDir', () => {
  it('runs the process with what prepare wrote; close() removes the directory, once however often called', async () => {
    const server = await startLocalProcessInTempDir('unit-greeter', async (dir) => {
      await writeFile(path.join(dir, 'greeting.txt'), 'hello from the directory');
      return greeter(dir);
    });
    expect(path.basename(server.dir)).toMatch(/^itb-unit-greeter-/);
    expect(existsSync(path.join(server.dir, 'greeting.txt'))).toBe(true);
    await expect(answersWith(server.port, 'hello from the directory')).resolves.toBe(true);
    const closing = server.close();
    expect(server.close()).toBe(closing);
    await closing;
    expect(existsSync(server.dir)).toBe(false);
    await expect(answersWith(server.port, 'hello')).resolves.toBe(false);
  });

  it("removes the directory and rejects with prepare's error when prepare fails", async () => {
    let seenDir = '';
    const failing = startLocalProcessInTempDir('unit-prepare', async (dir) => {
      seenDir = dir;
      await writeFile(path.join(dir, 'half-written.conf'), 'x');
      throw new Error('prepare failed on purpose');
    });
    await expect(failing).rejects.toThrow('prepare failed on purpose');
    expect(seenDir).not.toBe('');
    expect(existsSync(seenDir)).toBe(false);
  });

  it('removes the directory when the command is not on PATH', async () => {
    let seenDir = '';
    const failing = startLocalProcessInTempDir('unit-missing', async (dir) => {
      seenDir = dir;
      return { ...greeter(dir), command: 'itb-no-such-command-7f3a' };
    });
    await expect(failing).rejects.toMatchObject({ code: ErrorCode.transport });
    expect(existsSync(seenDir)).toBe(false);
  });

  it('removes the directory when the process exits before it is ready', async () => {
    let seenDir = '';
    // No greeting.txt: the script throws reading it and node exits.
    const failing = startLocalProcessInTempDir('unit-exits', async (dir) => {
      seenDir = dir;
      return greeter(dir, 2000);
    });
    await expect(failing).rejects.toMatchObject({
      code: ErrorCode.transport,
      message: expect.stringContaining('was not ready'),
    });
    expect(existsSync(seenDir)).toBe(false);
  });
});
