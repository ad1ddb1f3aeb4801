/**
 * The Kubernetes manifests run (npm run test:image, issue 28): deploy/kubernetes/overlays/postgres
 * rendered by `kubectl kustomize`, its migration Job's container run with podman, then its ConfigMap,
 * Secret and Deployment under `podman kube play` on the host's PostgreSQL (a scratch database reached
 * through a relay on the containers' bridge) until every pod answers /readyz.
 *
 * What kube play cannot do, and the policy tests (test/deploy/kubernetes.test.ts) check instead:
 * probes (ignored; an httpGet liveness probe becomes a `curl` the slim image lacks), the preStop
 * sleep and termination grace, Services, the PDB, HPA and NetworkPolicy. Podman 4.3 takes a Secret
 * as a podman secret holding the Secret's data as JSON, so the rendered Secret is created that way.
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
  // The host as the pods see it (kube play puts them on a network of its own): the relay listens on
  // every address, for private (bridge) peers only.
  const admin = new URL(adminUrl);
  const relay = await startRelay('0.0.0.0', { host: admin.hostname, port: Number(admin.port || 5432) });
  cleanups.push(() => relay.close());
  const url = new URL(database.url);
  url.hostname = 'host.containers.internal';
  url.port = String(relay.port);
  secret.stringData = { ...secret.stringData, DATABASE_URL: url.toString() };

  const dir = mkdtempSync(join(tmpdir(), 'cfs-kube-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  // The Secret as podman 4.3 reads it: a podman secret of that name holding its `data` as a JSON
  // object of base64 values (not the whole Secret: that fails as "not valid JSON").
  const data = Object.fromEntries(Object.entries(secret.stringData ?? {}).map(([key, value]) => [key, Buffer.from(value).toString('base64')]));
  writeFileSync(join(dir, 'secret.json'), JSON.stringify(data));
  await podman(['secret', 'rm', secret.metadata.name]);
  await podman(['secret', 'create', secret.metadata.name, join(dir, 'secret.json')], { check: true });
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

  // kube play 4.3 publishes every containerPort on the host's same port (there is no hostPort in
  // the manifest), so a second replica fails "address already in use": for kube play only, the pod
  // declares no ports (each pod is reached on its own address, as in a cluster).
  const forKubePlay = structuredClone(deployment);
  for (const container of forKubePlay.spec?.template?.spec.containers ?? []) delete (container as { ports?: unknown }).ports;
  const file = join(dir, 'deployment.yaml');
  writeFileSync(file, [configMap, forKubePlay].map((manifest) => stringify(manifest)).join('---\n'));
  const replicas = deployment.spec?.replicas ?? 0;
  const pods = Array.from({ length: replicas }, (_, index) => `${deployment.metadata.name}-pod-${index}`);
  // What kube play leaves when it fails halfway (a pod without its containers), and the anonymous
  // volumes of the image's VOLUME: podman removes neither with `kube down`.
  const volumesBefore = new Set((await podman(['volume', 'ls', '-q'])).stdout.split('\n'));
  cleanups.push(async () => {
    await podman(['kube', 'down', file]);
    for (const pod of pods) await podman(['pod', 'rm', '-f', '--ignore', pod]);
    const created = (await podman(['volume', 'ls', '-q'])).stdout.split('\n').filter((volume) => /^[0-9a-f]{64}$/.test(volume) && !volumesBefore.has(volume));
    if (created.length > 0) await podman(['volume', 'rm', ...created]);
  });
  const played = await podman(['kube', 'play', file]);
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
    // The pod's address is its infra container's (the containers share its network namespace).
    const pod = name.slice(0, -(containerName.length + 1));
    const infra = (await podman(['pod', 'inspect', '--format', '{{.InfraContainerID}}', pod])).stdout.trim();
    const address = (await podman(['inspect', '--format', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', infra])).stdout.trim();
    while (Date.now() - playStarted < readyBoundMs) {
      if ((await get(`http://${address}:5000/readyz`)).status === 200) {
        ready.push(`${name} (${address}) in ${((Date.now() - playStarted) / 1000).toFixed(1)} s`);
        break;
      }
      if ((await podman(['inspect', '--format', '{{.State.Running}}', name])).stdout.trim() !== 'true') break;
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
