import { constants, type Stats } from 'node:fs';
import { type FileHandle, lstat, open, readlink } from 'node:fs/promises';
import path from 'node:path';
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { errorMessage, ErrorCode, ItbError } from '../core/errors.js';
import { folderModeText, othersMayPlant } from './directories.js';
import { LATEST_LINK, RUN_FOLDER_NAME, RUNS_FOLDER } from '../core/report/run-files.js';

// The receiver's files as its open control port serves them (GET /results.json, /output.log, /, /runs/<folder>/…):
// by a name under OUTPUT_DIR made of fixed parts, never through a link. Each folder on the way is lstat'ed and must
// be a real folder of this process's user that others cannot plant in; the file is opened with O_NOFOLLOW (and
// O_NONBLOCK, so a FIFO planted at the name cannot hold the open) and judged on its descriptor: a regular file of
// this process's user, at most SERVED_FILE_LIMIT_BYTES. `latest` is read as a link (readlink) and must name a run
// folder; it is never followed. What is sent is read from that descriptor a chunk at a time, up to the size the file
// had when opened: a file is never read whole into memory, and one that grows while it is sent (output.log during a
// run) makes no endless answer; the chunks go through two buffers reused as the socket takes them (see
// copyServedPieces).

/**
 * Most bytes one answer serves of a file; a bigger one is refused (with the reason logged) rather than cut, since a
 * cut results.json is not JSON and a cut output.log has lost its verdict, which comes last. 1 GiB holds any
 * results.json (the runs page reads at most 64 MiB of one) and output.log's line for each of over 25 million images,
 * and bounds how long one anonymous GET keeps the receiver's disk and a control connection busy during a run.
 */
export const SERVED_FILE_LIMIT_BYTES = 1024 * 1024 * 1024;

/** Bytes read from a served file at a time: about what one answer holds of it (the socket's buffers aside). */
const CHUNK_BYTES = 64 * 1024;

/** Opening a file to serve: never through a link at its name, never waiting for a FIFO's writer. */
const OPEN_TO_SERVE = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/** A file opened to be served: its open handle and its size then, which is what is sent. */
export interface ServedFile {
  readonly path: string;
  readonly handle: FileHandle;
  readonly sizeBytes: number;
}

/**
 * What opening a file to serve gave: the file, nothing there (no run has written it yet), or a refusal with the
 * reason, which names the path (for the log, not for the anonymous client).
 */
export type ServedFileOpening =
  | { kind: 'file'; file: ServedFile }
  | { kind: 'absent' }
  | { kind: 'refused'; reason: string };

/** A part of an answer: a byte range of the served file (`fromByte` included, `toByte` not), or bytes of our own. */
export type ServedPiece = { fromByte: number; toByte: number } | Uint8Array;

/**
 * Opens `names` (a path's parts below `outputDir`, OUTPUT_DIR: fixed names and validated run folder names, never a
 * client's text) to be served; see the module comment. OUTPUT_DIR itself may be a link the user chose; nothing
 * below it may be.
 */
export async function openServedFile(
  outputDir: string,
  names: readonly string[],
  limitBytes = SERVED_FILE_LIMIT_BYTES,
): Promise<ServedFileOpening> {
  const last = names.at(-1);
  if (last === undefined || names.some((name) => !plainName(name)))
    return { kind: 'refused', reason: `${names.join('/')} is not a path of plain names` };
  const folders = await folderChain(outputDir, names.slice(0, -1));
  if (folders.kind !== 'folder') return folders;
  const filePath = path.join(folders.path, last);
  let handle: FileHandle;
  try {
    handle = await open(filePath, OPEN_TO_SERVE);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { kind: 'absent' };
    if (code === 'ELOOP') return { kind: 'refused', reason: `${filePath} ${await linkText(filePath)}` };
    return { kind: 'refused', reason: `${filePath}: ${reasonOf(err)}` };
  }
  let problem: string | undefined;
  let sizeBytes = 0;
  try {
    const stats = await handle.stat();
    sizeBytes = stats.size;
    problem = fileProblem(stats, limitBytes);
  } catch (err) {
    problem = `cannot be examined: ${reasonOf(err)}`;
  }
  if (problem === undefined) return { kind: 'file', file: { path: filePath, handle, sizeBytes } };
  await handle.close().catch(() => undefined);
  return { kind: 'refused', reason: `${filePath} ${problem}` };
}

/**
 * Opens `file` of the run `latest` in `baseDir` names (`baseDir` is OUTPUT_DIR, or a second receiver's folder in it):
 * the link is read, never followed, and must be the receiver's own naming `runs/<run folder>`.
 */
