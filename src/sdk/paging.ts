/**
 * Paging over List methods (`ListXRequest{parent_id, page_size, page_token}` →
 * `{items, next_page_token}`): a List call through the SDK is both a promise of its first page
 * (as without the SDK) and an async iterable over every item of every page, fetched as consumed.
 */
import type { DescMethod, DescMessage, MessageInitShape, MessageShape } from '@bufbuild/protobuf';

/** A List call: `await` it for one page, `for await` it for every item. */
export interface Pageable<Page, Item> extends PromiseLike<Page>, AsyncIterable<Item> {}

/** Whether a method pages: a `page_token` in the request, a `next_page_token` and one repeated message field in the response. */
export function pagedField(method: DescMethod): string | undefined {
  if (method.methodKind !== 'unary') return undefined;
  if (!method.input.fields.some((field) => field.localName === 'pageToken')) return undefined;
  if (!method.output.fields.some((field) => field.localName === 'nextPageToken')) return undefined;
  return method.output.fields.find((field) => field.fieldKind === 'list' && field.listKind === 'message')?.localName;
}

type Call<I extends DescMessage, O extends DescMessage> = (request: MessageInitShape<I>) => Promise<MessageShape<O>>;

/** Wraps one List call; nothing is sent until it is awaited or iterated. */
export function pageable<I extends DescMessage, O extends DescMessage, Item>(
  call: Call<I, O>,
  request: MessageInitShape<I>,
  itemsField: string,
): Pageable<MessageShape<O>, Item> {
  let first: Promise<MessageShape<O>> | undefined;
  return {
    then(onFulfilled, onRejected) {
      first ??= call(request);
      return first.then(onFulfilled, onRejected);
    },
    async *[Symbol.asyncIterator]() {
      let pageToken = (request as { pageToken?: string }).pageToken ?? '';
      do {
        const page = await call({ ...request, pageToken } as MessageInitShape<I>);
        yield* (page as Record<string, unknown>)[itemsField] as Item[];
        pageToken = (page as unknown as { nextPageToken: string }).nextPageToken;
      } while (pageToken !== '');
    },
  };
}
