import { statfsSync } from 'node:fs';

/**
 * PostgreSQL's WAL segment (PGlite's initdb makes 16 MiB ones). A new segment is created in one piece
 * when the current one fills, inside a critical section: if the filesystem refuses it, the backend
 * PANICs, and a PGlite instance that PANICked spins forever on its next statement (PgliteStatements
 * then stops using it). So a write is admitted only while a whole segment, and a little more for
 * `pg_xact`, free-space maps and new index pages, still fits.
 */
const WAL_SEGMENT_BYTES = 16 * 1024 * 1024;
const DEFAULT_RESERVE_BYTES = WAL_SEGMENT_BYTES + 2 * 1024 * 1024;

/** What one statement is counted as besides its message: a new heap, TOAST and index page or two. */
const STATEMENT_OVERHEAD_BYTES = 64 * 1024;
/** A sign-in, a session, a small capture: the admitted cost of a message of 64 KiB. */
const SMALL_WRITE_BYTES = 64 * 1024 + STATEMENT_OVERHEAD_BYTES;

export interface DiskSpaceGuardOptions {
  /** Free bytes a write must leave behind (default: a WAL segment + 2 MiB). */
  reserveBytes?: number;
  /** How old the last `statfs` may be before a write asks again. */
  maxAgeMs?: number;
  /** How many bytes may be admitted on one `statfs` answer before a write asks again. */
  slackBytes?: number;
}

/**
 * Whether PGlite's DATA_DIR has room for the next write, from `statfs` of its filesystem: asked again
 * at most every `maxAgeMs`, or sooner once the writes admitted since (each counted at its protocol
 * message's size, which is at least what it stores: bytea travels as hex) reach `slackBytes`. A
 * `statfs` costs a microsecond or two; a statement on PGlite a hundred times that.
 */
export class DiskSpaceGuard {
  readonly reserveBytes: number;
  private readonly maxAgeMs: number;
  private readonly slackBytes: number;
  private freeBytes = Infinity;
  private admitted = 0;
  private checkedAt = -Infinity;

  constructor(
    private readonly dir: string,
    options: DiskSpaceGuardOptions = {},
  ) {
    this.reserveBytes = options.reserveBytes ?? DEFAULT_RESERVE_BYTES;
    this.maxAgeMs = options.maxAgeMs ?? 100;
    this.slackBytes = options.slackBytes ?? 1024 * 1024;
  }

  /** Free bytes of DATA_DIR's filesystem as of now, minus what was admitted since `statfs` said so. */
  private available(): number {
    if (performance.now() - this.checkedAt > this.maxAgeMs || this.admitted > this.slackBytes) this.refresh();
    return this.freeBytes - this.admitted;
  }

  /** Whether `cost` fits above the reserve; a "no" is always from a fresh `statfs` (freed space counts at once). */
  private fits(cost: number): boolean {
    if (this.available() - cost >= this.reserveBytes) return true;
    this.refresh();
    return this.freeBytes - cost >= this.reserveBytes;
  }

  /** Whether a small write (up to 64 KiB of message) would be admitted now: what `/readyz` reports. */
  hasRoom(): boolean {
    return this.fits(SMALL_WRITE_BYTES);
  }

  /** Counts a write of about `bytes`, or throws a disk_full error (SQLSTATE 53100) when it would not leave the reserve. */
  admit(bytes: number): void {
    const cost = bytes + STATEMENT_OVERHEAD_BYTES;
    if (!this.fits(cost)) {
      throw Object.assign(
        new Error(
          `could not write: DATA_DIR's filesystem has ${mib(Math.max(0, this.freeBytes - this.admitted))} free, ` +
            `and the embedded database keeps ${mib(this.reserveBytes)} free for its write-ahead log (No space left on device)`,
        ),
        { code: '53100', severity: 'ERROR' },
      );
    }
    this.admitted += cost;
  }

  private refresh(): void {
    this.checkedAt = performance.now();
    this.admitted = 0;
    try {
      const space = statfsSync(this.dir);
      this.freeBytes = space.bavail * space.bsize;
    } catch {
      // No answer (DATA_DIR removed under us): the statement itself will tell.
      this.freeBytes = Infinity;
    }
  }
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
