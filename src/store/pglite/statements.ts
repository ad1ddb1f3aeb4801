import { parse, protocol, type messages, type PGlite, type Results } from '@electric-sql/pglite';
import { bindMessage, concat, firstResult } from './wire.js';

type BackendMessage = messages.BackendMessage;
const { serialize } = protocol;
/** What follows every Bind: describe the portal (its row shape), run it, end the extended query. */
const DESCRIBE_EXECUTE_SYNC = concat([serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]);

/** Named statements kept prepared at once; the least recently used is closed beyond this. */
const MAX_PREPARED = 128;

/** Command tags after which a prepared statement's plan or result shape may be stale (DDL). */
const SCHEMA_CHANGING = /^(CREATE|ALTER|DROP|TRUNCATE|COMMENT|GRANT|REVOKE|REINDEX|CLUSTER|VACUUM|IMPORT|SECURITY|REFRESH)\b/;

/**
 * Statements that only read (or only steer the session): admitted whatever the free space. Anything
 * else — INSERT, UPDATE, DELETE, a data-modifying WITH, DDL, ANALYZE, a locking or sequence-advancing
 * SELECT — is a write, which the disk-space guard may refuse.
 */
const READ_ONLY =
  /^\s*(select|show|values|table|explain|begin|start|commit|end|rollback|abort|savepoint|release|set|reset|deallocate|discard|listen|unlisten)\b/i;
const WRITES_ANYWAY = /\b(for\s+(no\s+key\s+)?update|for\s+(key\s+)?share|nextval|setval|pg_notify)\b/i;

function isWrite(sql: string): boolean {
  return !READ_ONLY.test(sql) || WRITES_ANYWAY.test(sql);
}

/** What PgliteStatements may be given besides the instance. */
export interface PgliteStatementsOptions {
  /** Refuses a write (throws, SQLSTATE 53100) while the disk cannot take it; counts its message's bytes. */
  guard?: { admit(bytes: number): void };
  /** The instance PANICked: it is never sent another statement (see the class comment). */
  onPanic?(error: unknown): void;
}

interface Job {
  sql: string;
  bindings: readonly unknown[];
  resolve(result: Results): void;
  reject(error: unknown): void;
}

interface Prepared {
  name: string;
  /** Parameter type OIDs from the statement's ParameterDescription: how each value is serialised. */
  paramTypes: number[];
  /** When it last ran (the statements' use counter). */
  used: number;
}

/**
 * Runs SQL on PGlite with one call into the wasm backend per statement. `PGlite.query` sends Parse,
 * Describe, Bind, Describe, Execute and Sync as six separate calls (six trips through its protocol
 * loop, its parser and a promise each) and parses and plans the text every time. Here a statement
 * with parameters is prepared once under a name (Parse + Describe, remembered by its text), and each
 * execution is a single Bind + Describe + Execute + Sync message. PGlite's own `execProtocolStream`
 * still runs it, so its parser delivers NOTIFYs to `listen()` callbacks and returns the first
 * error; rows are typed by PGlite's own `types.parseType` with the instance's parsers, so values are
 * exactly what `query()` answers (`firstResult`).
 *
 * Statements without parameters (DDL, BEGIN/COMMIT) go unnamed, as `query()` sends them. After any
 * schema change every prepared statement is closed, so none keeps a plan or row shape from before it.
 * `syncToFs` is not called: the two filesystems this server opens (a directory, `memory://`) sync
 * nothing there.
 *
 * Statements queue here in arrival order and run one at a time under PGlite's query mutex, the lock
 * `query()`, `listen()` and `close()` take, so none interleaves with another caller's protocol
 * messages. The lock is taken once and kept while statements keep coming, and given back in the
 * check phase of a turn of the event loop in which the queue stayed empty: taking it per statement
 * (async-mutex's generator-based `runExclusive`) cost an allocation per statement that V8 kept alive
 * into the old generation under load, and old-space garbage means mark-compacts, which stalled the
 * one-core server 50–80 ms each (docs/architecture.md, "The embedded store's query path").
 *
 * A PANIC (PostgreSQL's "the server must restart": a WAL segment that could not be created on a
 * full disk, an error inside a critical section) leaves the wasm backend mid-way: its next statement
 * spins in `errfinish` forever on the event loop's thread, and the whole process stops answering. So
 * after a PANIC this sends the instance nothing more: it keeps PGlite's lock (nothing else, not
 * `listen()`, not `close()`, reaches the backend), fails every statement at once, and tells
 * `onPanic`, whose owner may `replace` the instance with a fresh one on the same data directory
 * (PostgreSQL's crash recovery). A `guard` refuses writes before the disk gets that full.
 */
