/**
 * Every change between two GraphQL schemas on the one severity scale: breaking and dangerous ones as
 * graphql-js itself finds them (`findBreakingChanges`, `findDangerousChanges`), plus what those leave
 * out, found by walking both schemas: new types, fields and directives (additive), compatible type
 * changes (`String` → `String!` on an output), deprecations (additive, a notice) and descriptions
 * (documentation-only).
 */
import {
  BreakingChangeType,
  DangerousChangeType,
  findBreakingChanges,
  findDangerousChanges,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isObjectType,
  isSpecifiedDirective,
  isSpecifiedScalarType,
  type GraphQLArgument,
  type GraphQLNamedType,
  type GraphQLSchema,
} from 'graphql';
import type { Severity } from './changes.js';

/** One change: the schema coordinate a client names (`Query.articles`, `Role`), what changed, what to do. */
export interface GraphqlChange {
  severity: Severity;
  subject: string;
  change: string;
  action: string;
  rule?: string;
}

const BREAKING_ACTIONS: Partial<Record<BreakingChangeType, string>> = {
  [BreakingChangeType.TYPE_REMOVED]: 'stop using the type in operations and fragments',
  [BreakingChangeType.TYPE_CHANGED_KIND]: 'rewrite the selections and fragments on that type',
  [BreakingChangeType.TYPE_REMOVED_FROM_UNION]: 'drop the fragments on that member',
  [BreakingChangeType.VALUE_REMOVED_FROM_ENUM]: 'stop sending or expecting that value',
  [BreakingChangeType.REQUIRED_INPUT_FIELD_ADDED]: 'send the new field in every input of that type',
  [BreakingChangeType.IMPLEMENTED_INTERFACE_REMOVED]: 'drop the fragments that rely on that interface',
  [BreakingChangeType.FIELD_REMOVED]: 'stop selecting or sending the field',
  [BreakingChangeType.FIELD_CHANGED_KIND]: 'read or send the field with its new type',
  [BreakingChangeType.REQUIRED_ARG_ADDED]: 'pass the new argument on every call',
  [BreakingChangeType.ARG_REMOVED]: 'stop passing the argument',
  [BreakingChangeType.ARG_CHANGED_KIND]: 'pass the argument with its new type (a non-null one on every call)',
  [BreakingChangeType.DIRECTIVE_REMOVED]: 'stop using the directive',
};

const DANGEROUS_ACTIONS: Partial<Record<DangerousChangeType, string>> = {
  [DangerousChangeType.VALUE_ADDED_TO_ENUM]: 'handle the new value (and unknown ones) where the client switches over the enum',
  [DangerousChangeType.TYPE_ADDED_TO_UNION]: 'handle the new member (by __typename) where the client switches over the union',
  [DangerousChangeType.OPTIONAL_INPUT_FIELD_ADDED]: 'nothing to do; send it to use it',
  [DangerousChangeType.OPTIONAL_ARG_ADDED]: 'nothing to do; pass it to use it',
  [DangerousChangeType.IMPLEMENTED_INTERFACE_ADDED]: 'check fragments on the interface: they now match this type too',
  [DangerousChangeType.ARG_DEFAULT_VALUE_CHANGE]: 'pass the old default explicitly to keep the old behaviour',
};

/** The coordinate a graphql-js description is about (`Query.articles`, `Role`, `@deprecated`). */
function coordinateOf(description: string): string {
  const patterns: RegExp[] = [
    /^An? (?:required|optional) field (\w+) on input type (\w+)/,
    /^An? (?:required|optional) arg \w+ on (\w+\.\w+)/,
    /^A required arg \w+ on directive (\w+)/,
    / was (?:added to|removed from) (?:union|enum) type (\w+)/,
    / added to interfaces implemented by (\w+)/,
    /^(\w+) no longer implements/,
    /^(\w+\.\w+)/,
    /^(\w+)/,
  ];
  for (const pattern of patterns) {
    const match = pattern.exec(description);
    if (!match) continue;
    // "field X on input type T" names the field second.
    return match.length > 2 ? `${match[2]}.${match[1]}` : match[1]!;
  }
  return description;
}

function userTypes(schema: GraphQLSchema): Map<string, GraphQLNamedType> {
  return new Map(Object.entries(schema.getTypeMap()).filter(([name, type]) => !name.startsWith('__') && !isSpecifiedScalarType(type)));
}

/** "A required arg …" → "a required arg …"; a sentence that starts with a schema name keeps it as spelled. */
function lowerFirst(text: string): string {
  return /^(A|An)\s/.test(text) ? text.charAt(0).toLowerCase() + text.slice(1) : text;
}

