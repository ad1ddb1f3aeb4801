/** What `npm run bench` and `npm run bench:workers` share: the user read they measure, its settings and wrk. */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { components } from '../generated/openapi/users.js';

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

/** The wire shape of the user the benchmark reads (GET /api/users/{id}), as the contract types it. */
export type BenchUser = components['schemas']['UserDto'];

/** Signs in the first admin (created by that sign-in) on a fresh database: the token and the user to read. */
export async function prepareUser(port: number): Promise<{ token: string; userId: string; user: BenchUser }> {
  const response = await fetch(`http://127.0.0.1:${port}/api/auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'bench-admin', password: 'bench-password' }),
  });
  const body = (await response.json()) as { accessToken: string; user: BenchUser };
  return { token: body.accessToken, userId: body.user.id, user: body.user };
}

/** One wrk run: requests per second and the 99th percentile latency (wrk --latency). */
export interface WrkResult {
  rps: number;
  p99Ms: number;
}

/** Requests per second of an authenticated GET; `prefix` pins wrk (e.g. `taskset -c 1`). Any non-2xx fails the run. */
export function wrk(port: number, path: string, token: string, seconds: number, prefix: string[] = []): number {
  return wrkRun(port, path, token, seconds, prefix).rps;
}

/** An authenticated GET under wrk --latency: throughput and p99. Any non-2xx fails the run. */
export function wrkRun(port: number, path: string, token: string, seconds: number, prefix: string[] = [], connections = CONNECTIONS): WrkResult {
  const args = ['wrk', '-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-H', `Authorization: Bearer ${token}`, `http://127.0.0.1:${port}${path}`];
  const [command = 'wrk', ...rest] = [...prefix, ...args];
  const output = execFileSync(command, rest, { encoding: 'utf8' });
  if (/Non-2xx/.test(output)) throw new Error(`non-2xx answers during the run:\n${output}`);
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(output)?.[1] ?? 0), p99Ms: latencyMs(/^\s*99%\s+([\d.]+)(us|ms|s)\s*$/m.exec(output)) };
}

function latencyMs(match: RegExpExecArray | null): number {
  if (!match) return Number.NaN;
  const value = Number(match[1]);
  return match[2] === 'us' ? value / 1000 : match[2] === 's' ? value * 1000 : value;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}
