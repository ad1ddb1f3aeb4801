/**
 * deploy/kubernetes/ as a cluster would receive it (issue 28): every overlay rendered by
 * `kubectl kustomize` (Debian's kubernetes-client; CI installs it), every object validated against
 * the Kubernetes API schema of a current release from npm packages (no download at run time), and the
 * policies the manifests promise checked on the rendered YAML. `npm run test:image` runs the rendered
 * Deployment under `podman kube play`; what kube play ignores (probes, preStop, Services, PDB, HPA) is
 * checked here.
 *
 * The schema checks are two: kubernetes-models (required fields, types, enums, from the OpenAPI spec)
 * and a strict walk over @kubernetes/client-node's model type maps, which rejects a field the API does
 * not have (kubernetes-models lets unknown fields through, and the API server would drop them
 * silently: a misspelled `readinessProbe` is a pod with no readiness probe).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { SETTINGS } from '../../src/settings/table.js';

const ROOT = new URL('../../', import.meta.url).pathname;
const KUBE = join(ROOT, 'deploy/kubernetes');

/* eslint-disable @typescript-eslint/no-explicit-any -- rendered YAML is walked generically */
type Manifest = Record<string, any> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
};

function kustomize(dir: string): Manifest[] {
  const yaml = execFileSync('kubectl', ['kustomize', '--load-restrictor', 'LoadRestrictionsNone', dir], { encoding: 'utf8' });
  return parseAllDocuments(yaml).map((document) => document.toJSON() as Manifest);
}

