import { create, toBinary } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { resourceDocument } from '../../src/store/resource-document.js';
import type { Knex } from 'knex';
import { ProjectSchema } from '../../generated/proto/cloud/iam/v1/project_pb.js';

/**
 * Makes projects with fixed ids (named after their ids) under the installation's tenant, for tests
 * written against well-known project ids. Real clients create projects through ProjectService,
 * which picks the ids. Idempotent; the server must have started once (the tenant exists).
 */
export async function seedProjects(knex: Knex, ids: readonly string[]): Promise<void> {
  const tenant = await knex('iam_tenants').first('id');
  if (!tenant) throw new Error('no tenant yet: start a server on this database first');
  const now = timestampFromDate(new Date());
  for (const id of ids) {
    const project = create(ProjectSchema, {
      metadata: { id, parentId: tenant.id, name: id, resourceVersion: 1n, createdAt: now, updatedAt: now },
      status: { active: true },
    });
    await knex('iam_projects')
      .insert({
        id,
        parent_id: tenant.id,
        name: id,
        resource_version: 1,
        data: Buffer.from(toBinary(ProjectSchema, project)),
        doc: resourceDocument(ProjectSchema, project),
      })
      .onConflict('id')
      .ignore();
  }
}
