import {
  GraphQLError,
  getNamedType,
  isInterfaceType,
  isObjectType,
  Kind,
  type GraphQLNamedType,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
  type ValueNode,
} from 'graphql';

/**
 * Rejects operations nested deeper than `maxDepth` fields (fragments followed), before anything
 * runs: a deep query costs the server far more than it costs the client to send.
 */
export function depthLimitRule(maxDepth: number): ValidationRule {
  return (context: ValidationContext) => ({
    OperationDefinition(operation) {
      const depth = selectionDepth(context, operation.selectionSet, new Set());
      if (depth > maxDepth) {
        context.reportError(new GraphQLError(`The query is ${depth} levels deep; at most ${maxDepth} are allowed.`, { nodes: [operation], extensions: { code: 'QUERY_TOO_DEEP' } }));
      }
    },
  });
}

function selectionDepth(context: ValidationContext, set: SelectionSetNode, fragments: Set<string>): number {
  let deepest = 0;
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) {
      deepest = Math.max(deepest, 1 + (selection.selectionSet ? selectionDepth(context, selection.selectionSet, fragments) : 0));
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      deepest = Math.max(deepest, selectionDepth(context, selection.selectionSet, fragments));
    } else {
      const fragment = context.getFragment(selection.name.value);
      if (!fragment || fragments.has(fragment.name.value)) continue;
      deepest = Math.max(deepest, selectionDepth(context, fragment.selectionSet, new Set([...fragments, fragment.name.value])));
    }
  }
  return deepest;
}

export interface CostLimitOptions {
  maxCost: number;
  /** The page size assumed when `limit` comes from a variable (validation runs before variables are known). */
  assumedLimit: number;
}

/**
 * Rejects operations whose estimated cost exceeds `maxCost`: every field costs 1, and a field with a
 * `limit` argument (a page) multiplies the cost of what it selects by that limit (its default when
 * left out). Aliases repeat fields, so they add up too.
 */
export function costLimitRule({ maxCost, assumedLimit }: CostLimitOptions): ValidationRule {
  return (context: ValidationContext) => ({
    OperationDefinition(operation) {
      const schema = context.getSchema();
      const root = operation.operation === 'mutation' ? schema.getMutationType() : operation.operation === 'subscription' ? schema.getSubscriptionType() : schema.getQueryType();
      const cost = selectionCost(context, operation.selectionSet, root ?? undefined, assumedLimit, new Set());
      if (cost > maxCost) {
        context.reportError(new GraphQLError(`The query's estimated cost is ${cost}; at most ${maxCost} is allowed.`, { nodes: [operation], extensions: { code: 'QUERY_TOO_COSTLY' } }));
      }
    },
  });
}

function selectionCost(context: ValidationContext, set: SelectionSetNode, parent: GraphQLNamedType | undefined, assumedLimit: number, fragments: Set<string>): number {
  let total = 0;
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) {
      const field = parent && (isObjectType(parent) || isInterfaceType(parent)) ? parent.getFields()[selection.name.value] : undefined;
      let multiplier = 1;
      const limitArg = field?.args.find((arg) => arg.name === 'limit');
      if (limitArg) {
        const given = selection.arguments?.find((arg) => arg.name.value === 'limit')?.value;
        multiplier = given ? limitOf(given, assumedLimit) : typeof limitArg.defaultValue === 'number' ? limitArg.defaultValue : assumedLimit;
      }
      const inner = selection.selectionSet ? selectionCost(context, selection.selectionSet, field ? getNamedType(field.type) : undefined, assumedLimit, fragments) : 0;
      total += 1 + multiplier * inner;
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      const type = selection.typeCondition ? context.getSchema().getType(selection.typeCondition.name.value) : parent;
      total += selectionCost(context, selection.selectionSet, type ?? undefined, assumedLimit, fragments);
    } else {
      const fragment = context.getFragment(selection.name.value);
      if (!fragment || fragments.has(fragment.name.value)) continue;
      const type = context.getSchema().getType(fragment.typeCondition.name.value);
      total += selectionCost(context, fragment.selectionSet, type ?? undefined, assumedLimit, new Set([...fragments, fragment.name.value]));
    }
  }
  return total;
}

function limitOf(value: ValueNode, assumedLimit: number): number {
  if (value.kind === Kind.INT) return Math.max(0, Number(value.value));
  return assumedLimit;
}