export async function openLatestRunFile(outputDir: string, baseDir: string, file: string): Promise<ServedFileOpening> {
  const below = namesBelow(outputDir, baseDir);
  if (below === undefined) return { kind: 'refused', reason: `${baseDir} is not inside OUTPUT_DIR ${outputDir}` };
  const folders = await folderChain(outputDir, below);
  if (folders.kind !== 'folder') return folders;
  const link = path.join(folders.path, LATEST_LINK);
  let target: string;
  try {
    const stats = await lstat(link);
    if (!stats.isSymbolicLink()) return { kind: 'refused', reason: `${link} is not a link (the receiver makes one)` };
    const owner = ownerProblem(stats);
    if (owner !== undefined) return { kind: 'refused', reason: `${link} ${owner}` };
    target = await readlink(link);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'absent' };
    return { kind: 'refused', reason: `${link}: ${reasonOf(err)}` };
  }
  const name = target.slice(RUNS_FOLDER.length + 1);
  if (target !== path.join(RUNS_FOLDER, name) || !RUN_FOLDER_NAME.test(name))
    return { kind: 'refused', reason: `${link} points at ${target}, not at a run folder (${RUNS_FOLDER}/<name>)` };
  return openServedFile(outputDir, [...below, RUNS_FOLDER, name, file]);
}

/** Opens `file` of run folder `folder` (a name of the run-folder form) under `baseDir`'s runs/. */
export async function openRunFile(
  outputDir: string,
  baseDir: string,
  folder: string,
  file: string,
): Promise<ServedFileOpening> {
  const below = namesBelow(outputDir, baseDir);
  if (below === undefined) return { kind: 'refused', reason: `${baseDir} is not inside OUTPUT_DIR ${outputDir}` };
  if (!RUN_FOLDER_NAME.test(folder)) return { kind: 'refused', reason: `${folder} is not a run folder's name` };
  return openServedFile(outputDir, [...below, RUNS_FOLDER, folder, file]);
}

/**
 * Why the folders `names` below `outputDir` are not each a real folder of this process's user that others cannot
 * plant in, or undefined when they are (or one is not there yet).
 */
export async function folderChainProblem(outputDir: string, names: readonly string[]): Promise<string | undefined> {
  const chain = await folderChain(outputDir, names);
  return chain.kind === 'refused' ? chain.reason : undefined;
}

/** The length of what {@link copyServedPieces} sends for `pieces`. */
export function servedLengthBytes(pieces: readonly ServedPiece[]): number {
  return pieces.reduce(
    (sum, piece) => sum + (piece instanceof Uint8Array ? piece.byteLength : piece.toByte - piece.fromByte),
    0,
  );
}

/**
 * Hands `pieces` of `file` (by default all of it, as opened) to `write` in order, a chunk at a time, and settles once
 * the last write has. File bytes come in one of two buffers, each filled again only once `write`'s promise for it
 * has settled: a fresh buffer per chunk would leave a served file's size in garbage, which V8 collects late (sending
 * a 300 MB file four times at once took the receiver's memory up by about 100 MiB that way). Rejects on the first
 * failed write or read, and when the file turns out shorter than when opened.
 */
export async function copyServedPieces(
  file: ServedFile,
  write: (chunk: Uint8Array) => Promise<void>,
  pieces: readonly ServedPiece[] = wholeFile(file),
): Promise<void> {
  const buffers = [Buffer.allocUnsafe(CHUNK_BYTES), Buffer.allocUnsafe(CHUNK_BYTES)] as const;
  let next = 0;
  // At most one write in flight, so the buffer filled next is never the one being written.
  let inFlight: Promise<void> = Promise.resolve();
  const send = async (chunk: Uint8Array): Promise<void> => {
    await inFlight;
    inFlight = write(chunk);
    // Awaited before the next chunk or at the end; a read failing first must not leave it unhandled.
    inFlight.catch(() => undefined);
  };
  for (const piece of pieces) {
    if (piece instanceof Uint8Array) {
      if (piece.byteLength > 0) await send(piece);
      continue;
    }
    for (let at = piece.fromByte; at < piece.toByte; ) {
      const buffer = buffers[next]!;
      next = 1 - next;
      const wanted = Math.min(CHUNK_BYTES, piece.toByte - at);
      const { bytesRead } = await file.handle.read(buffer, 0, wanted, at);
      if (bytesRead === 0)
        throw new ItbError(ErrorCode.read, `${file.path} ended at byte ${at}, before the ${file.sizeBytes} it held`);
      await send(buffer.subarray(0, bytesRead));
      at += bytesRead;
    }
  }
  await inFlight;
}

/** Up to `lengthBytes` of `file` from `fromByte`, no further than its size when opened: a small part, read whole. */
export async function readServedBytes(file: ServedFile, fromByte: number, lengthBytes: number): Promise<Buffer> {
  const wanted = Math.max(0, Math.min(lengthBytes, file.sizeBytes - fromByte));
  const { bytesRead, buffer } = await file.handle.read(Buffer.alloc(wanted), 0, wanted, fromByte);
  return buffer.subarray(0, bytesRead);
}

/** The whole file as opened, as one piece. */
export function wholeFile(file: ServedFile): ServedPiece[] {
  return [{ fromByte: 0, toByte: file.sizeBytes }];
}

