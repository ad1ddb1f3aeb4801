/** har-validator 5 ships no types; the one function the tests use (resolves with the document, rejects when invalid). */
declare module 'har-validator' {
  const validator: { har(document: unknown): Promise<unknown> };
  export default validator;
}
