import { create, type MessageInitShape } from '@bufbuild/protobuf';
import { UpdateInstanceRequestSchema } from '../../generated/proto/cloud/compute/v1/instance_service_pb.js';
import { Code, ConnectError } from '@connectrpc/connect';
import { ServiceErrorSchema, ServiceError_RetryType as RetryType } from '../../generated/proto/cloud/common/v1/error_pb.js';
import { backoffMs, isRetriable, resetMaskFromMessage } from '../../src/sdk/index.js';

function failed(code: Code, retryType?: RetryType, message = 'failed'): ConnectError {
  const details =
    retryType === undefined ? [] : [{ desc: ServiceErrorSchema, value: create(ServiceErrorSchema, { service: 'compute', code: 'X', retryType }) }];
  return new ConnectError(message, code, undefined, details);
}

// gosdk conn/retries.go IsRetriableNebiusError, case for case.
const CASES: Array<[string, { given: unknown; want: boolean }]> = [
  ['UNAVAILABLE without details', { given: failed(Code.Unavailable), want: true }],
  ['RESOURCE_EXHAUSTED without details', { given: failed(Code.ResourceExhausted), want: true }],
  ['ABORTED whose ServiceError says CALL', { given: failed(Code.Aborted, RetryType.CALL), want: true }],
  ['INVALID_ARGUMENT whose ServiceError says CALL', { given: failed(Code.InvalidArgument, RetryType.CALL), want: true }],
  ['RESOURCE_EXHAUSTED whose ServiceError says NOTHING (a quota failure)', { given: failed(Code.ResourceExhausted, RetryType.NOTHING), want: false }],
  ['UNAVAILABLE whose ServiceError says UNIT_OF_WORK', { given: failed(Code.Unavailable, RetryType.UNIT_OF_WORK), want: false }],
  ['ABORTED whose ServiceError leaves it UNSPECIFIED', { given: failed(Code.Aborted, RetryType.UNSPECIFIED), want: false }],
  ['UNAVAILABLE whose ServiceError leaves it UNSPECIFIED', { given: failed(Code.Unavailable, RetryType.UNSPECIFIED), want: true }],
  ['INVALID_ARGUMENT without details', { given: failed(Code.InvalidArgument), want: false }],
  ['NOT_FOUND', { given: failed(Code.NotFound, RetryType.NOTHING), want: false }],
  ['UNKNOWN from a proxy answering HTTP 522', { given: failed(Code.Unknown, undefined, 'HTTP 522'), want: true }],
  ['UNKNOWN otherwise', { given: failed(Code.Unknown), want: false }],
  ['a refused connection', { given: Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }), want: true }],
  ['any other error', { given: new Error('boom'), want: false }],
];

test.each(CASES)('%s: retried is %s', (_name, { given, want }) => {
  expect(isRetriable(given)).toBe(want);
});

const BACKOFF: Array<[string, { retry: number; random: number; want: number }]> = [
  ['the first retry waits the initial pause', { retry: 1, random: 0.5, want: 100 }],
  ['each retry doubles it', { retry: 3, random: 0.5, want: 400 }],
  ['up to the cap', { retry: 20, random: 0.5, want: 1000 }],
  ['jitter shortens by up to its fraction', { retry: 1, random: 0, want: 90 }],
  ['and lengthens by up to its fraction', { retry: 1, random: 1, want: 110 }],
];

test.each(BACKOFF)('backoff: %s', (_name, { retry, random, want }) => {
  expect(backoffMs(retry, { initialBackoffMs: 100, maxBackoffMs: 1000, jitter: 0.1 }, () => random)).toBeCloseTo(want);
});

// gosdk proto/fieldmask/protobuf/from_message_test.go, on our Instance.
const RESET_MASKS: Array<[string, { given: MessageInitShape<typeof UpdateInstanceRequestSchema>; want: string }]> = [
  ['every unset field of a bare request', { given: {}, want: 'metadata,spec' }],
  [
    'only the default and unset fields of a filled one; lists and maps of messages walked under *',
    {
      given: {
        metadata: { id: 'instance-1', name: 'vm', labels: { team: 'a' } },
        spec: {
          description: 'web',
          sshKeys: ['k'],
          ports: { http: { port: 80 } },
          stopped: false,
          restartPriority: 0,
          placement: { case: 'zoneId', value: 'z' },
        },
      },
      want: 'metadata.(created_at,parent_id,resource_version,updated_at),spec.(boot_disk,cloud_init_user_data,image_family,network_interfaces,placement_group,ports.*.protocol,recovery_policy,resources,restart_priority,secondary_disks,service_account_id,stopped)',
    },
  ],
];

test.each(RESET_MASKS)('reset mask of a full update: %s', (_name, { given, want }) => {
  expect(resetMaskFromMessage(UpdateInstanceRequestSchema, create(UpdateInstanceRequestSchema, given))).toBe(want);
});
