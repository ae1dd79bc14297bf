// The names a run's output goes by under OUTPUT_DIR: the receiver writes them (services/receiver/run-output/), and the
// receiver's pages, npm start and the soak read them. Fixed names only: nothing from the network names a path.

/** The files a run writes, by fixed names. */
export const OUTPUT_FILES = { log: 'output.log', results: 'results.json', report: 'report.html' } as const;
/** Where run folders go, under OUTPUT_DIR. */
export const RUNS_FOLDER = 'runs';
/** The link in OUTPUT_DIR to the last run that ended. */
export const LATEST_LINK = 'latest';
/** results.json's stopReason while its run is open: a run left so never ended (its receiver died). */
export const RUN_IN_PROGRESS = 'in progress: the run has not ended';
/** A run folder's name under runs/: its start time (UTC, runFolderStamp of model/run-writer.ts) and 3 random bytes. */
export const RUN_FOLDER_NAME = /^\d{8}T\d{6}Z-[0-9a-f]{6}$/;
/** In an open run's folder: who writes it (a RunWriter), its mtime the heartbeat; removed when the run ends. */
export const WRITER_FILE = '.writer.json';
/** In a run folder being completed after its writer died: the writer file, renamed by the receiver completing it. */
export const CLAIM_FILE = '.completing.json';
/** The per-image CSV's header line. */
export const IMAGES_CSV_HEADER = 'image,status,one_way_ns,round_trip_ns,due_lag_ns';

/** A section's per-image CSV: its number in the run (from 1), its transport, and its repeat when the run repeats. */
export function imagesFileName(sectionNumber: number, transport: string, repeat: number, repeats: number): string {
  return `images-${String(sectionNumber).padStart(2, '0')}-${transport}${repeats > 1 ? `-repeat${repeat}` : ''}.csv`;
}

/** Where a run's CPU profiles go (PROFILE=1), in its folder. */
export const PROFILES_FOLDER = 'profiles';

/** The side of a section a CPU profile is of: each profiles its own process. */
export type ProfiledSide = 'receiver' | 'transmitter';

/**
 * A section's CPU profile of one side, relative to the run's folder, named as its per-image CSV is: its transport and,
 * when the run repeats (a transport then has several sections), its repeat. From fixed parts only: the transport is one
 * of the table's, the side one of two.
 */
export function cpuProfileFileName(transport: string, repeat: number, repeats: number, side: ProfiledSide): string {
  return `${PROFILES_FOLDER}/${transport}${repeats > 1 ? `-repeat${repeat}` : ''}-${side}.cpuprofile`;
}

/**
 * What services/receiver/complete-run.ts prints (one JSON line) for npm start: how many sections the completed run
 * holds, or null when the folder held no unfinished run.
 */
export interface RunCompletionAnswer {
  sections: number | null;
}
