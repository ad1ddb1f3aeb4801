/** What `npm run bench` and `npm run bench:workers` share: the user read they measure, its settings and wrk. */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const ADMIN_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);

/** Stops the benchmark when wrk is missing. */
export function requireWrk(script: string): void {
  if (!existsSync('/usr/bin/wrk')) {
    console.error(`${script} needs wrk: apt-get install -y wrk`);
    process.exit(2);
  }
}

/** Signs in the first admin (created by that sign-in) on a fresh database: the token and the user to read. */
export async function prepareUser(port: number): Promise<{ token: string; userId: string }> {
  const response = await fetch(`http://127.0.0.1:${port}/api/auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench-admin', password: 'bench-password' }),
  });
  const body = (await response.json()) as { accessToken: string; user: { id: string } };
  return { token: body.accessToken, userId: body.user.id };
}

/** Requests per second of an authenticated GET; `prefix` pins wrk (e.g. `taskset -c 1`). Any non-2xx fails the run. */
export function wrk(port: number, path: string, token: string, seconds: number, prefix: string[] = []): number {
  const args = ['wrk', '-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '-H', `Authorization: Bearer ${token}`, `http://127.0.0.1:${port}${path}`];
  const [command = 'wrk', ...rest] = [...prefix, ...args];
  const output = execFileSync(command, rest, { encoding: 'utf8' });
  if (/Non-2xx/.test(output)) throw new Error(`non-2xx answers during the run:\n${output}`);
  return Number(/Requests\/sec:\s+([\d.]+)/.exec(output)?.[1] ?? 0);
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}
