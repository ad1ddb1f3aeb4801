import { InstanceSchema } from '../../../generated/proto/cloud/compute/v1/instance_pb.js';
import { AuthPublicKeySchema } from '../../../generated/proto/cloud/iam/v1/auth_public_key_pb.js';
import {
  compileFilter,
  FilterError,
  MAX_FILTER_DEPTH,
  MAX_FILTER_LENGTH,
  MAX_FILTER_RESTRICTIONS,
  requiredConditions,
  type Filter,
  type FilterOptions,
} from '../../../src/engines/filter/index.js';

/** As the cloud Lists read filters: `labels` stands for `metadata.labels`. */
const OPTIONS: FilterOptions = { aliases: { labels: 'metadata.labels' }, hidden: (field) => field.name === 'cloud_init_user_data' };

/** A compact print of a checked filter, so the table reads as the grammar does. */
function show(filter: Filter | undefined): string {
  if (filter === undefined) return '<all>';
  switch (filter.kind) {
    case 'and':
    case 'or':
      return `(${filter.terms.map(show).join(` ${filter.kind.toUpperCase()} `)})`;
    case 'not':
      return `NOT ${show(filter.term)}`;
    case 'compare':
      return `${filter.path.join('.')} ${filter.operator} ${filter.type}:${String(filter.value)}`;
    case 'map-entry':
      return `${filter.path.join('.')}[${filter.key}] ${filter.operator} ${filter.type}:${String(filter.value)}`;
    case 'has-key':
      return `${filter.path.join('.')} has ${filter.key}`;
    case 'contains':
      return `${filter.path.join('.')} contains ${filter.type}:${String(filter.value)}`;
    case 'present':
      return `${filter.path.join('.')}${filter.key === undefined ? '' : `[${filter.key}]`} set`;
  }
}

const valid: [string, { given: string; want: string }][] = [
  ['empty text matches everything', { given: '', want: '<all>' }],
  ['whitespace only matches everything', { given: ' \t\n', want: '<all>' }],
  ['an enum by the name the JSON mapping answers', { given: 'status.state = STATE_RUNNING', want: 'status.state = enum:STATE_RUNNING' }],
  ['an enum quoted', { given: 'status.state != "STATE_STOPPED"', want: 'status.state != enum:STATE_STOPPED' }],
  ['a map entry by key, bare value', { given: 'labels.env:prod', want: 'metadata.labels[env] = string:prod' }],
  ['the full path of labels', { given: 'metadata.labels.env = "prod"', want: 'metadata.labels[env] = string:prod' }],
  ['a map key test', { given: 'metadata.labels:team', want: 'metadata.labels has team' }],
  ['a quoted map key', { given: 'metadata.labels."app/tier" = web', want: 'metadata.labels[app/tier] = string:web' }],
  ['a map entry present', { given: 'metadata.labels.env:*', want: 'metadata.labels[env] set' }],
  ['proto names and JSON names both', { given: 'metadata.created_at > "2026-01-01T00:00:00Z"', want: 'metadata.createdAt > timestamp:2026-01-01T00:00:00Z' }],
  ['JSON name', { given: 'metadata.createdAt <= "2026-01-01T00:00:00.5+02:00"', want: 'metadata.createdAt <= timestamp:2026-01-01T00:00:00.5+02:00' }],
  ['an optional int32', { given: 'spec.restart_priority >= -3', want: 'spec.restartPriority >= number:-3' }],
  ['a bool', { given: 'spec.stopped = false', want: 'spec.stopped = bool:false' }],
  ['a repeated string holds a value', { given: 'spec.ssh_keys:"ssh-ed25519 AAA"', want: 'spec.sshKeys contains string:ssh-ed25519 AAA' }],
  ['a repeated field not empty', { given: 'spec.network_interfaces:*', want: 'spec.networkInterfaces set' }],
  ['a message present', { given: 'spec.boot_disk:*', want: 'spec.bootDisk set' }],
  [
    'AND, OR binds tighter (AIP-160)',
    {
      given: 'spec.stopped = true AND labels.a = x OR labels.b = y',
      want: '(spec.stopped = bool:true AND (metadata.labels[a] = string:x OR metadata.labels[b] = string:y))',
    },
  ],
  ['side by side is AND', { given: 'spec.stopped = true labels:x', want: '(spec.stopped = bool:true AND metadata.labels has x)' }],
  ['NOT and -', { given: 'NOT labels:x -labels:y', want: '(NOT metadata.labels has x AND NOT metadata.labels has y)' }],
  [
    'parentheses',
    {
      given: '(labels.a = x OR labels.b = y) AND NOT (status.state = STATE_ERROR)',
      want: '((metadata.labels[a] = string:x OR metadata.labels[b] = string:y) AND NOT status.state = enum:STATE_ERROR)',
    },
  ],
  ['no space needed around parentheses after keywords', { given: 'NOT(labels:x)', want: 'NOT metadata.labels has x' }],
  ['single-quoted strings and escapes', { given: "spec.description = 'it\\'s \\u00e9'", want: "spec.description = string:it's é" }],
  ['string ordering', { given: 'metadata.name >= "b"', want: 'metadata.name >= string:b' }],
  ['a field named like a keyword prefix', { given: 'metadata.name = ANDY', want: 'metadata.name = string:ANDY' }],
];

