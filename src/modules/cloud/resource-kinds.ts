import type { ProjectChild, ResourceKind } from '../../services/cloud/resource-kind.js';
import { diskKind } from '../../services/compute/disk-service.js';
import { instanceKind } from '../../services/compute/instance-service.js';

/**
 * The resource kinds the cloud module serves (each declared once, in its service file): their
 * services, their work and the children IAM's project-delete guard counts all come from here.
 */
export const CLOUD_RESOURCE_KINDS: readonly ResourceKind[] = [instanceKind, diskKind];

/** The tables of the kinds that live in a project: a project holding rows in any of them cannot be deleted. */
export function projectChildren(kinds: readonly ResourceKind[] = CLOUD_RESOURCE_KINDS): ProjectChild[] {
  return kinds.filter((kind) => kind.parent === 'project').map(({ table, plural }) => ({ table, plural }));
}
