import type { Knex } from 'knex';
import * as createUsers from './20261122150000_create_users.js';
import * as createPlatformSecrets from './20261122150100_create_platform_secrets.js';
import * as createOperations from './20261122180000_create_operations.js';
import * as createComputeInstances from './20261122180100_create_compute_instances.js';
import * as createIam from './20261122190000_create_iam.js';
import * as createPublishing from './20261122160000_create_publishing.js';
import * as createWebhooks from './20261122170000_create_webhooks.js';
import * as indexUsersByCreation from './20261126110000_index_users_by_creation.js';
import * as publishingListIndexes from './20261126100000_publishing_list_indexes.js';
import * as publishingArticleTags from './20261126100100_publishing_article_tags.js';
import * as createLimitCounters from './20261126160000_create_limit_counters.js';
import * as boundedOperationLookups from './20261126130000_bounded_operation_lookups.js';
import * as addWebhookRouteOptions from './20261126120000_add_webhook_route_options.js';
import * as idempotencyAnswers from './20261128230000_idempotency_answers.js';
import * as createSetupCodes from './20261128230100_create_setup_codes.js';
import * as filterableCloudResources from './20261128230200_filterable_cloud_resources.js';
import * as addOperationCancelRequests from './20261128230300_add_operation_cancel_requests.js';
import * as addWebhookRequestProxyChain from './20261128233000_add_webhook_request_proxy_chain.js';
import * as filterableOperations from './20261129030000_filterable_operations.js';
import * as addUsersNameFolded from './20261129036000_add_users_name_folded.js';
import * as createComputeDisks from './20261129100000_create_compute_disks.js';
import * as dropUnansweredIdempotencyKeys from './20261129100100_drop_unanswered_idempotency_keys.js';

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

/**
 * Migrations are listed here rather than discovered on disk, so they load the same way under tsx,
 * jest and a compiled build. Names are `YYYYMMDDHHmmss_snake_name`; a landed migration is never edited.
 */
const MIGRATIONS: Record<string, Migration> = {
  '20261122150000_create_users': createUsers,
  '20261122150100_create_platform_secrets': createPlatformSecrets,
  '20261122180000_create_operations': createOperations,
  '20261122180100_create_compute_instances': createComputeInstances,
  '20261122190000_create_iam': createIam,
  '20261122160000_create_publishing': createPublishing,
  '20261122170000_create_webhooks': createWebhooks,
  '20261126110000_index_users_by_creation': indexUsersByCreation,
  '20261126100000_publishing_list_indexes': publishingListIndexes,
  '20261126100100_publishing_article_tags': publishingArticleTags,
  '20261126160000_create_limit_counters': createLimitCounters,
  '20261126130000_bounded_operation_lookups': boundedOperationLookups,
  '20261126120000_add_webhook_route_options': addWebhookRouteOptions,
  '20261128230000_idempotency_answers': idempotencyAnswers,
  '20261128230100_create_setup_codes': createSetupCodes,
  '20261128230200_filterable_cloud_resources': filterableCloudResources,
  '20261128230300_add_operation_cancel_requests': addOperationCancelRequests,
  '20261128233000_add_webhook_request_proxy_chain': addWebhookRequestProxyChain,
  '20261129030000_filterable_operations': filterableOperations,
  '20261129036000_add_users_name_folded': addUsersNameFolded,
  '20261129100000_create_compute_disks': createComputeDisks,
  '20261129100100_drop_unanswered_idempotency_keys': dropUnansweredIdempotencyKeys,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(MIGRATIONS).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => {
    const migration = MIGRATIONS[name];
    if (!migration) throw new Error(`unknown migration ${name}`);
    return migration;
  },
};