export class PgliteStatements {
  private readonly prepared = new Map<string, Prepared>();
  private nextName = 0;
  private uses = 0;
  /** Statements waiting to run, in arrival order; `head` is the next (taken ones are cleared, not shifted). */
  private readonly jobs: Array<Job | undefined> = [];
  private head = 0;
  /** Gives PGlite's lock back; set while this holds it. */
  private release: (() => void) | undefined;
  private acquiring = false;
  private working = false;
  /** The check-phase callback that gives the lock back when nothing else came. */
  private idle: NodeJS.Immediate | undefined;
  /** Set once the instance PANICked: every statement fails with it until `replace`. */
  private stopped: Error | undefined;

  constructor(
    private pglite: PGlite,
    private readonly options: PgliteStatementsOptions = {},
  ) {}

  /** Whether the instance PANICked and has not been replaced. */
  get failed(): boolean {
    return this.stopped !== undefined;
  }

  /**
   * Runs every later statement on `pglite` (a fresh instance on the same data directory, after a
   * PANIC). The old one keeps the lock it holds: it is abandoned, never closed (closing runs a
   * checkpoint on it, which would spin too).
   */
  replace(pglite: PGlite): void {
    if (this.idle) clearImmediate(this.idle);
    this.idle = undefined;
    this.pglite = pglite;
    this.prepared.clear();
    this.release = undefined;
    this.acquiring = false;
    this.working = false;
    this.stopped = undefined;
    if (this.head < this.jobs.length) this.pump();
  }

  /** The result of one statement, as `PGlite.query` answers it; a database error is thrown as PGlite throws it. */
  run(sql: string, bindings: readonly unknown[]): Promise<Results> {
    if (this.stopped) return Promise.reject(this.stopped);
    if (this.pglite.closed) return Promise.reject(new Error('PGlite is closed'));
    return new Promise<Results>((resolve, reject) => {
      this.jobs.push({ sql, bindings, resolve, reject });
      this.pump();
    });
  }

  /** Starts running the queue: at once while the lock is held, else once PGlite's lock is taken. */
  private pump(): void {
    if (this.working) return; // the running chain takes the new job
    if (this.release) {
      if (this.idle) clearImmediate(this.idle);
      this.idle = undefined;
      this.work();
      return;
    }
    if (this.acquiring) return;
    this.acquiring = true;
    // The lock `query()` takes (an async-mutex semaphore), held until the queue has stayed empty
    // through a turn of the event loop rather than taken per statement (see the class comment).
    this.pglite
      .runExclusive(
        () =>
          new Promise<void>((release) => {
            this.acquiring = false;
            this.release = release;
            this.work();
          }),
      )
      .catch((error: unknown) => {
        // The lock itself failed (PGlite closing): nothing ran, every waiting statement fails.
        this.acquiring = false;
        this.release = undefined;
        this.failAll(error);
      });
  }

  /**
   * Runs the next queued statement; its settling runs the one after it, in arrival order, one at a
   * time. Promise callbacks rather than an async loop: an async function's frame per statement is
   * what V8 promoted to the old generation most under load (see the class comment).
   */
  private work(): void {
    if (this.stopped) {
      // A PANICked instance keeps the lock (see the class comment): nothing else may reach it.
      this.working = false;
      this.failAll(this.stopped);
      return;
    }
    if (this.head >= this.jobs.length) {
      this.jobs.length = 0;
      this.head = 0;
      this.working = false;
      // Statements queued by the code their predecessors resumed ran in this same microtask chain;
      // new requests queue theirs from their own I/O callbacks. The lock goes back in the check
      // phase of this turn if nothing came meanwhile, so `listen()` and `close()` wait at most one
      // turn of the event loop.
      this.idle = setImmediate(this.giveBack);
      return;
    }
    this.working = true;
    const job = this.jobs[this.head]!;
    this.jobs[this.head++] = undefined;
    this.execute(job.sql, job.bindings).then(
      (result) => {
        job.resolve(result);
        this.work();
      },
      (error: unknown) => {
        job.reject(error);
        this.work();
      },
    );
  }

  private readonly giveBack = (): void => {
    this.idle = undefined;
    const release = this.release;
    this.release = undefined;
    release?.();
    // Anything queued while the lock was on its way back waits for it again, behind other waiters.
    if (this.head < this.jobs.length) this.pump();
  };

  private failAll(error: unknown): void {
    const jobs = this.jobs.slice(this.head);
    this.jobs.length = 0;
    this.head = 0;
    for (const job of jobs) job?.reject(error);
  }

  /** One statement, under the lock this holds. */
  private execute(sql: string, bindings: readonly unknown[]): Promise<Results> {
    let replies: Promise<BackendMessage[]>;
    try {
      if (this.pglite.closed) throw new Error('PGlite is closed');
      const write = this.options.guard !== undefined && isWrite(sql);
      replies = bindings.length === 0 ? this.unnamed(sql, write) : this.named(sql, bindings, write);
    } catch (error) {
      replies = Promise.reject(error);
    }
    return replies.then(
      (messages) => this.resultOf(messages),
      (error: unknown) => {
        // The fields PGlite's query() adds to a database error.
        if (error instanceof Error && 'code' in error) Object.assign(error, { query: sql, params: bindings, queryOptions: undefined });
        if ((error as { severity?: unknown }).severity === 'PANIC') this.stop(error);
        throw error;
      },
    );
  }

