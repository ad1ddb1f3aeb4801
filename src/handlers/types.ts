/** The JSON request body type of a generated openapi-typescript operation. */
export type JsonRequestBody<Op> = Op extends { requestBody: { content: { 'application/json': infer Body } } }
  ? Body
  : Op extends { requestBody?: { content: { 'application/json': infer Body } } }
    ? Body | undefined
    : undefined;
