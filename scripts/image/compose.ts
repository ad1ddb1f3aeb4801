/**
 * compose.yaml brought up as it is (npm run test:image, issue 28): Debian's docker-compose 1.29 against
 * podman's Docker API (`podman system service`), which honours `depends_on` conditions, with the
 * built image (CFS_IMAGE) and local stand-ins for postgres:15 and haproxy:2.6 when those are not
 * present (scripts/image/standins: no registry here). Podman has no systemd here to run health
 * checks periodically, so this runs `podman healthcheck run` on the project's containers every
 * second, as the timer would. Then: traffic through HAProxy, one replica restarted under traffic
 * (no failed request), everything torn down (volumes too).
 *
 * Also checked: podman-compose 1.0.3 reads the same file without leaving an interpolation behind
 * (its `--dry-run`); it ignores `depends_on` conditions, which the file survives (replicas wait
 * not ready for their schema, `restart: unless-stopped` covers a database not yet up).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../support/free-port.js';
import { command, podman } from './podman.js';
import { get, waitFor200 } from './network.js';
import type { Context } from './kube.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const STANDINS = join(ROOT, 'scripts/image/standins');

async function ensureStandIn(image: string, containerfile: string): Promise<boolean> {
  if ((await podman(['image', 'exists', image])).code === 0) return false;
  await podman(['build', '--pull=never', '--format', 'docker', '-t', image, '-f', join(STANDINS, containerfile), STANDINS], { check: true });
  return true;
}

export async function runCompose({ image, readyBoundMs, record, cleanups }: Omit<Context, 'adminUrl'> & { adminUrl?: string }): Promise<void> {
  const [port, grpcPort] = [await freePort(), await freePort()];
  const project = `cfsimage${process.pid}`;
  const env = { ...process.env, CFS_IMAGE: image, CFS_PORT: String(port), CFS_GRPC_PORT: String(grpcPort), COMPOSE_PROJECT_NAME: project };

  // Its dry run still creates the named volumes: removed right after.
  const dry = await command('podman-compose', ['--dry-run', '-p', project, 'up', '-d'], { env });
  await podman(['volume', 'rm', '-f', `${project}_db-data`]);
  const leftOver = /\$\{[A-Z_]+/.exec(dry.stdout)?.[0];
  record(
    'compose: podman-compose 1.0.3 reads compose.yaml',
    dry.code === 0 && leftOver === undefined,
    leftOver ? `left ${leftOver}… uninterpolated` : `exit ${dry.code}, every \${…} interpolated`,
  );

  const built = [
    await ensureStandIn('docker.io/library/postgres:15', 'postgres.Containerfile'),
    await ensureStandIn('docker.io/library/haproxy:2.6', 'haproxy.Containerfile'),
  ];
  record('compose: postgres:15 and haproxy:2.6 available', true, built.some(Boolean) ? 'stand-ins built from Debian 12 packages' : 'present (cached)');

  const dir = mkdtempSync(join(tmpdir(), 'cfs-compose-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const socket = join(dir, 'podman.sock');
  const service = spawn('podman', ['system', 'service', '--time=0', `unix://${socket}`], { stdio: 'ignore', env: process.env });
  cleanups.push(async () => {
    service.kill('SIGTERM');
  });
  const composeEnv = { ...env, DOCKER_HOST: `unix://${socket}` };
  for (let i = 0; i < 100 && (await command('docker-compose', ['version'], { env: composeEnv })).code !== 0; i++)
    await new Promise((resolve) => setTimeout(resolve, 100));
  const compose = (args: string[], timeoutMs = readyBoundMs * 2) =>
    command('docker-compose', ['-f', join(ROOT, 'compose.yaml'), ...args], { env: composeEnv, timeoutMs });
  cleanups.push(() => compose(['down', '-v', '-t', '5'], 120_000));

  // The periodic health checks systemd would run.
  let pumping = true;
  const pump = (async () => {
    while (pumping) {
      const names = (await podman(['ps', '--filter', `label=com.docker.compose.project=${project}`, '--format', '{{.Names}}'])).stdout
        .split('\n')
        .filter(Boolean);
      for (const name of names) await podman(['healthcheck', 'run', name]);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();
  cleanups.push(async () => {
    pumping = false;
    await pump;
  });

  const started = Date.now();
  const up = await compose(['up', '-d', '--no-build']);
  const base = `http://127.0.0.1:${port}`;
  const readyMs = up.code === 0 ? await waitFor200(`${base}/readyz`, readyBoundMs) : undefined;
  record(
    'compose: up (db healthy → migrate → 3 replicas healthy → HAProxy)',
    up.code === 0 && readyMs !== undefined,
    `exit ${up.code}, answering through HAProxy ${((Date.now() - started) / 1000).toFixed(1)} s after \`up\`${up.code === 0 ? '' : `\n${up.stderr.slice(-2000)}`}`,
  );
  if (readyMs === undefined) return;

  const migrateState = (await podman(['inspect', '--format', '{{.State.ExitCode}} {{.State.Running}}', `${project}_migrate_1`])).stdout.trim();
  record('compose: migrations ran once, by `migrate`', migrateState === '0 false', `migrate container: exit ${migrateState}`);

  // Traffic through the balancer while app2 restarts (SIGTERM, drain, start, healthy again).
  let sent = 0;
  const failures: number[] = [];
  let sending = true;
  const traffic = (async () => {
    while (sending) {
      const { status } = await get(`${base}/api`, 5000);
      sent++;
      if (status !== 200) failures.push(status);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const restartStarted = Date.now();
  const restarted = await compose(['restart', '-t', '20', 'app2']);
  let healthy = false;
  while (!healthy && Date.now() - restartStarted < readyBoundMs) {
    healthy = (await podman(['inspect', '--format', '{{.State.Health.Status}}', `${project}_app2_1`])).stdout.trim() === 'healthy';
    if (!healthy) await new Promise((resolve) => setTimeout(resolve, 500));
  }
  // A few seconds more, for HAProxy to take it back (rise 2 × inter 1 s).
  await new Promise((resolve) => setTimeout(resolve, 3000));
  sending = false;
  await traffic;
  record(
    'compose: a replica restarted under traffic through HAProxy',
    restarted.code === 0 && healthy && sent > 0 && failures.length === 0,
    `restart exit ${restarted.code}, healthy again after ${((Date.now() - restartStarted) / 1000).toFixed(1)} s; ${sent} requests, ${failures.length} failed${failures.length ? ` (${[...new Set(failures)].join(', ')})` : ''}`,
  );

  const down = await compose(['down', '-v', '-t', '20'], 120_000);
  const left = (await podman(['ps', '-a', '--filter', `label=com.docker.compose.project=${project}`, '--format', '{{.Names}}'])).stdout.trim();
  record('compose: down -v removes everything', down.code === 0 && left === '', `exit ${down.code}${left ? `, left: ${left}` : ''}`);
}