/** Every change from `released` to `current`. */
export function findGraphqlChanges(released: GraphQLSchema, current: GraphQLSchema): GraphqlChange[] {
  const changes: GraphqlChange[] = [];
  const reported = new Set<string>();
  for (const found of findBreakingChanges(released, current)) {
    changes.push({
      severity: 'breaking',
      subject: coordinateOf(found.description),
      change: lowerFirst(found.description.replace(/\.$/, '')),
      action: BREAKING_ACTIONS[found.type] ?? 'adapt the operations before they run against the new schema',
      rule: found.type,
    });
    reported.add(found.description);
  }
  for (const found of findDangerousChanges(released, current)) {
    changes.push({
      severity: 'dangerous',
      subject: coordinateOf(found.description),
      change: lowerFirst(found.description.replace(/\.$/, '')),
      action: DANGEROUS_ACTIONS[found.type] ?? 'check that the client handles it',
      rule: found.type,
    });
    reported.add(found.description);
  }
  // A type change graphql-js did not call breaking or dangerous is a compatible one.
  const typeChangeReported = (prefix: string) => [...reported].some((description) => description.startsWith(prefix));
  const add = (severity: Severity, subject: string, change: string, action: string) => changes.push({ severity, subject, change, action });
  const describe = (subject: string, before: string | null | undefined, after: string | null | undefined) => {
    if ((before ?? '') === (after ?? '')) return;
    add('documentation', subject, `the description ${!before ? 'was added' : !after ? 'was removed' : 'changed'}`, 'nothing to do');
  };
  const deprecation = (subject: string, before: string | null | undefined, after: string | null | undefined) => {
    if (before === after) return;
    if (after == null) add('documentation', subject, 'is no longer deprecated', 'nothing to do');
    else if (before == null) add('additive', subject, `is deprecated: ${after}`, 'plan to move off it');
    else add('documentation', subject, `the deprecation reason changed: ${after}`, 'nothing to do');
  };
  const compareArgs = (coordinate: string, oldArgs: readonly GraphQLArgument[], newArgs: readonly GraphQLArgument[]) => {
    for (const newArg of newArgs) {
      const oldArg = oldArgs.find((arg) => arg.name === newArg.name);
      if (!oldArg) continue;
      const subject = `${coordinate}(${newArg.name}:)`;
      if (String(oldArg.type) !== String(newArg.type) && !typeChangeReported(`${coordinate} arg ${newArg.name} has changed type`)) {
        add('additive', subject, `the argument accepts ${String(newArg.type)} (was ${String(oldArg.type)})`, 'nothing to do');
      }
      describe(subject, oldArg.description, newArg.description);
      deprecation(subject, oldArg.deprecationReason, newArg.deprecationReason);
    }
  };

  if ((released.description ?? '') !== (current.description ?? '')) add('documentation', 'schema', 'the schema description changed', 'nothing to do');
  const oldTypes = userTypes(released);
  for (const [name, newType] of userTypes(current)) {
    const oldType = oldTypes.get(name);
    if (!oldType) {
      add('additive', name, `the type ${name} was added`, 'nothing to do; use it to use what it offers');
      continue;
    }
    describe(name, oldType.description, newType.description);
    if ((isObjectType(oldType) && isObjectType(newType)) || (isInterfaceType(oldType) && isInterfaceType(newType))) {
      const oldFields = oldType.getFields();
      for (const [fieldName, newField] of Object.entries(newType.getFields())) {
        const coordinate = `${name}.${fieldName}`;
        const oldField = oldFields[fieldName];
        if (!oldField) {
          add('additive', coordinate, `the field ${fieldName} was added`, 'nothing to do; select it to use it');
          continue;
        }
        if (String(oldField.type) !== String(newField.type) && !typeChangeReported(`${coordinate} changed type`)) {
          add('additive', coordinate, `the type changed from ${String(oldField.type)} to ${String(newField.type)} (compatible)`, 'nothing to do');
        }
        describe(coordinate, oldField.description, newField.description);
        deprecation(coordinate, oldField.deprecationReason, newField.deprecationReason);
        compareArgs(coordinate, oldField.args, newField.args);
      }
    } else if (isInputObjectType(oldType) && isInputObjectType(newType)) {
      const oldFields = oldType.getFields();
      for (const [fieldName, newField] of Object.entries(newType.getFields())) {
        const coordinate = `${name}.${fieldName}`;
        const oldField = oldFields[fieldName];
        if (!oldField) continue; // graphql-js reports added input fields (required: breaking, optional: dangerous)
        if (String(oldField.type) !== String(newField.type) && !typeChangeReported(`${coordinate} changed type`)) {
          add('additive', coordinate, `the input field accepts ${String(newField.type)} (was ${String(oldField.type)})`, 'nothing to do');
        }
        describe(coordinate, oldField.description, newField.description);
        deprecation(coordinate, oldField.deprecationReason, newField.deprecationReason);
      }
    } else if (isEnumType(oldType) && isEnumType(newType)) {
      for (const newValue of newType.getValues()) {
        const oldValue = oldType.getValue(newValue.name);
        if (!oldValue) continue; // graphql-js reports added enum values (dangerous)
        describe(`${name}.${newValue.name}`, oldValue.description, newValue.description);
        deprecation(`${name}.${newValue.name}`, oldValue.deprecationReason, newValue.deprecationReason);
      }
    }
  }

  const oldDirectives = new Map(released.getDirectives().map((directive) => [directive.name, directive]));
  for (const newDirective of current.getDirectives()) {
    if (isSpecifiedDirective(newDirective)) continue;
    const subject = `@${newDirective.name}`;
    const oldDirective = oldDirectives.get(newDirective.name);
    if (!oldDirective) {
      add('additive', subject, `the directive @${newDirective.name} was added`, 'nothing to do');
      continue;
    }
    describe(subject, oldDirective.description, newDirective.description);
    for (const newArg of newDirective.args) {
      if (!oldDirective.args.some((arg) => arg.name === newArg.name) && !typeChangeReported(`A required arg ${newArg.name} on directive`)) {
        add('additive', subject, `the optional argument ${newArg.name} was added`, 'nothing to do');
      }
    }
    compareArgs(subject, oldDirective.args, newDirective.args);
  }
  return changes;
}
