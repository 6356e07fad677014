/** One raw kernel log line and where it sits in its source. */
export interface SourceLine {
  readonly text: string;
  /** Position of the line's start (file byte offset, kmsg sequence number, journal counter). */
  readonly position: number;
  /** Position just past it: where to resume when everything up to here is published. */
  readonly next: number;
}

/** A followed kernel log: yields batches of lines as they arrive, from a saved position. */
export interface LineSource {
  readonly id: string;
  /** Resumes at `from` (as saved) or, with none saved, at the source's start. */
  open(from: number | undefined): void;
  /** Lines available now (possibly none); never blocks for long. */
  read(): Promise<SourceLine[]>;
  /**
   * Waits until more lines may be there, at most `ms`. A source that can be told (a file, by
   * inotify) wakes at once; without it the caller sleeps `ms`.
   */
  waitForLines?(ms: number): Promise<void>;
  close(): Promise<void>;
  /** Whether the source can still give lines: a reader that ended (journalctl exited) or a file gone says why, and since when. */
  health?(): SourceHealth;
}

export interface SourceHealth {
  readonly ok: boolean;
  readonly message?: string;
  /** When it stopped (ms since the epoch). */
  readonly since?: number;
}