describe('compileFilter accepts the AIP-160 subset', () => {
  test.each(valid)('%s', (_name, { given, want }) => {
    expect(show(compileFilter(given, InstanceSchema, OPTIONS))).toBe(want);
  });
});

const malformed: [string, { given: string; want: string }][] = [
  [
    'a comparator is missing',
    { given: 'status.state', want: 'expected a comparator (=, !=, <, <=, >, >= or :) after status.state, found the end of the filter at column 13' },
  ],
  [
    'a value is missing',
    { given: 'status.state = ', want: 'expected a value (a quoted string, a number, true, false, a name or *), found the end of the filter at column 16' },
  ],
  ['an unclosed parenthesis', { given: '(labels:x', want: 'unclosed "(" at column 1' }],
  ['a stray closing parenthesis', { given: 'labels:x)', want: 'expected AND, OR or a restriction (this ")" closes nothing), found ")" at column 9' }],
  ['empty parentheses', { given: '()', want: 'expected an expression inside the parentheses, found ")" at column 2' }],
  ['AND without a right side', { given: 'labels:x AND', want: 'expected a space after AND, found the end of the filter at column 13' }],
  ['AND twice', { given: 'labels:x AND AND labels:y', want: 'expected a field name, found "A" at column 14' }],
  ['an unterminated string', { given: 'metadata.name = "abc', want: 'unterminated string at column 17' }],
  ['an unknown escape', { given: 'metadata.name = "a\\qb"', want: 'unknown escape in string (use \\\\, \\", \\\', \\n, \\t, \\r or \\uXXXX) at column 19' }],
  ['a dot without a name', { given: 'metadata. = x', want: 'expected a field name or map key after ".", found " " at column 10' }],
  ['a field that starts with a digit', { given: '1abc = x', want: 'expected a field name, found "1" at column 1' }],
  ['restrictions glued together', { given: 'labels:x(labels:y)', want: 'expected a space, AND or OR between restrictions, found "(" at column 9' }],
  ['an unknown field', { given: 'labels:x AND metadata.colour = red', want: 'unknown field "metadata.colour" at column 23' }],
  ['an unknown top-level field', { given: 'name = x', want: 'unknown field "name" at column 1' }],
  ['a secret field answers as unknown', { given: 'spec.cloud_init_user_data = x', want: 'unknown field "spec.cloud_init_user_data" at column 6' }],
  ['a string for a number field', { given: 'spec.restart_priority = high', want: '"spec.restart_priority" is an integer (int32); found high at column 25' }],
  ['a fraction for an integer field', { given: 'spec.restart_priority = 1.5', want: '"spec.restart_priority" is an integer (int32); found 1.5 at column 25' }],
  [
    'an unknown enum value',
    {
      given: 'status.state = RUNNING',
      want: '"status.state" is an enum (one of STATE_UNSPECIFIED, STATE_CREATING, STATE_STARTING, STATE_RUNNING, STATE_UPDATING, STATE_STOPPING, STATE_STOPPED, STATE_DELETING, STATE_ERROR); found RUNNING at column 16',
    },
  ],
  ['an enum ordered', { given: 'status.state > STATE_RUNNING', want: '"status.state" is an enum: only = and != compare it at column 16' }],
  ['a bool quoted', { given: 'spec.stopped = "true"', want: '"spec.stopped" is a bool (true or false); found "true" at column 16' }],
  [
    'a timestamp not RFC 3339',
    {
      given: 'metadata.created_at > "2026-01-01"',
      want: '"metadata.created_at" is a timestamp (RFC 3339, quoted: "2026-01-01T00:00:00Z"); found "2026-01-01" at column 23',
    },
  ],
  [
    'a timestamp unquoted',
    { given: 'metadata.created_at > 2026-01-01T00:00:00Z', want: 'expected a space, AND or OR between restrictions, found ":" at column 36' },
  ],
  [
    'a map compared whole',
    {
      given: 'metadata.labels = x',
      want: '"metadata.labels" is a map: use metadata.labels:<key> (has the key) or metadata.labels.<key> = <value> at column 19',
    },
  ],
  ['a map with two keys', { given: 'metadata.labels.a.b = x', want: '"metadata.labels" is a map: only one key may follow it at column 19' }],
  [
    'a message compared',
    {
      given: 'spec.boot_disk = x',
      want: '"spec.boot_disk" is a message: compare one of its fields (spec.boot_disk.<field>) or test it with spec.boot_disk:* at column 18',
    },
  ],
  [
    'a repeated field compared with =',
    { given: 'spec.ssh_keys = x', want: '"spec.ssh_keys" is a repeated field: use spec.ssh_keys:<value> (holds the value) at column 17' },
  ],
  [
    'inside a repeated message',
    {
      given: 'spec.network_interfaces.subnet_id:x',
      want: '"spec.network_interfaces" is a repeated field: fields inside its elements cannot be filtered on at column 25',
    },
  ],
  ['below a scalar', { given: 'spec.description.x = 1', want: '"spec.description" has no fields at column 18' }],
];

