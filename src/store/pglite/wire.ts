import { types, type messages, type PGlite, type Results } from '@electric-sql/pglite';

type BackendMessage = messages.BackendMessage;
type Parsers = PGlite['parsers'];
const COUNTED = new Set(['INSERT', 'UPDATE', 'DELETE', 'COPY', 'MERGE']);

/**
 * The first result of a reply, exactly as PGlite's `parse.parseResults(replies, parsers)[0]` builds it
 * (rows as objects keyed by column name, each value through `types.parseType` with the instance's
 * parsers; command, affectedRows, rowCount), in a plain loop. PGlite's own (forEach with closures,
 * `Object.fromEntries`, an object spread per result) left ~1 KB per statement that V8's scavenger
 * kept alive and promoted to the old generation under load — the old-space garbage behind the
 * mark-compacts that stalled the server for 50–80 ms (docs/architecture.md, PGlite section);
 * this loop's garbage dies young.
 */
export function firstResult(replies: readonly BackendMessage[], parsers: Parsers): Results {
  let fields: Array<{ name: string; dataTypeID: number }> = [];
  const rows: Array<Record<string, unknown>> = [];
  for (const message of replies) {
    if (message.name === 'rowDescription') {
      fields = (message as messages.RowDescriptionMessage).fields.map((field) => ({ name: field.name, dataTypeID: field.dataTypeID }));
    } else if (message.name === 'dataRow') {
      const values = (message as messages.DataRowMessage).fields;
      const row: Record<string, unknown> = {};
      for (let index = 0; index < values.length; index++) {
        const field = fields[index]!;
        const value: unknown = types.parseType(values[index] ?? null, field.dataTypeID, parsers);
        // A column named __proto__ is an own property, as Object.fromEntries makes it.
        if (field.name === '__proto__') Object.defineProperty(row, field.name, { value, writable: true, enumerable: true, configurable: true });
        else row[field.name] = value;
      }
      rows.push(row);
    } else if (message.name === 'commandComplete') {
      const words = (message as messages.CommandCompleteMessage).text.split(' ');
      const command = words[0]!;
      const count = parseInt(words[words.length - 1]!, 10);
      const result: Results = { rows, fields, command, affectedRows: COUNTED.has(command) ? count : 0 } as Results;
      if (!Number.isNaN(count)) (result as { rowCount?: number }).rowCount = count;
      return result;
    }
  }
  // The statement completed nothing (an empty query): what parseResults answers.
  return { affectedRows: 0, rows: [], fields: [] };
}

/**
 * A Bind message of the unnamed portal (text results), encoded by Buffer in C++: PGlite's serializer
 * measures and copies each string in JavaScript, a few percent of a capture batch's time. A string
 * is a text parameter; bytes are a binary one (the type's own receive format, e.g. a `bytea[]`
 * array, src/store/binary-array.ts), as node-postgres sends a Buffer, so the two drivers agree.
 */
export function bindMessage(statement: string, values: ReadonlyArray<string | Uint8Array | null>): Uint8Array {
  let binary = false;
  let length = 4 + 1 + Buffer.byteLength(statement) + 1 + 2 + 2 + 2;
  for (const value of values) {
    if (value === null) length += 4;
    else if (typeof value === 'string') length += 4 + Buffer.byteLength(value);
    else {
      length += 4 + value.length;
      binary = true;
    }
  }
  // Format codes: none (every parameter text), or one per parameter when any is binary.
  if (binary) length += 2 * values.length;
  const message = Buffer.allocUnsafe(1 + length);
  let offset = message.writeUInt8(0x42, 0);
  offset = message.writeInt32BE(length, offset);
  offset = message.writeUInt8(0, offset); // the unnamed portal
  offset += message.write(statement, offset);
  offset = message.writeUInt8(0, offset);
  if (binary) {
    offset = message.writeInt16BE(values.length, offset);
    for (const value of values) offset = message.writeInt16BE(value !== null && typeof value !== 'string' ? 1 : 0, offset);
  } else offset = message.writeInt16BE(0, offset);
  offset = message.writeInt16BE(values.length, offset);
  for (const value of values) {
    if (value === null) {
      offset = message.writeInt32BE(-1, offset);
    } else if (typeof value === 'string') {
      const start = offset + 4;
      const written = message.write(value, start);
      message.writeInt32BE(written, offset);
      offset = start + written;
    } else {
      offset = message.writeInt32BE(value.length, offset);
      message.set(value, offset);
      offset += value.length;
    }
  }
  message.writeInt16BE(0, offset); // every result column in text format
  return message;
}

/** Protocol messages joined into one buffer, sent to the backend in one call. */
export function concat(parts: Uint8Array[]): Uint8Array {
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
