export { FilterError, MAX_FILTER_DEPTH, MAX_FILTER_LENGTH, MAX_FILTER_RESTRICTIONS } from './parse-filter.js';
export {
  compileFilter,
  requiredConditions,
  type Filter,
  type FilterCondition,
  type FilterOptions,
  type FilterValueType,
  type Operator,
} from './resolve-filter.js';
