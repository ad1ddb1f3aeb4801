import { STATUS_CODES } from 'node:http';
import { AppError, HTTP_STATUS, type AppErrorOptions, type ErrorCode } from '../../errors.js';

/**
 * A refusal by the contract engine itself (no such operation, input outside the contract, no usable
 * credentials), as opposed to a service's error: it carries the status's reason phrase, and each
 * API's renderer words it in its own way (the users API keeps the phrase, problem details a sentence).
 */
export class ContractRefusal extends AppError {
  override name = 'ContractRefusal';

  constructor(code: ErrorCode, options: AppErrorOptions = {}) {
    super(code, STATUS_CODES[HTTP_STATUS[code]] ?? 'Error', options);
  }
}