  /** The instance PANICked: fail everything from now on, and say so once. */
  private stop(panic: unknown): void {
    if (this.stopped) return;
    const reason = panic instanceof Error ? panic.message : String(panic);
    // 57P03 (cannot_connect_now): unavailable, retry later; the PANIC as its cause (a full disk is 53100).
    this.stopped = Object.assign(new Error(`the embedded database stopped after a PANIC (${reason}); it is reopened once it can be`, { cause: panic }), {
      code: '57P03',
    });
    this.options.onPanic?.(panic);
  }

  private unnamed(sql: string, write: boolean): Promise<BackendMessage[]> {
    return this.exec([serialize.parse({ text: sql }), serialize.bind({}), DESCRIBE_EXECUTE_SYNC], write);
  }

  private named(sql: string, bindings: readonly unknown[], write: boolean): Promise<BackendMessage[]> {
    const statement = this.prepared.get(sql);
    if (!statement) return this.prepare(sql).then((prepared) => this.bound(sql, prepared, bindings, write));
    return this.bound(sql, statement, bindings, write);
  }

  private bound(sql: string, statement: Prepared, bindings: readonly unknown[], write: boolean): Promise<BackendMessage[]> {
    // Least recently used is closed first (a counter, not a re-insertion into the map per execution).
    statement.used = ++this.uses;
    const values = bindings.map((value, index) => this.serialised(value, statement.paramTypes[index]));
    let sent: Promise<BackendMessage[]>;
    try {
      sent = this.exec([bindMessage(statement.name, values), DESCRIBE_EXECUTE_SYNC], write);
    } catch (error) {
      sent = Promise.reject(error); // refused by the guard: nothing was sent
    }
    return sent.catch(async (error: unknown) => {
      // A statement the backend no longer knows or can no longer run as planned is prepared afresh next time.
      const code = (error as { code?: unknown }).code;
      if (code === '26000' || code === '0A000') await this.close([sql]);
      throw error;
    });
  }

  private async prepare(sql: string): Promise<Prepared> {
    const name = `cfs_${(this.nextName++).toString(36)}`;
    const replies = await this.exec([serialize.parse({ name, text: sql }), serialize.describe({ type: 'S', name }), serialize.sync()]);
    const statement = { name, paramTypes: parse.parseDescribeStatementResults(replies), used: ++this.uses };
    this.prepared.set(sql, statement);
    if (this.prepared.size > MAX_PREPARED) await this.close([this.leastRecentlyUsed()]);
    return statement;
  }

  private leastRecentlyUsed(): string {
    let oldest: [string, Prepared] | undefined;
    for (const entry of this.prepared) if (!oldest || entry[1].used < oldest[1].used) oldest = entry;
    return oldest![0];
  }

  /** Bytes go as a binary parameter (as node-postgres sends a Buffer); everything else as PGlite's serializer for the type writes it. */
  private serialised(value: unknown, oid: number | undefined): string | Uint8Array | null {
    if (value === null || value === undefined) return null;
    if (value instanceof Uint8Array) return value;
    const serializer = oid === undefined ? undefined : this.pglite.serializers[oid];
    return serializer ? serializer(value) : String(value);
  }

  private resultOf(replies: BackendMessage[]): Results | Promise<Results> {
    const tag = replies.find((message): message is messages.CommandCompleteMessage => message.name === 'commandComplete');
    if (tag && SCHEMA_CHANGING.test(tag.text)) return this.close([...this.prepared.keys()]).then(() => this.parsed(replies));
    return this.parsed(replies);
  }

  private parsed(replies: BackendMessage[]): Results {
    return firstResult(replies, this.pglite.parsers);
  }

  /** Closes prepared statements (deallocating them is not transactional, so this is safe at any point). */
  private async close(sqls: string[]): Promise<void> {
    const closes: Uint8Array[] = [];
    for (const sql of sqls) {
      const statement = this.prepared.get(sql);
      if (!statement) continue;
      this.prepared.delete(sql);
      closes.push(serialize.close({ type: 'S', name: statement.name }));
    }
    if (closes.length > 0) await this.pglite.execProtocolStream(concat([...closes, serialize.sync()]), { syncToFs: false, throwOnError: false });
  }

  /** Sends one message; a `write` is first admitted by the guard (which throws when the disk cannot take it). */
  private exec(parts: Uint8Array[], write = false): Promise<BackendMessage[]> {
    const message = concat(parts);
    if (write) this.options.guard!.admit(message.length);
    return this.pglite.execProtocolStream(message, { syncToFs: false });
  }
}
