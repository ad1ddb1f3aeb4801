import {
  GraphQLError,
  getNamedType,
  isInterfaceType,
  isObjectType,
  Kind,
  type FragmentDefinitionNode,
  type GraphQLNamedType,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
  type ValueNode,
} from 'graphql';

/**
 * Rejects operations nested deeper than `maxDepth` fields (fragments followed), before anything
 * runs: a deep query costs the server far more than it costs the client to send.
 *
 * Each fragment's depth is worked out once per document (it does not depend on where it is spread),
 * so fragments that spread other fragments many times cost one walk each, not one per path.
 */
export function depthLimitRule(maxDepth: number): ValidationRule {
  return (context: ValidationContext) => {
    const fragments = new FragmentMemo(context, (fragment) => walk.depth(fragment.selectionSet));
    const walk = {
      depth(set: SelectionSetNode): number {
        let deepest = 0;
        for (const selection of set.selections) {
          if (selection.kind === Kind.FIELD) {
            deepest = Math.max(deepest, 1 + (selection.selectionSet ? walk.depth(selection.selectionSet) : 0));
          } else if (selection.kind === Kind.INLINE_FRAGMENT) {
            deepest = Math.max(deepest, walk.depth(selection.selectionSet));
          } else {
            deepest = Math.max(deepest, fragments.valueOf(selection.name.value));
          }
          // Deeper than allowed is all the answer needs: stop walking.
          if (deepest > maxDepth) return deepest;
        }
        return deepest;
      },
    };
    return {
      OperationDefinition(operation) {
        const depth = walk.depth(operation.selectionSet);
        if (depth > maxDepth) {
          context.reportError(
            new GraphQLError(`The query is at least ${depth} levels deep; at most ${maxDepth} are allowed.`, {
              nodes: [operation],
              extensions: { code: 'QUERY_TOO_DEEP' },
            }),
          );
        }
      },
    };
  };
}

export interface CostLimitOptions {
  maxCost: number;
  /** The page size assumed when `limit` comes from a variable (validation runs before variables are known). */
  assumedLimit: number;
  /**
   * The cost of fields that do real work, keyed `Type.field` (e.g. `Query.me`): a read of the
   * store costs far more than copying a property, and aliases repeat it. Other fields cost 1.
   */
  fieldCosts?: Readonly<Record<string, number>>;
}

/**
 * Rejects operations whose estimated cost exceeds `maxCost`: every field costs 1 (or its entry in
 * `fieldCosts`), and a field with a `limit` argument (a page) multiplies the cost of what it selects
 * by that limit (its default when left out). Aliases repeat fields, so they add up too.
 *
 * The walk stops as soon as the limit is passed, and each fragment is costed once per document, so
 * the check itself stays linear in the size of the query whatever the query multiplies out to.
 */
export function costLimitRule({ maxCost, assumedLimit, fieldCosts = {} }: CostLimitOptions): ValidationRule {
  return (context: ValidationContext) => {
    const schema = context.getSchema();
    const fragments = new FragmentMemo(context, (fragment) => walk.cost(fragment.selectionSet, schema.getType(fragment.typeCondition.name.value) ?? undefined));
    const walk = {
      cost(set: SelectionSetNode, parent: GraphQLNamedType | undefined): number {
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
            const own = (parent && fieldCosts[`${parent.name}.${selection.name.value}`]) ?? 1;
            const inner = selection.selectionSet ? walk.cost(selection.selectionSet, field ? getNamedType(field.type) : undefined) : 0;
            total += own + multiplier * inner;
          } else if (selection.kind === Kind.INLINE_FRAGMENT) {
            const type = selection.typeCondition ? schema.getType(selection.typeCondition.name.value) : parent;
            total += walk.cost(selection.selectionSet, type ?? undefined);
          } else {
            total += fragments.valueOf(selection.name.value);
          }
          // Over the limit is all the answer needs: stop walking (the total is then a lower bound).
          if (total > maxCost) return total;
        }
        return total;
      },
    };
    return {
      OperationDefinition(operation) {
        const root =
          operation.operation === 'mutation'
            ? schema.getMutationType()
            : operation.operation === 'subscription'
              ? schema.getSubscriptionType()
              : schema.getQueryType();
        const cost = walk.cost(operation.selectionSet, root ?? undefined);
        if (cost > maxCost) {
          context.reportError(
            new GraphQLError(`The query's estimated cost is at least ${cost}; at most ${maxCost} is allowed.`, {
              nodes: [operation],
              extensions: { code: 'QUERY_TOO_COSTLY' },
            }),
          );
        }
      },
    };
  };
}

/**
 * One value per named fragment of a document, computed on first use. A fragment that is being
 * computed when it is spread again (a cycle, which graphql's own NoFragmentCycles rule refuses)
 * and an unknown fragment count 0, so the walk always ends.
 */
class FragmentMemo {
  private readonly values = new Map<string, number>();
  private readonly inProgress = new Set<string>();

  constructor(
    private readonly context: ValidationContext,
    private readonly compute: (fragment: FragmentDefinitionNode) => number,
  ) {}

  valueOf(name: string): number {
    const known = this.values.get(name);
    if (known !== undefined) return known;
    const fragment = this.context.getFragment(name);
    if (!fragment || this.inProgress.has(name)) return 0;
    this.inProgress.add(name);
    const value = this.compute(fragment);
    this.inProgress.delete(name);
    this.values.set(name, value);
    return value;
  }
}

function limitOf(value: ValueNode, assumedLimit: number): number {
  if (value.kind === Kind.INT) return Math.max(0, Number(value.value));
  return assumedLimit;
}
