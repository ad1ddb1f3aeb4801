import { parse, protocol, type messages, type PGlite, type Results } from '@electric-sql/pglite';

type BackendMessage = messages.BackendMessage;
const { serialize } = protocol;
/** What follows every Bind: describe the portal (its row shape), run it, end the extended query. */
const DESCRIBE_EXECUTE_SYNC = concat([serialize.describe({ type: 'P' }), serialize.execute({}), serialize.sync()]);

/** Named statements kept prepared at once; the least recently used is closed beyond this. */
const MAX_PREPARED = 128;

/** Command tags after which a prepared statement's plan or result shape may be stale (DDL). */
const SCHEMA_CHANGING = /^(CREATE|ALTER|DROP|TRUNCATE|COMMENT|GRANT|REVOKE|REINDEX|CLUSTER|VACUUM|IMPORT|SECURITY|REFRESH)\b/;

interface Prepared {
  name: string;
  /** Parameter type OIDs from the statement's ParameterDescription: how each value is serialised. */
  paramTypes: number[];
}

/**
 * Runs SQL on PGlite with one call into the wasm backend per statement. `PGlite.query` sends Parse,
 * Describe, Bind, Describe, Execute and Sync as six separate calls (six trips through its protocol
 * loop, its parser and a promise each) and parses and plans the text every time. Here a statement
 * with parameters is prepared once under a name (Parse + Describe, remembered by its text), and each
 * execution is a single Bind + Describe + Execute + Sync message. PGlite's own `execProtocolStream`
 * still runs it, so its parser delivers NOTIFYs to `listen()` callbacks and returns the first
 * error; its own `parseResults` builds the rows, so values are typed exactly as `query()` types them.
 *
 * Statements without parameters (DDL, BEGIN/COMMIT) go unnamed, as `query()` sends them. After any
 * schema change every prepared statement is closed, so none keeps a plan or row shape from before it.
 * Everything runs under PGlite's query mutex, the lock `query()` itself takes, so a statement never
 * interleaves with another caller's protocol messages. `syncToFs` is not called: the two filesystems
 * this server opens (a directory, `memory://`) sync nothing there.
 */
export class PgliteStatements {
  private readonly prepared = new Map<string, Prepared>();
  private nextName = 0;

  constructor(private readonly pglite: PGlite) {}

  /** The result of one statement, as `PGlite.query` answers it; a database error is thrown as PGlite throws it. */
  run(sql: string, bindings: readonly unknown[]): Promise<Results> {
    if (this.pglite.closed) return Promise.reject(new Error('PGlite is closed'));
    return this.pglite.runExclusive(async () => {
      try {
        const replies = bindings.length === 0 ? await this.unnamed(sql) : await this.named(sql, bindings);
        return await this.resultOf(replies);
      } catch (error) {
        // The fields PGlite's query() adds to a database error.
        if (error instanceof Error && 'code' in error) Object.assign(error, { query: sql, params: bindings, queryOptions: undefined });
        throw error;
      }
    });
  }

  private unnamed(sql: string): Promise<BackendMessage[]> {
    return this.exec([serialize.parse({ text: sql }), serialize.bind({}), DESCRIBE_EXECUTE_SYNC]);
  }

  private async named(sql: string, bindings: readonly unknown[]): Promise<BackendMessage[]> {
    const statement = this.prepared.get(sql) ?? (await this.prepare(sql));
    // Most recently used last: eviction takes the first.
    this.prepared.delete(sql);
    this.prepared.set(sql, statement);
    const values = bindings.map((value, index) => this.serialised(value, statement.paramTypes[index]));
    try {
      return await this.exec([bindMessage(statement.name, values), DESCRIBE_EXECUTE_SYNC]);
    } catch (error) {
      // A statement the backend no longer knows or can no longer run as planned is prepared afresh next time.
      const code = (error as { code?: unknown }).code;
      if (code === '26000' || code === '0A000') await this.close([sql]);
      throw error;
    }
  }

  private async prepare(sql: string): Promise<Prepared> {
    const name = `cfs_${(this.nextName++).toString(36)}`;
    const replies = await this.exec([serialize.parse({ name, text: sql }), serialize.describe({ type: 'S', name }), serialize.sync()]);
    const statement = { name, paramTypes: parse.parseDescribeStatementResults(replies) };
    this.prepared.set(sql, statement);
    if (this.prepared.size > MAX_PREPARED) await this.close([this.prepared.keys().next().value as string]);
    return statement;
  }

  private serialised(value: unknown, oid: number | undefined): string | null {
    if (value === null || value === undefined) return null;
    const serializer = oid === undefined ? undefined : this.pglite.serializers[oid];
    return serializer ? serializer(value) : String(value);
  }

  private async resultOf(replies: BackendMessage[]): Promise<Results> {
    const tag = replies.find((message): message is messages.CommandCompleteMessage => message.name === 'commandComplete');
    if (tag && SCHEMA_CHANGING.test(tag.text)) await this.close([...this.prepared.keys()]);
    return parse.parseResults(replies, this.pglite.parsers)[0] ?? { rows: [], fields: [], affectedRows: 0 };
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

  private exec(parts: Uint8Array[]): Promise<BackendMessage[]> {
    return this.pglite.execProtocolStream(concat(parts), { syncToFs: false });
  }
}

/**
 * A Bind message of the unnamed portal (text parameters and results), encoded by Buffer in C++:
 * PGlite's serializer measures and copies each string in JavaScript, a few percent of a capture
 * batch's time with its ~2 KB hex bodies.
 */
function bindMessage(statement: string, values: ReadonlyArray<string | null>): Uint8Array {
  let length = 4 + 1 + Buffer.byteLength(statement) + 1 + 2 + 2 + 2;
  for (const value of values) length += 4 + (value === null ? 0 : Buffer.byteLength(value));
  const message = Buffer.allocUnsafe(1 + length);
  let offset = message.writeUInt8(0x42, 0);
  offset = message.writeInt32BE(length, offset);
  offset = message.writeUInt8(0, offset); // the unnamed portal
  offset += message.write(statement, offset);
  offset = message.writeUInt8(0, offset);
  offset = message.writeInt16BE(0, offset); // every parameter in text format
  offset = message.writeInt16BE(values.length, offset);
  for (const value of values) {
    if (value === null) {
      offset = message.writeInt32BE(-1, offset);
    } else {
      const start = offset + 4;
      const written = message.write(value, start);
      message.writeInt32BE(written, offset);
      offset = start + written;
    }
  }
  message.writeInt16BE(0, offset); // every result column in text format
  return message;
}

function concat(parts: Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const message = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    message.set(part, offset);
    offset += part.length;
  }
  return message;
}
