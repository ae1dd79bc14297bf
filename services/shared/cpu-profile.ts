import type { Session } from 'node:inspector/promises';
import { withTimeout } from './waits.js';

// PROFILE=1: a V8 CPU profile of this process's main thread over one section, through a local inspector session
// (node:inspector), as scripts/tools/cpu-profile.cjs takes one of a whole process. Each recording has a session of its
// own: a receiver and a transmitter in one process (the in-process tests) profile the same section side by side, and
// V8 keeps one profile per session. node:inspector is loaded only when a profile is first taken.

/**
 * How long the inspector may take to answer: a local session answers on this thread at once, so this only bounds a
 * wait that never should be long (a stop that serializes a long section's profile).
 */
const INSPECTOR_ANSWER_TIMEOUT_MS = 30_000;

/** A CPU profile of this thread being taken: started by start(), ended by stop(). */
export class CpuProfileRecording {
  private stopped = false;

  private constructor(private readonly session: Session) {}

  /**
   * Starts profiling this thread; rejects when the inspector cannot (a Node built without it), leaving nothing open.
   */
  static async start(): Promise<CpuProfileRecording> {
    const { Session } = await import('node:inspector/promises');
    const session = new Session();
    session.connect();
    try {
      await withTimeout(session.post('Profiler.enable'), INSPECTOR_ANSWER_TIMEOUT_MS, 'Profiler.enable');
      await withTimeout(session.post('Profiler.start'), INSPECTOR_ANSWER_TIMEOUT_MS, 'Profiler.start');
    } catch (err) {
      session.disconnect();
      throw err;
    }
    return new CpuProfileRecording(session);
  }

  /**
   * Stops profiling and returns the profile as a .cpuprofile's JSON (Chrome DevTools' Profile); undefined when it was
   * already stopped. The session is closed either way; safe to call twice.
   */
  async stop(): Promise<string | undefined> {
    if (this.stopped) return undefined;
    this.stopped = true;
    try {
      const { profile } = await withTimeout(
        this.session.post('Profiler.stop'),
        INSPECTOR_ANSWER_TIMEOUT_MS,
        'Profiler.stop',
      );
      return JSON.stringify(profile);
    } finally {
      this.session.disconnect();
    }
  }
}
