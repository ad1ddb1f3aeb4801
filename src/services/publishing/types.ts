import type { components } from '../../../generated/openapi/publishing.js';

// The wire shapes the services answer: the REST contract's schemas, which GraphQL maps too.
export type Writer = components['schemas']['Writer'];
export type WriterInput = components['schemas']['WriterInput'];
export type WriterList = components['schemas']['WriterList'];
export type LoginResult = components['schemas']['LoginResult'];
export type Article = components['schemas']['Article'];
export type ArticleInput = components['schemas']['ArticleInput'];
export type ArticleList = components['schemas']['ArticleList'];
export type Topic = components['schemas']['Topic'];
export type TopicInput = components['schemas']['TopicInput'];
export type TopicList = components['schemas']['TopicList'];
