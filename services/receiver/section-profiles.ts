import path from 'node:path';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import type { Logger } from 'pino';
import { formatSize } from '../core/config/size.js';
import { CPU_PROFILE_MAX_BYTES, cpuProfileProblem } from '../core/control/cpu-profile.js';
import { errorMessage } from '../core/errors.js';
import type { SectionPlan, SectionResult } from '../core/model/section.js';
import { cpuProfileFileName, type ProfiledSide } from '../core/report/run-files.js';
import { CpuProfileRecording } from '../shared/cpu-profile.js';
import { writeFileAtomic } from '../shared/files.js';

// PROFILE=1 on the receiver: a CPU profile of each section, from its opening to its end, written into the run's
// folder (profiles/, named by core/report/run-files.ts) beside the transmitter's, which comes gzipped over the control
// port before the section's end (POST /sections/:id/cpu-profile). The section's result names both, so output.log's
// lines and results.json do. Whether the transmitter profiles is its own PROFILE: its profile is taken whatever this
// receiver's is. A profile that cannot be taken or written is logged and left out: it never fails a section.

const gunzipped = promisify(gunzip);

/** Why the transmitter's profile was not taken: the HTTP status to answer and the reason. */
export interface ProfileRefusal {
  statusCode: 400 | 409 | 500;
  error: string;
}

/** The open section's profiles: where they go, the receiver's being taken, the transmitter's once it came. */
interface ProfiledSection {
  sectionId: number;
  runDir: string;
  transport: string;
  repeat: number;
  repeats: number;
  recording: CpuProfileRecording | undefined;
  transmitterFile: string | null;
}

/** The CPU profiles of a receiver's open section; see the module comment. */
export class SectionProfiles {
  private open: ProfiledSection | undefined;

  constructor(
    /** PROFILE=1 on this receiver: it profiles itself. */
    private readonly enabled: boolean,
    private readonly log: Logger,
  ) {}

  /** Section `plan` opened, its files in `runDir` (a run of `repeats` repeats): its profile starts now when enabled. */
  async opened(plan: SectionPlan, repeats: number, runDir: string): Promise<void> {
    await this.discard();
    let recording: CpuProfileRecording | undefined;
    if (this.enabled)
      recording = await CpuProfileRecording.start().catch((err: unknown) => {
        this.log.warn({ transport: plan.transport, err: errorMessage(err) }, 'CPU profile not started');
        return undefined;
      });
    const { sectionId, transport, repeat } = plan;
    this.open = { sectionId, runDir, transport, repeat, repeats, recording, transmitterFile: null };
  }

  /**
   * The transmitter's profile of section `sectionId` (gzipped JSON): written into the run's folder when that section
   * is open here and the body is a CPU profile of at most CPU_PROFILE_MAX_BYTES; otherwise why not.
   */
  async transmitterProfile(sectionId: number, gzipped: Buffer): Promise<ProfileRefusal | undefined> {
    const open = this.open;
    if (open?.sectionId !== sectionId) return { statusCode: 409, error: 'that section is not open' };
    let json: string;
    try {
      json = (await gunzipped(gzipped, { maxOutputLength: CPU_PROFILE_MAX_BYTES })).toString('utf8');
    } catch (err) {
      const tooLarge = (err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE';
      const reason = tooLarge ? `over ${formatSize(CPU_PROFILE_MAX_BYTES)} once gunzipped` : errorMessage(err);
      return { statusCode: 400, error: `CPU profile refused: ${reason}` };
    }
    const problem = cpuProfileProblem(json);
    if (problem !== undefined) return { statusCode: 400, error: `CPU profile refused: ${problem}` };
    // The section may have ended while the body was read and inflated: its result is written without it then.
    if (this.open !== open) return { statusCode: 409, error: 'that section is not open' };
    const file = await this.write(open, 'transmitter', json);
    if (file === null) return { statusCode: 500, error: 'the receiver could not write the CPU profile' };
    open.transmitterFile = file;
    return undefined;
  }

  /**
   * Section `result` is over: the receiver's profile of it stopped and written, and `result` with both sides' files
   * named (cpuProfiles); `result` itself when neither side's profile is there, or it is not the open section.
   */
  async ended(result: SectionResult): Promise<SectionResult> {
    const open = this.open;
    if (open === undefined || open.sectionId !== result.sectionId) return result;
    this.open = undefined;
    const profile = await open.recording?.stop().catch((err: unknown) => {
      this.log.warn({ transport: open.transport, err: errorMessage(err) }, 'CPU profile not taken');
      return undefined;
    });
    const receiverFile = profile === undefined ? null : await this.write(open, 'receiver', profile);
    if (receiverFile === null && open.transmitterFile === null) return result;
    return { ...result, cpuProfiles: { receiver: receiverFile, transmitter: open.transmitterFile } };
  }

  /** Stops a profile still being taken, writing nothing (no section is open any more). */
  async discard(): Promise<void> {
    const open = this.open;
    this.open = undefined;
    await open?.recording?.stop().catch(() => undefined);
  }

  // Writes `side`'s profile into the run's folder; its name relative to the folder, or null (logged) when it failed.
  private async write(open: ProfiledSection, side: ProfiledSide, json: string): Promise<string | null> {
    const file = cpuProfileFileName(open.transport, open.repeat, open.repeats, side);
    try {
      await writeFileAtomic(path.join(open.runDir, file), json);
      return file;
    } catch (err) {
      this.log.warn({ transport: open.transport, side, err: errorMessage(err) }, 'CPU profile not written');
      return null;
    }
  }
}
