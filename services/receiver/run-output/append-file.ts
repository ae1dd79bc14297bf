import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { ErrorCode, ItbError } from '../../core/errors.js';
import { CREATE_NEW_FILE, writeFailure } from '../../shared/files.js';
import { AsciiLines } from './ascii-lines.js';

// A run's output.log and per-image CSVs are appended as images arrive, on the thread that stamps arrivals: the lines
// are buffered as bytes and go to the kernel in chunks, off that path. What a killed receiver can lose is what the
// buffer held: at most FLUSH_INTERVAL_MS of records.

/** Bytes buffered before a write goes out; a timer sends less every {@link FLUSH_INTERVAL_MS}. */
const FLUSH_BYTES = 256 * 1024;
/** Most time buffered records wait before they go to the kernel: what a killed receiver can lose. */
const FLUSH_INTERVAL_MS = 500;
/** Appending to an existing file only, never through a link. */
const APPEND_NO_FOLLOW = constants.O_WRONLY | constants.O_APPEND | (constants.O_NOFOLLOW ?? 0);

/**
 * An append-only text file written in the background: lines are buffered and go out in order,
 * a chunk at a time, off the caller's path. The first failure is kept with the path and the
 * system's reason; later writes are dropped and {@link flush} throws it.
 */
export class AppendFile {
  private chain: Promise<void> = Promise.resolve();
  private readonly timer: NodeJS.Timeout;
  /** Where lines are written, as bytes: full chunks go out as they fill, the rest on the timer. */
  readonly lines: AsciiLines;
  failure: Error | undefined;

  private constructor(
    readonly filePath: string,
    private readonly handle: FileHandle,
  ) {
    this.lines = new AsciiLines((chunk) => this.send(chunk), FLUSH_BYTES);
    this.timer = setInterval(() => this.lines.flush(), FLUSH_INTERVAL_MS).unref();
  }

  /** Creates `filePath` (it must not exist: nothing is written through a link planted in its place). */
  static async create(filePath: string): Promise<AppendFile> {
    try {
      return new AppendFile(filePath, await open(filePath, CREATE_NEW_FILE, 0o644));
    } catch (err) {
      throw writeFailure(filePath, err);
    }
  }

  /**
   * Opens an existing file of this run's to append to (a run being completed): a regular file, never through a link.
   */
  static async reopen(filePath: string): Promise<AppendFile> {
    let handle: FileHandle | undefined;
    try {
      handle = await open(filePath, APPEND_NO_FOLLOW);
      if (!(await handle.stat()).isFile()) throw new ItbError(ErrorCode.write, 'not a regular file');
      return new AppendFile(filePath, handle);
    } catch (err) {
      await handle?.close();
      throw writeFailure(filePath, err);
    }
  }

  /** Appends `text` (with its own line ends). */
  write(text: string): void {
    this.lines.text(text);
  }

  /** Everything written so far on disk (synced): throws the first failure. */
  async flush(): Promise<void> {
    this.lines.flush();
    this.chain = this.chain.then(() =>
      this.failure === undefined ? this.handle.datasync().catch((err: unknown) => this.fail(err)) : undefined,
    );
    await this.chain;
    if (this.failure !== undefined) throw this.failure;
  }

  /** Flushes and closes; throws the first failure (the file is closed either way). */
  async close(): Promise<void> {
    clearInterval(this.timer);
    try {
      await this.flush();
    } finally {
      await this.handle.close().catch(() => undefined);
    }
  }

  private send(chunk: Buffer): void {
    if (this.failure !== undefined) return;
    this.chain = this.chain.then(async () => {
      if (this.failure !== undefined) return;
      await this.handle.write(chunk).catch((err: unknown) => this.fail(err));
      // Written (or failed): its memory takes the next lines.
      this.lines.giveBack(chunk);
    });
  }

  private fail(err: unknown): void {
    this.failure ??= writeFailure(this.filePath, err);
  }
}