/**
 * Answers with `pieces` of `file` (by default all of it) as `type`, with its length and the headers set on `reply`,
 * and closes the file. The answer is written here, not by fastify (reply.hijack): each chunk goes to the socket with
 * a callback, which {@link copyServedPieces} waits on before it reuses the buffer. A HEAD gets the headers and reads
 * nothing; a client gone, or a file cut while it is sent, ends the connection (the answer cannot be whole).
 */
export async function sendServedFile(
  reply: FastifyReply,
  file: ServedFile,
  type: string,
  pieces: readonly ServedPiece[] = wholeFile(file),
): Promise<void> {
  void reply.type(type).header('content-length', String(servedLengthBytes(pieces)));
  reply.hijack();
  const response = reply.raw;
  try {
    response.writeHead(reply.statusCode, reply.getHeaders() as OutgoingHttpHeaders);
    if (reply.request.method !== 'HEAD') await copyServedPieces(file, (chunk) => writeTo(response, chunk), pieces);
    response.end();
  } catch {
    response.destroy();
  } finally {
    await closeServedFile(file);
  }
}

/** Closes a file opened to be served that will not be sent after all. */
export async function closeServedFile(file: ServedFile): Promise<void> {
  await file.handle.close().catch(() => undefined);
}

// Settles once the socket has taken `chunk` (its write callback), or rejects when the client is gone first.
function writeTo(response: ServerResponse, chunk: Uint8Array): Promise<void> {
  return new Promise((resolve, reject) => {
    if (response.destroyed) {
      reject(new Error('the client went away'));
      return;
    }
    const gone = (): void => reject(new Error('the client went away'));
    response.once('close', gone);
    response.write(chunk, (err) => {
      response.off('close', gone);
      if (err) reject(err);
      else resolve();
    });
  });
}

type FolderChain = { kind: 'folder'; path: string } | { kind: 'absent' } | { kind: 'refused'; reason: string };

// Walks `names` below `outputDir` with lstat: each must be a real folder of this process's user that others cannot
// plant in, so that only this user (or its group, where a folder is group-writable) could swap one for a link
// between this check and the open that follows.
async function folderChain(outputDir: string, names: readonly string[]): Promise<FolderChain> {
  let at = path.resolve(outputDir);
  for (const name of names) {
    if (!plainName(name)) return { kind: 'refused', reason: `${name} is not a plain name` };
    at = path.join(at, name);
    let stats: Stats;
    try {
      stats = await lstat(at);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'absent' };
      return { kind: 'refused', reason: `${at}: ${reasonOf(err)}` };
    }
    const problem = stats.isSymbolicLink()
      ? await linkText(at)
      : !stats.isDirectory()
        ? `is ${kindOf(stats)}, not a folder`
        : (ownerProblem(stats) ??
          (othersMayPlant(stats.mode)
            ? `is a folder others can write (mode ${folderModeText(stats.mode)})`
            : undefined));
    if (problem !== undefined) return { kind: 'refused', reason: `${at} ${problem}` };
  }
  return { kind: 'folder', path: at };
}

// Why an opened file is not served (worded to follow its path), or undefined.
function fileProblem(stats: Stats, limitBytes: number): string | undefined {
  if (!stats.isFile()) return `is ${kindOf(stats)}, not a regular file`;
  const owner = ownerProblem(stats);
  if (owner !== undefined) return owner;
  if (stats.size > limitBytes) return `holds ${stats.size} bytes, over the ${limitBytes} one answer serves`;
  return undefined;
}

// Why `stats` is not of this process's user (worded to follow its path), or undefined; no owners, no check.
function ownerProblem(stats: Stats): string | undefined {
  const uid = process.getuid?.();
  return uid === undefined || stats.uid === uid
    ? undefined
    : `is owned by uid ${stats.uid}, not by uid ${uid} (this process)`;
}

// "is a symbolic link (to /etc/passwd)".
async function linkText(at: string): Promise<string> {
  return `is a symbolic link (to ${await readlink(at).catch(() => '?')})`;
}

function kindOf(stats: Stats): string {
  if (stats.isDirectory()) return 'a folder';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return 'a device';
  if (stats.isSymbolicLink()) return 'a symbolic link';
  return 'a regular file';
}

// One path part that goes nowhere else: no separator, not "." or "..".
function plainName(name: string): boolean {
  return name !== '' && name !== '.' && name !== '..' && !name.includes('/') && !name.includes(path.sep);
}

// `baseDir`'s parts below `outputDir` ([] for OUTPUT_DIR itself), or undefined when it is not inside.
function namesBelow(outputDir: string, baseDir: string): string[] | undefined {
  const below = path.relative(path.resolve(outputDir), path.resolve(baseDir));
  if (below === '') return [];
  if (below.startsWith('..') || path.isAbsolute(below)) return undefined;
  return below.split(path.sep);
}

// "EACCES: permission denied", without the syscall and path Node appends: the path is said already.
function reasonOf(err: unknown): string {
  return errorMessage(err).replace(/, \w+ '[^']*'$/, '');
}
