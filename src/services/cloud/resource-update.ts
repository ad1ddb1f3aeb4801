import { create, type DescMessage, type MessageInitShape, type MessageShape } from '@bufbuild/protobuf';
import { AppError } from '../../errors.js';
import { applyResetMask, ImmutableFieldError, type ResetMask } from '../../engines/reset-mask/index.js';

/**
 * The Update rule every resource service shares (docs/cloud-api.md, "Update with a reset mask"): `metadata.resource_version` 0 skips the
 * check, another value that differs from the stored one → ABORTED with a resource_conflict detail;
 * then the request replaces the stored resource under the reset mask (OUTPUT_ONLY fields kept, a
 * changed IMMUTABLE field → INVALID_ARGUMENT naming it). Generic over any `{metadata, spec, status}`.
 */
export function replaceWithResetMask<Desc extends DescMessage>(
  schema: Desc,
  stored: MessageShape<Desc> & { metadata?: { id: string; resourceVersion: bigint } },
  incoming: { metadata?: { resourceVersion: bigint } } & MessageInitShape<Desc>,
  mask: ResetMask,
  label: string,
): MessageShape<Desc> {
  const expected = incoming.metadata?.resourceVersion ?? 0n;
  const storedVersion = stored.metadata?.resourceVersion ?? 0n;
  if (expected !== 0n && expected !== storedVersion) {
    throw new AppError('aborted', `metadata.resource_version ${expected} does not match the stored ${storedVersion}; read the ${label} again`, {
      resourceId: stored.metadata?.id ?? '',
      detail: { kind: 'resource_conflict' },
    });
  }
  try {
    const next = applyResetMask(schema, stored, create(schema, incoming), mask) as typeof stored;
    // resource_version is the server's: a mask naming it (the Python SDK's full-update mask does)
    // must not write the request's 0 over it, or the bump after the change would restart at 1.
    if (next.metadata && stored.metadata) next.metadata.resourceVersion = stored.metadata.resourceVersion;
    return next;
  } catch (error) {
    if (error instanceof ImmutableFieldError) {
      throw new AppError('invalid_argument', error.message, { violations: [{ field: error.fieldPath, message: 'is immutable and cannot be changed' }] });
    }
    throw error;
  }
}
