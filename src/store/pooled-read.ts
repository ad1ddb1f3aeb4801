import type { Knex } from 'knex';

/** A read for `pooledRead`: SQL with the driver's `$1` placeholders, and a statement name to prepare it once per connection (pg). */
export interface PooledStatement {
  text: string;
  name?: string;
}

/** What Knex's client does for every query: take a pooled connection, run the SQL through the dialect's driver call, give it back. */
interface KnexDriverClient {
  config: { client?: unknown };
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): Promise<void>;
  _query(connection: unknown, query: { sql: string; bindings: unknown[] }): Promise<{ response: { rows: unknown[] } }>;
}

/** pg's Query (a submittable): pg neither copies its config nor wraps it in a promise of its own. */
interface PgQuery {
  name?: string;
}
type PgQueryClass = new (text: string, values: unknown[], callback: (error: Error | undefined, result: { rows: unknown[] }) => void) => PgQuery;
interface PgConnection {
  query(query: PgQuery): void;
  constructor: { Query?: PgQueryClass };
}

/**
 * One statement outside a transaction, straight on a connection of Knex's own pool: the same pool
 * (size, acquire timeout, validation), connection settings (statement_timeout, query_timeout) and
 * driver as any Knex query, without the query builder and runner around them (events, binding
 * rewrites, compile, response post-processing, runner promises) — the hottest reads of the APIs
 * (docs/architecture.md, REST and gRPC step tables). On pg the statement is pg's own `Query` object,
 * named when the statement has a name (parsed and planned once per connection); pg would otherwise
 * copy a config object by property descriptors and wrap it in a promise with a stack-capturing catch.
 * Elsewhere (PGlite) it is the dialect's own call, which prepares statements itself. The connection
 * goes back as soon as the driver answers, on a synchronous throw too.
 */
export function pooledRead<Row>(knex: Knex, statement: PooledStatement, values: unknown[]): Promise<Row[]> {
  const client = knex.client as KnexDriverClient;
  return client.acquireConnection().then(
    (connection) =>
      new Promise<Row[]>((resolve, reject) => {
        const done = (error: unknown, rows?: unknown[]) => {
          // Knex's release is synchronous (its promise is already resolved): awaiting it only costs a tick.
          void client.releaseConnection(connection);
          if (error) reject(error);
          else resolve(rows as Row[]);
        };
        try {
          const Query = client.config.client === 'pg' ? (connection as PgConnection).constructor.Query : undefined;
          if (Query) {
            const query = new Query(statement.text, values, (error, result) => done(error, result?.rows));
            if (statement.name) query.name = statement.name;
            (connection as PgConnection).query(query);
          } else {
            client._query(connection, { sql: statement.text, bindings: values }).then(
              ({ response }) => done(undefined, response.rows),
              (error: unknown) => done(error),
            );
          }
        } catch (error) {
          done(error);
        }
      }),
  );
}
