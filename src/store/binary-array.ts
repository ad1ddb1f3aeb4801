/** Element type OIDs (pg_type) of the arrays the store binds in binary. */
export const BYTEA_OID = 17;
export const JSONB_OID = 3802;

/**
 * A one-dimensional array in PostgreSQL's binary format (what `array_recv` reads), bound as one
 * binary parameter on both drivers (node-postgres and src/store/pglite send bytes as binary). Each
 * element is the element type's own binary form; null is SQL NULL. Nothing is escaped or turned into
 * text: a batch of 2 KB bodies travels as their bytes, not as hex inside an array literal that
 * JavaScript escapes and PostgreSQL parses back character by character.
 */
export function binaryArray(elementOid: number, elements: ReadonlyArray<Uint8Array | null>): Buffer {
  if (elements.length === 0) {
    // No dimensions: the empty array.
    const empty = Buffer.alloc(12);
    empty.writeInt32BE(elementOid, 8);
    return empty;
  }
  // Header: dimensions (1), has-nulls flag, element type, then the dimension's length and lower bound.
  let length = 20;
  let hasNulls = 0;
  for (const element of elements) {
    length += 4 + (element === null ? 0 : element.length);
    if (element === null) hasNulls = 1;
  }
  const array = Buffer.allocUnsafe(length);
  let offset = array.writeInt32BE(1, 0);
  offset = array.writeInt32BE(hasNulls, offset);
  offset = array.writeInt32BE(elementOid, offset);
  offset = array.writeInt32BE(elements.length, offset);
  offset = array.writeInt32BE(1, offset);
  for (const element of elements) {
    if (element === null) {
      offset = array.writeInt32BE(-1, offset);
      continue;
    }
    offset = array.writeInt32BE(element.length, offset);
    array.set(element, offset);
    offset += element.length;
  }
  return array;
}

/** A jsonb value in binary form (`jsonb_recv`): format version 1, then the JSON text in UTF-8. */
export function binaryJsonb(json: string): Buffer {
  return Buffer.from(`\u0001${json}`, 'utf8');
}
