/**
 * The Kubernetes manifests run (npm run test:image, issue 28): deploy/kubernetes/overlays/postgres
 * rendered by `kubectl kustomize`, its migration Job's container run with podman, then its ConfigMap,
 * Secret and Deployment under `podman kube play` on the host's PostgreSQL (a scratch database reached
 * through a relay on the containers' bridge) until every pod answers /readyz.
 *
 * What kube play cannot do, and the policy tests (test/deploy/kubernetes.test.ts) check instead:
 * probes (ignored; an httpGet liveness probe becomes a `curl` the slim image lacks), the preStop
 * sleep and termination grace, Services, the PDB, HPA and NetworkPolicy. Podman 4.3 takes a Secret
 * as a podman secret holding the Secret's YAML, so the rendered Secret is created that way.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { scratchDatabase } from '../support/fresh-store.js';
import { command, podman } from './podman.js';
import { get, startRelay } from './network.js';

const ROOT = new URL('../../', import.meta.url).pathname;

interface Container {
  name: string;
  image: string;
  args?: string[];
}
interface Manifest {
  kind: string;
  metadata: { name: string };
  spec?: { replicas?: number; template?: { spec: { containers: Container[] } } };
  stringData?: Record<string, string>;
  data?: Record<string, string>;
}

export interface Context {
  image: string;
  adminUrl: string;
  readyBoundMs: number;
  record(check: string, pass: boolean, figure: string): void;
  cleanups: (() => Promise<unknown>)[];
}

export async function runKubePlay({ image, adminUrl, readyBoundMs, record, cleanups }: Context): Promise<void> {
  const rendered = await command('kubectl', ['kustomize', join(ROOT, 'deploy/kubernetes/overlays/postgres')], { check: true });
  const manifests = parseAllDocuments(rendered.stdout).map((document) => document.toJSON() as Manifest);
  const find = (kind: string) => {
    const found = manifests.find((manifest) => manifest.kind === kind);
    if (!found) throw new Error(`the postgres overlay renders no ${kind}`);
    return found;
  };
  const [configMap, secret, deployment, job] = [find('ConfigMap'), find('Secret'), find('Deployment'), find('Job')];
  const podImage = deployment.spec?.template?.spec.containers[0]?.image ?? '';
  // The manifests name `cfs-server:<version>`; podman resolves that short name to localhost/cfs-server.
  record('kube: the rendered image is the built one', `localhost/${podImage}` === image, `${podImage} → ${image}`);

  const database = await scratchDatabase(adminUrl, 'kube');
  cleanups.push(() => database.drop());
  const gateway = JSON.parse((await podman(['network', 'inspect', 'podman'], { check: true })).stdout)[0]?.subnets?.[0]?.gateway as string;
  const admin = new URL(adminUrl);
  const relay = await startRelay('0.0.0.0', { host: admin.hostname, port: Number(admin.port || 5432) });
  cleanups.push(() => relay.close());
  const url = new URL(database.url);
  url.hostname = gateway;
  url.port = String(relay.port);
  secret.stringData = { ...secret.stringData, DATABASE_URL: url.toString() };

  const dir = mkdtempSync(join(tmpdir(), 'cfs-kube-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  // The Secret as podman 4.3 reads it: a podman secret of that name holding the Secret's YAML (data, base64).
  const data = Object.fromEntries(Object.entries(secret.stringData ?? {}).map(([key, value]) => [key, Buffer.from(value).toString('base64')]));
  writeFileSync(join(dir, 'secret.yaml'), stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: secret.metadata.name }, data }));
  await podman(['secret', 'rm', secret.metadata.name]);
  await podman(['secret', 'create', secret.metadata.name, join(dir, 'secret.yaml')], { check: true });
  cleanups.push(() => podman(['secret', 'rm', secret.metadata.name]));

  // The Job's container: same image, its own args, the same ConfigMap and Secret (as environment).
  const jobContainer = (job.spec?.template?.spec.containers[0] ?? {}) as Container;
  const env = { ...(configMap as unknown as { data: Record<string, string> }).data, ...secret.stringData };
  const envArgs = Object.entries(env).flatMap(([key, value]) => ['-e', `${key}=${value}`]);
  const started = Date.now();
  const migrated = await podman([
    'run',
    '--rm',
    '--pull=never',
    '--read-only',
    '--user',
    '1000:1000',
    '--cap-drop',
    'ALL',
    ...envArgs,
    `localhost/${jobContainer.image}`,
    ...(jobContainer.args ?? []),
  ]);
  record(
    "kube: the migration Job's container",
    migrated.code === 0,
    `\`${(jobContainer.args ?? []).join(' ')}\` exit ${migrated.code} in ${((Date.now() - started) / 1000).toFixed(1)} s${migrated.code === 0 ? '' : `\n${migrated.stderr.slice(-2000)}`}`,
  );

  const file = join(dir, 'deployment.yaml');
  writeFileSync(file, [configMap, deployment].map((manifest) => stringify(manifest)).join('---\n'));
  cleanups.push(() => podman(['kube', 'down', file]));
  const played = await podman(['kube', 'play', file]);
  const replicas = deployment.spec?.replicas ?? 0;
  // kube play names a Deployment's pods <name>-pod-<n> and their containers <pod>-<container>.
  const containerName = deployment.spec?.template?.spec.containers[0]?.name ?? '';
  const pattern = new RegExp(`^${deployment.metadata.name}-pod-\\d+-${containerName}$`);
  const containers = (await podman(['ps', '-a', '--format', '{{.Names}}'])).stdout.split('\n').filter((name) => pattern.test(name));
  record(
    'kube: podman kube play runs the Deployment',
    played.code === 0 && containers.length === replicas,
    `exit ${played.code}, ${containers.length} of ${replicas} replicas${played.code === 0 ? '' : `\n${played.stderr.slice(-2000)}`}`,
  );

  const ready: string[] = [];
  const playStarted = Date.now();
  for (const name of containers) {
    const ip = (await podman(['inspect', '--format', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', name])).stdout.trim();
    const address = ip || (await podman(['inspect', '--format', '{{.NetworkSettings.IPAddress}}', name])).stdout.trim();
    while (Date.now() - playStarted < readyBoundMs) {
      if ((await get(`http://${address}:5000/readyz`)).status === 200) {
        ready.push(`${name} (${address}) in ${((Date.now() - playStarted) / 1000).toFixed(1)} s`);
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
  const logs = ready.length === containers.length ? '' : (await podman(['logs', '--tail', '20', containers[0] ?? ''])).stderr;
  record(
    'kube: every pod answers /readyz',
    containers.length > 0 && ready.length === containers.length,
    `${ready.join('; ') || 'none'}${logs ? `\n${logs}` : ''}`,
  );
}
