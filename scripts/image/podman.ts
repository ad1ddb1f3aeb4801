/**
 * Podman as `npm run test:image` uses it on a machine with no container daemon and no registry
 * (issue 28): Debian's podman as root, with a containers.conf of our own (runc, not crun, which fails
 * here on setrlimit and hybrid cgroups; explicit nofile/nproc ulimits), base images made locally
 * (scripts/image/base-image.sh) and builds that reach only the npm registry, with the host's CA bundle
 * mounted for npm so that nothing of it lands in the image.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = new URL('../../', import.meta.url).pathname;

/** Kept between runs, outside the checkout: the base image's root filesystem and Node, containers.conf, npmrc. */
export const CACHE = process.env.CFS_IMAGE_CACHE ?? '/var/cache/cfs-image';
const HOST_CA = '/etc/ssl/certs/ca-certificates.crt';

/** Debian packages by the command each provides. */
const TOOLS: Record<string, string> = {
  podman: 'podman',
  runc: 'runc',
  debootstrap: 'debootstrap',
  'docker-compose': 'docker-compose',
  'podman-compose': 'podman-compose',
  kubectl: 'kubernetes-client',
};

function onPath(command: string): boolean {
  return ['/usr/bin', '/usr/sbin', '/usr/local/bin', '/bin', '/sbin'].some((dir) => existsSync(join(dir, command)));
}

/** Installs the Debian packages of the tools that are missing (as root; CI runs as root). */
export function ensureTools(): string[] {
  const missing = Object.entries(TOOLS)
    .filter(([command]) => !onPath(command))
    .map(([, pkg]) => pkg);
  if (missing.length === 0) return [];
  const install = () => execFileSync('apt-get', ['install', '-y', '--no-install-recommends', ...missing], { stdio: 'ignore' });
  try {
    install();
  } catch {
    execFileSync('apt-get', ['update'], { stdio: 'ignore' });
    install();
  }
  return missing;
}

/** Writes our containers.conf and points podman (and its API service) at it through CONTAINERS_CONF. */
export function configurePodman(): void {
  mkdirSync(CACHE, { recursive: true });
  const conf = join(CACHE, 'containers.conf');
  // This process's own hard limits (a container may not raise them: setrlimit fails).
  const [nofile = '1024', nproc = '4096'] = execFileSync('bash', ['-c', 'ulimit -Hn; ulimit -Hu'], { encoding: 'utf8' }).trim().split('\n');
  // At most these: runc failed to set nproc above 32768 here even below the hard limit.
  const limit = (value: string, most: number) => String(value === 'unlimited' ? most : Math.min(Number(value), most));
  writeFileSync(
    conf,
    [
      '# Written by scripts/image/podman.ts (npm run test:image).',
      '[containers]',
      "# Explicit limits no higher than the caller's hard limits: the defaults are higher and setrlimit fails on them.",
      `default_ulimits = ["nofile=${limit(nofile, 65536)}:${limit(nofile, 65536)}", "nproc=${limit(nproc, 32768)}:${limit(nproc, 32768)}"]`,
      '[engine]',
      '# crun fails here (setrlimit, then "cgroups in hybrid mode not supported"); runc works.',
      'runtime = "runc"',
      'cgroup_manager = "cgroupfs"',
      '# No systemd journal in a CI container.',
      'events_logger = "file"',
      '',
    ].join('\n'),
  );
  process.env.CONTAINERS_CONF = conf;
}

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs podman; a non-zero exit is returned, not thrown, unless `check`. */
export async function podman(args: string[], options: { check?: boolean; timeoutMs?: number; cwd?: string } = {}): Promise<Result> {
  return command('podman', args, options);
}

export async function command(
  file: string,
  args: string[],
  options: { check?: boolean; timeoutMs?: number; cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<Result> {
  try {
    const { stdout, stderr } = await run(file, args, {
      cwd: options.cwd ?? ROOT,
      env: options.env ?? process.env,
      timeout: options.timeoutMs ?? 0,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number | string; stdout?: string; stderr?: string; killed?: boolean };
    const result = { code: typeof failed.code === 'number' ? failed.code : 1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? String(error) };
    if (options.check)
      throw new Error(`${file} ${args.join(' ')} exited ${failed.killed ? 'on its timeout' : result.code}:\n${result.stderr.slice(-4000)}`, { cause: error });
    return result;
  }
}

/**
 * `node:24-slim` for `FROM node:24-slim --pull=never`: the local image when there is one (a real pull,
 * or an earlier run's stand-in), else the stand-in built by scripts/image/base-image.sh from its cache.
 */
export async function ensureBaseImage(): Promise<{ built: boolean }> {
  if ((await podman(['image', 'exists', 'docker.io/library/node:24-slim'])).code === 0) return { built: false };
  await command('bash', [join(ROOT, 'scripts/image/base-image.sh')], { check: true, env: { ...process.env, CFS_IMAGE_CACHE: CACHE } });
  return { built: true };
}

/**
 * Builds the project's Dockerfile, unchanged, into `tag`: layers cached between runs, `--pull=never`
 * (the base is local), docker format (OCI drops HEALTHCHECK). npm inside the build trusts the host's
 * CA bundle through a global npmrc mounted for the build only.
 */
export async function buildImage(tag: string): Promise<void> {
  const npmrc = join(CACHE, 'npmrc');
  writeFileSync(npmrc, `cafile=${HOST_CA}\n`);
  const volumes = existsSync(HOST_CA) ? ['-v', `${HOST_CA}:${HOST_CA}:ro`, '-v', `${npmrc}:/usr/local/etc/npmrc:ro`] : [];
  await podman(['build', '--pull=never', '--format', 'docker', '--layers', '--force-rm', ...volumes, '-t', tag, '.'], { check: true });
}