describe('compileFilter refuses, naming the column and what it expected', () => {
  test.each(malformed)('%s', (_name, { given, want }) => {
    let error: unknown;
    try {
      compileFilter(given, InstanceSchema, OPTIONS);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(FilterError);
    expect((error as FilterError).message).toBe(want);
  });
});

describe('compileFilter bounds its input', () => {
  test.each([
    ['longer than the maximum', 'metadata.name = "' + 'x'.repeat(MAX_FILTER_LENGTH) + '"', `filter is longer than ${MAX_FILTER_LENGTH} characters`],
    [
      'nested too deep',
      '('.repeat(MAX_FILTER_DEPTH + 1) + 'labels:x' + ')'.repeat(MAX_FILTER_DEPTH + 1),
      `filter nests deeper than ${MAX_FILTER_DEPTH} levels at column ${MAX_FILTER_DEPTH + 1}`,
    ],
    // Each `NOT (` opens two levels: the 17th NOT opens the 33rd.
    [
      'NOT nested too deep',
      'NOT ('.repeat(MAX_FILTER_DEPTH / 2 + 1) + 'labels:x' + ')'.repeat(MAX_FILTER_DEPTH / 2 + 1),
      `filter nests deeper than ${MAX_FILTER_DEPTH} levels at column ${5 * (MAX_FILTER_DEPTH / 2) + 1}`,
    ],
    [
      'too many restrictions',
      Array.from({ length: MAX_FILTER_RESTRICTIONS + 1 }, (_, i) => `labels:k${i}`).join(' OR '),
      `filter holds more than ${MAX_FILTER_RESTRICTIONS} restrictions`,
    ],
  ])('%s', (_name, given, want) => {
    expect(() => compileFilter(given, InstanceSchema, OPTIONS)).toThrow(want);
  });

  test('the deepest nesting allowed is read', () => {
    expect(show(compileFilter('('.repeat(MAX_FILTER_DEPTH) + 'labels:x' + ')'.repeat(MAX_FILTER_DEPTH), InstanceSchema, OPTIONS))).toBe(
      'metadata.labels has x',
    );
  });
});

test('aliases spell a field path another way (the public keys` service_account_id)', () => {
  const filter = compileFilter('service_account_id = "serviceaccount-1"', AuthPublicKeySchema, { aliases: { service_account_id: 'spec.service_account_id' } });
  expect(show(filter)).toBe('spec.serviceAccountId = string:serviceaccount-1');
});

test.each([
  ['a single condition', 'labels.env = prod', ['metadata.labels[env] = string:prod']],
  [
    'the conditions of a conjunction',
    'labels.env = prod AND (status.state = STATE_RUNNING labels:team)',
    ['metadata.labels[env] = string:prod', 'status.state = enum:STATE_RUNNING', 'metadata.labels has team'],
  ],
  ['none under OR', 'labels.env = prod OR labels:team', []],
  ['none under NOT', 'NOT labels.env = prod', []],
])('requiredConditions: %s', (_name, given, want) => {
  expect(requiredConditions(compileFilter(given, InstanceSchema, OPTIONS)).map(show)).toEqual(want);
});
