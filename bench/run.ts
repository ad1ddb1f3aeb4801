/**
 * `npm run bench`: GET /api/users/{id} through the whole stack (routing, contract validation, bearer
 * auth, service, store) against a raw node:http + pg handler doing the same query, in one run.
 * Servers are pinned to core 0 and the load generator (wrk) to core 1; ratios are what to trust.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { scratchDatabase } from '../scripts/support/fresh-store.js';
import { ADMIN_URL, median, prepareUser, requireWrk, ROUNDS, SECONDS, wrk } from './users-read.js';

const ROOT = new URL('../', import.meta.url).pathname;
requireWrk('bench');
/** wrk on core 1, the servers on core 0. */
const PIN_WRK = ['taskset', '-c', '1'];

const database = await scratchDatabase(ADMIN_URL, 'bench');
const children: ChildProcess[] = [];
try {
  const env = { ...process.env, DATABASE_URL: database.url, LOG_LEVEL: 'silent', PORT: '0' };
  const full = await startChild(['--import', 'tsx', 'bench/full-server.ts'], env);
  const { token, userId } = await prepareUser(full.port);
  const raw = await startChild(['--import', 'tsx', 'bench/raw-users-server.ts'], env);
  const path = `/api/users/${userId}`;
  await check(`http://127.0.0.1:${full.port}${path}`, token);
  await check(`http://127.0.0.1:${raw.port}${path}`, token);
  // Warm both (JIT, pools), then measure each alone, alternating, and compare medians: the load
  // generator and PostgreSQL share a core, so single runs drift by ±20% here.
  wrk(raw.port, path, token, 2, PIN_WRK);
  wrk(full.port, path, token, 2, PIN_WRK);
  const baselineRuns: number[] = [];
  const fullRuns: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    baselineRuns.push(wrk(raw.port, path, token, SECONDS, PIN_WRK));
    fullRuns.push(wrk(full.port, path, token, SECONDS, PIN_WRK));
  }
  const baseline = median(baselineRuns);
  const ours = median(fullRuns);
  console.log(`raw node:http + pg      ${baseline.toFixed(0).padStart(7)} req/s   (runs: ${baselineRuns.map((value) => value.toFixed(0)).join(', ')})`);
  console.log(`full stack (users API)  ${ours.toFixed(0).padStart(7)} req/s   (runs: ${fullRuns.map((value) => value.toFixed(0)).join(', ')})`);
  console.log(`ratio full/raw          ${(ours / baseline).toFixed(2)}   (target >= 0.50; medians of ${ROUNDS} alternating runs of ${SECONDS} s)`);
} finally {
  for (const child of children) child.kill('SIGTERM');
  await new Promise((resolve) => setTimeout(resolve, 300));
  await database.drop();
}

async function startChild(args: string[], env: NodeJS.ProcessEnv): Promise<{ port: number }> {
  const child = spawn('taskset', ['-c', '0', process.execPath, ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening (\d+)/.exec(output);
      if (match) resolve({ port: Number(match[1]) });
    });
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited with ${code}`)));
  });
}

async function check(url: string, token: string): Promise<void> {
  const response = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
}