/** The postgres overlay with the PgBouncer component, as an operator would combine them. */
function renderPgBouncer(): Manifest[] {
  const dir = mkdtempSync(join(tmpdir(), 'cfs-kustomize-'));
  try {
    writeFileSync(
      join(dir, 'kustomization.yaml'),
      `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - ${relative(dir, join(KUBE, 'overlays/postgres'))}\ncomponents:\n  - ${relative(dir, join(KUBE, 'components/pgbouncer'))}\n`,
    );
    return kustomize(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const rendered: Record<string, Manifest[]> = {
  postgres: kustomize(join(KUBE, 'overlays/postgres')),
  embedded: kustomize(join(KUBE, 'overlays/embedded')),
  'postgres + pgbouncer': renderPgBouncer(),
  gateway: kustomize(join(KUBE, 'gateway')),
};
const overlays = ['postgres', 'embedded', 'postgres + pgbouncer'] as const;
const all = Object.entries(rendered).flatMap(([overlay, manifests]) => manifests.map((manifest) => [overlay, manifest] as const));

const one = (manifests: Manifest[], kind: string): Manifest => {
  const found = manifests.filter((manifest) => manifest.kind === kind);
  expect(found).toHaveLength(1);
  return found[0] as Manifest;
};
const maybe = (manifests: Manifest[], kind: string) => manifests.find((manifest) => manifest.kind === kind);
/** The server's workload: the Deployment (postgres) or the StatefulSet (embedded). */
const workload = (manifests: Manifest[]) => (maybe(manifests, 'Deployment') ?? one(manifests, 'StatefulSet')) as Manifest;
const podSpec = (manifest: Manifest) => manifest.spec.template.spec;
const serverContainer = (manifests: Manifest[]) => podSpec(workload(manifests)).containers[0];
const settings = (manifests: Manifest[]) => ({ ...one(manifests, 'ConfigMap').data, ...one(manifests, 'Secret').stringData }) as Record<string, string>;
const matches = (selector: Record<string, string>, labels: Record<string, string>) =>
  Object.keys(selector).length > 0 && Object.entries(selector).every(([key, value]) => labels[key] === value);

// ---- schema ---------------------------------------------------------------------------------------

/** kubernetes-models' class for a kind: `kubernetes-models/apps/v1/Deployment`, core `kubernetes-models/v1/Service`. */
async function modelClass(manifest: Manifest): Promise<new (data: unknown) => { validate(): void }> {
  const [group, version] = manifest.apiVersion.includes('/') ? manifest.apiVersion.split('/') : [undefined, manifest.apiVersion];
  const module =
    group === 'gateway.networking.k8s.io'
      ? `@kubernetes-models/gateway-api/${group}/${version}/${manifest.kind}`
      : `kubernetes-models/${group ? `${group}/` : ''}${version}/${manifest.kind}`;
  const loaded = (await import(module)) as Record<string, unknown>;
  const found = (loaded[manifest.kind] ?? (loaded.default as Record<string, unknown> | undefined)?.[manifest.kind]) as
    (new (data: unknown) => { validate(): void }) | undefined;
  if (!found) throw new Error(`no model for ${manifest.apiVersion} ${manifest.kind} (${module})`);
  return found;
}

/**
 * Validates with kubernetes-models. GRPCRoute went GA (v1) in Gateway API 1.1 unchanged from v1alpha2;
 * @kubernetes-models/gateway-api 0.5 (the last release for Node 20) has it only as v1alpha2, so a v1
 * GRPCRoute is checked against that schema under its old apiVersion. 2.0.0 has GRPCRoute v1 but needs
 * Node >= 22 and kubernetes-models 5 (this project supports Node >= 20.19).
 */
async function validateModel(manifest: Manifest): Promise<void> {
  const checked =
    manifest.apiVersion === 'gateway.networking.k8s.io/v1' && manifest.kind === 'GRPCRoute'
      ? { ...manifest, apiVersion: 'gateway.networking.k8s.io/v1alpha2' }
      : manifest;
  const Model = await modelClass(checked);
  new Model(checked).validate();
}

type AttributeMap = { name: string; baseName: string; type: string }[];
const models = k8s as unknown as Record<string, { getAttributeTypeMap?: () => AttributeMap } | undefined>;

/** client-node's model name of a top-level object: apps/v1 Deployment → V1Deployment, autoscaling/v2 → V2…. */
function topModel(manifest: Manifest): string | undefined {
  const version = manifest.apiVersion.split('/').at(-1) ?? '';
  const name = `${version.charAt(0).toUpperCase()}${version.slice(1)}${manifest.kind}`;
  return models[name]?.getAttributeTypeMap ? name : undefined;
}

/** Every field the API does not know and every value of the wrong JSON type, as `path: problem`. */
function strict(value: unknown, type: string, path: string, errors: string[]): void {
  if (value === null || value === undefined) return;
  const array = /^Array<(.+)>$/.exec(type);
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (array) {
    if (!Array.isArray(value)) errors.push(`${path}: not a list`);
    else value.forEach((item, index) => strict(item, array[1] as string, `${path}[${index}]`, errors));
  } else if (map) {
    if (typeof value !== 'object' || Array.isArray(value)) errors.push(`${path}: not a map`);
    else for (const [key, item] of Object.entries(value)) strict(item, map[1] as string, `${path}.${key}`, errors);
  } else if (type === 'string' || type === 'Date') {
    if (typeof value !== 'string') errors.push(`${path}: not a string (${JSON.stringify(value)})`);
  } else if (type === 'number') {
    if (typeof value !== 'number') errors.push(`${path}: not a number (${JSON.stringify(value)})`);
  } else if (type === 'boolean') {
    if (typeof value !== 'boolean') errors.push(`${path}: not a boolean (${JSON.stringify(value)})`);
  } else if (type === 'IntOrString') {
    if (typeof value !== 'string' && typeof value !== 'number') errors.push(`${path}: neither integer nor string`);
  } else if (type !== 'any' && type !== 'object') {
    const attributes = models[type]?.getAttributeTypeMap?.();
    if (!attributes) {
      errors.push(`${path}: unknown model ${type}`);
      return;
    }
    if (typeof value !== 'object' || Array.isArray(value)) {
      errors.push(`${path}: not an object`);
      return;
    }
    const known = new Map(attributes.map((attribute) => [attribute.baseName, attribute.type]));
    for (const [key, item] of Object.entries(value)) {
      const itemType = known.get(key);
      if (itemType === undefined) errors.push(`${path}.${key}: no such field in ${type}`);
      else strict(item, itemType, `${path}.${key}`, errors);
    }
  }
}

function strictErrors(manifest: Manifest): string[] {
  const model = topModel(manifest);
  if (!model) throw new Error(`no client-node model for ${manifest.apiVersion} ${manifest.kind}`);
  const errors: string[] = [];
  strict(manifest, model, manifest.kind, errors);
  return errors;
}
const inClientNode = (manifest: Manifest) => !manifest.apiVersion.startsWith('gateway.networking.k8s.io/');

describe('deploy/kubernetes: rendering and schema', () => {
  it('renders every overlay, the PgBouncer component and the Gateway routes', () => {
    const kinds = (overlay: string) => rendered[overlay]?.map((manifest) => manifest.kind).sort();
    expect(kinds('postgres')).toEqual([
      'ConfigMap',
      'Deployment',
      'HorizontalPodAutoscaler',
      'Job',
      'NetworkPolicy',
      'PodDisruptionBudget',
      'Secret',
      'Service',
      'ServiceAccount',
    ]);
    expect(kinds('embedded')).toEqual(['ConfigMap', 'NetworkPolicy', 'Secret', 'Service', 'ServiceAccount', 'StatefulSet']);
    expect(kinds('postgres + pgbouncer')).toEqual(kinds('postgres'));
    expect(kinds('gateway')).toEqual(['GRPCRoute', 'HTTPRoute']);
  });

  it.each(all.map(([overlay, manifest]) => [overlay, `${manifest.kind} ${manifest.metadata.name}`, manifest] as const))(
    '%s: %s validates against the Kubernetes API schema',
    async (_overlay, _name, manifest) => {
      await expect(validateModel(manifest)).resolves.toBeUndefined();
      if (inClientNode(manifest)) expect(strictErrors(manifest)).toEqual([]);
    },
  );

  it('the schema check catches a misspelled field, a field at the wrong level and a wrong type', async () => {
    const deployment = structuredClone(one(rendered.postgres as Manifest[], 'Deployment'));
    const container = podSpec(deployment).containers[0];
    container.readinesProbe = container.readinessProbe;
    delete container.readinessProbe;
    container.ports[0].containerport = 5000;
    deployment.spec.terminationGracePeriodSeconds = 30;
    expect(strictErrors(deployment).sort()).toEqual(
      [
        'Deployment.spec.terminationGracePeriodSeconds: no such field in V1DeploymentSpec',
        'Deployment.spec.template.spec.containers[0].ports[0].containerport: no such field in V1ContainerPort',
        'Deployment.spec.template.spec.containers[0].readinesProbe: no such field in V1Container',
      ].sort(),
    );

    const wrongType = structuredClone(one(rendered.postgres as Manifest[], 'Deployment'));
    wrongType.spec.replicas = 'three';
    await expect(validateModel(wrongType)).rejects.toThrow(/replicas/);
    expect(strictErrors(wrongType)).toEqual(['Deployment.spec.replicas: not a number ("three")']);
  });
});

// ---- policies --------------------------------------------------------------------------------------

/** Every environment variable the server reads: the settings table's (src/settings/table.ts). */
function configSettings(): string[] {
  return Object.values(SETTINGS)
    .map((setting) => setting.env)
    .sort();
}

describe('deploy/kubernetes: policies', () => {
  it('the ConfigMap and Secret carry every setting of src/settings/table.ts, and no other', () => {
    const read = configSettings();
    expect(read.length).toBeGreaterThan(50);
    const base = rendered.postgres as Manifest[];
    const configMap = Object.keys(one(base, 'ConfigMap').data);
    const secret = Object.keys(one(base, 'Secret').stringData);
    expect([...configMap, ...secret].sort()).toEqual(read);
    expect(configMap.filter((name) => secret.includes(name))).toEqual([]);
    for (const name of ['DATABASE_URL', 'DATABASE_LISTEN_URL', 'ADMIN_PASSWORD', 'SUPERUSER_PASSWORD', 'METRICS_TOKEN']) expect(secret).toContain(name);
  });

  it.each(overlays)('%s: the pods probe /healthz (startup, liveness) and /readyz (readiness) on a declared port, with no tool in the image', (overlay) => {
    const manifests = rendered[overlay] as Manifest[];
    const container = serverContainer(manifests);
    const ports = new Map<string | number, number>(
      container.ports.flatMap((port: { name?: string; containerPort: number }) => [
        [port.containerPort, port.containerPort],
        ...(port.name ? [[port.name, port.containerPort] as const] : []),
      ]),
    );
    const expected = { startupProbe: '/healthz', livenessProbe: '/healthz', readinessProbe: '/readyz' } as const;
    for (const [probe, path] of Object.entries(expected)) {
      expect(container[probe]?.httpGet).toEqual({ path, port: 'http' });
      expect(container[probe].exec).toBeUndefined();
      expect(ports.get(container[probe].httpGet.port)).toBe(Number(settings(manifests).PORT));
    }
    // Liveness must not restart pods for a slow start: the startup probe covers STARTUP_TIMEOUT_MS (60 s).
    expect(container.startupProbe.periodSeconds * container.startupProbe.failureThreshold).toBeGreaterThanOrEqual(60);
  });

  it.each(overlays)('%s: the preStop sleep matches SHUTDOWN_DELAY_MS and the termination grace outlasts preStop + delay + grace', (overlay) => {
    const manifests = rendered[overlay] as Manifest[];
    const pod = podSpec(workload(manifests));
    const container = serverContainer(manifests);
    const env = settings(manifests);
    const delayMs = Number(env.SHUTDOWN_DELAY_MS || 0);
    const graceMs = Number(env.SHUTDOWN_GRACE_MS || 10_000);
    const preStopSeconds = container.lifecycle?.preStop?.sleep?.seconds ?? 0;
    expect(container.lifecycle?.preStop?.exec).toBeUndefined();
    expect(preStopSeconds * 1000).toBe(delayMs);
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(preStopSeconds + (delayMs + graceMs) / 1000);
  });

  it.each(overlays)('%s: non-root, read-only root filesystem, no capabilities, no service account token, writable volumes only where needed', (overlay) => {
    const manifests = rendered[overlay] as Manifest[];
    for (const manifest of manifests.filter((item) => ['Deployment', 'StatefulSet', 'Job'].includes(item.kind))) {
      const pod = podSpec(manifest);
      expect(pod.securityContext.runAsNonRoot).toBe(true);
      expect(pod.securityContext.runAsUser).not.toBe(0);
      expect(pod.securityContext.seccompProfile).toEqual({ type: 'RuntimeDefault' });
      expect(pod.automountServiceAccountToken).toBe(false);
      for (const container of pod.containers) {
        expect(container.securityContext).toEqual({
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          runAsNonRoot: true,
          capabilities: { drop: ['ALL'] },
        });
        expect(container.resources.requests.memory).toBeDefined();
        expect(container.resources.limits.memory).toBeDefined();
      }
      // PostgreSQL: nothing written in the pod (test:image runs the image with no writable path at all).
      // PGlite: its data directory, a persistent volume.
      const mounts = pod.containers
        .flatMap((container: { volumeMounts?: { mountPath: string }[] }) => container.volumeMounts ?? [])
        .map((mount: { mountPath: string }) => mount.mountPath);
      expect(mounts).toEqual(manifest.kind === 'StatefulSet' ? [settings(manifests).DATA_DIR] : []);
    }
  });

  it.each(overlays)('%s: the Service selects the pods, its ports reach the container port, gRPC is marked h2c', (overlay) => {
    const manifests = rendered[overlay] as Manifest[];
    const service = one(manifests, 'Service');
    const podLabels = workload(manifests).spec.template.metadata.labels;
    expect(matches(service.spec.selector, podLabels)).toBe(true);
    const containerPorts = serverContainer(manifests).ports.map((port: { name: string }) => port.name);
    for (const port of service.spec.ports) expect(containerPorts).toContain(port.targetPort);
    expect(service.spec.ports.find((port: { name: string }) => port.name === 'grpc')?.appProtocol).toBe('kubernetes.io/h2c');
    expect(matches(workload(manifests).spec.selector.matchLabels, podLabels)).toBe(true);
    for (const constraint of podSpec(workload(manifests)).topologySpreadConstraints ?? [])
      expect(matches(constraint.labelSelector.matchLabels, podLabels)).toBe(true);
    const policy = one(manifests, 'NetworkPolicy');
    expect(matches(policy.spec.podSelector.matchLabels, podLabels)).toBe(true);
    for (const rule of policy.spec.ingress) for (const port of rule.ports) expect(containerPorts).toContain(port.port);
  });

  it.each(['postgres', 'postgres + pgbouncer'] as const)(
    '%s: ≥ 2 replicas; the PDB and HPA govern them; the migration Job runs first with the same image',
    (overlay) => {
      const manifests = rendered[overlay] as Manifest[];
      const deployment = one(manifests, 'Deployment');
      const podLabels = deployment.spec.template.metadata.labels;
      expect(deployment.spec.replicas).toBeGreaterThanOrEqual(2);
      expect(deployment.spec.strategy.rollingUpdate.maxUnavailable).toBe(0);
      expect(matches(one(manifests, 'PodDisruptionBudget').spec.selector.matchLabels, podLabels)).toBe(true);
      const hpa = one(manifests, 'HorizontalPodAutoscaler');
      expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata.name });
      expect(hpa.spec.minReplicas).toBe(deployment.spec.replicas);
      const job = one(manifests, 'Job');
      expect(podSpec(job).containers[0].image).toBe(serverContainer(manifests).image);
      expect(podSpec(job).containers[0].args).toEqual(['migrate']);
      expect(podSpec(job).containers[0].envFrom).toEqual(serverContainer(manifests).envFrom);
      expect(Number(job.metadata.annotations?.['argocd.argoproj.io/sync-wave'])).toBeLessThan(
        Number(deployment.metadata.annotations?.['argocd.argoproj.io/sync-wave']),
      );
      expect(job.metadata.annotations?.['argocd.argoproj.io/hook']).toBe('PreSync');
      // The pods leave migrating to the Job and wait, not ready, for their schema.
      expect(settings(manifests).MIGRATE).toBe('false');
      expect(settings(manifests).DATABASE_URL).toMatch(/^postgres:\/\//);
    },
  );

  it('postgres + pgbouncer: the pool goes through PgBouncer in transaction mode, LISTEN and the lock direct', () => {
    const env = settings(rendered['postgres + pgbouncer'] as Manifest[]);
    expect(env.DATABASE_POOL_MODE).toBe('transaction');
    expect(new URL(env.DATABASE_URL as string).port).toBe('6432');
    expect(new URL(env.DATABASE_LISTEN_URL as string).port).toBe('5432');
  });

  it('embedded: one replica on a persistent volume, migrating at start, no HPA, PDB or Job', () => {
    const manifests = rendered.embedded as Manifest[];
    const statefulSet = one(manifests, 'StatefulSet');
    expect(statefulSet.spec.replicas).toBe(1);
    expect(statefulSet.spec.volumeClaimTemplates.map((claim: Manifest) => claim.metadata.name)).toEqual(['data']);
    expect(settings(manifests).MIGRATE).toBe('true');
    expect(settings(manifests).DATABASE_URL).toBe('');
    for (const kind of ['Deployment', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'Job']) expect(maybe(manifests, kind)).toBeUndefined();
  });

  it('every image is pinned (a tag other than latest, or a digest)', () => {
    const images = all.flatMap(([, manifest]) => (manifest.spec?.template?.spec?.containers ?? []).map((container: { image: string }) => container.image));
    expect(images.length).toBeGreaterThan(0);
    for (const image of images) {
      expect(image).toMatch(/(:[\w.-]+|@sha256:[0-9a-f]{64})$/);
      expect(image).not.toMatch(/:latest$/);
    }
    const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
    expect(new Set(images)).toEqual(new Set([`cfs-server:${version}`]));
  });

  it("the Gateway routes send HTTP to the Service's http port and gRPC to its h2c port", () => {
    const service = one(rendered.postgres as Manifest[], 'Service');
    const port = (name: string) => service.spec.ports.find((item: { name: string }) => item.name === name).port;
    const routes = rendered.gateway as Manifest[];
    expect(one(routes, 'HTTPRoute').spec.rules[0].backendRefs).toEqual([{ name: service.metadata.name, port: port('http') }]);
    expect(one(routes, 'GRPCRoute').spec.rules[0].backendRefs).toEqual([{ name: service.metadata.name, port: port('grpc') }]);
  });
});
