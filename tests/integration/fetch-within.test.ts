import { spawnSync } from 'node:child_process';
import http from 'node:http';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { projectPath } from '../../services/shared/paths.js';
import { fetchWithin } from '../../services/shared/waits.js';

// compose-check died in CI with exit code 13 and no word: its top-level await was polling the report with
// fetch and AbortSignal.timeout, whose timer does not hold the event loop, and a request with no live handle of
// its own left nothing that did. These tests start a script the same way, under a top-level await, with a fetch
// that holds no handle and never answers (it only hears its abort), as undici's was.

/** A fetch that never answers and holds nothing open: it settles only when its signal aborts. */
const HANDLELESS_FETCH = `globalThis.fetch = (_url, init) => new Promise((_, reject) => {
  init.signal.addEventListener('abort', () => reject(init.signal.reason));
});`;

/** Runs `body` as an ES module script under a top-level await; its exit code and output. */
function runScript(body: string): { status: number | null; stdout: string } {
  const waits = pathToFileURL(projectPath('dist', 'services', 'shared', 'waits.js')).href;
  const script = `import { fetchWithin } from ${JSON.stringify(waits)};\n${HANDLELESS_FETCH}\n${body}`;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { status: result.status, stdout: result.stdout };
}

describe('fetchWithin under a top-level await', () => {
  it('times out a request that holds no handle, with its reason, instead of ending the process', () => {
    const { status, stdout } = runScript(`
      const text = await fetchWithin('http://127.0.0.1:9/', 300, (r) => r.text())
        .catch((err) => 'rejected: ' + err.message);
      console.log(text);`);
    expect(stdout.trim()).toBe('rejected: GET http://127.0.0.1:9/ took longer than 300 ms');
    expect(status).toBe(0);
  });

  it('AbortSignal.timeout in its place ends the script at once with exit code 13: what it replaces', () => {
    const { status, stdout } = runScript(`
      const text = await fetch('http://127.0.0.1:9/', { signal: AbortSignal.timeout(300) }).catch(() => 'rejected');
      console.log(text);`);
    expect(stdout).toBe('');
    expect(status).toBe(13);
  });
});

describe('fetchWithin over a real socket', () => {
  let server: http.Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
  });

  /** A server on a free loopback port; its URL. */
  async function serve(handler: http.RequestListener): Promise<string> {
    server = http.createServer(handler);
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    return `http://127.0.0.1:${address.port}/`;
  }

  it('returns what `read` makes of the answer', async () => {
    const url = await serve((_req, res) => res.end('the report'));
    await expect(fetchWithin(url, 5000, (response) => response.text())).resolves.toBe('the report');
  });

  it('rejects with the timeout and aborts the request, so the server sees its connection close', async () => {
    let closed: () => void = () => {};
    const connectionClosed = new Promise<void>((resolve) => {
      closed = resolve;
    });
    const url = await serve((req) => req.socket.once('close', () => closed()));
    await expect(fetchWithin(url, 300, (response) => response.text())).rejects.toThrow(
      `GET ${url} took longer than 300 ms`,
    );
    await expect(Promise.race([connectionClosed.then(() => 'closed'), sleepFor(5000)])).resolves.toBe('closed');
  });
});

/** Resolves 'still open' after `ms`. */
function sleepFor(ms: number): Promise<string> {
  return new Promise((resolve) => setTimeout(() => resolve('still open'), ms));
}
