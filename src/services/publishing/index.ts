import type { Knex } from 'knex';
import type { TokenService } from '../../auth/token-service.js';
import { ArticleService } from './article-service.js';
import { TopicService } from './topic-service.js';
import { WriterService } from './writer-service.js';
import type { SignInThrottleOptions } from '../sign-in-throttle.js';

/** The one service layer of the Article Publishing API, shared by REST, GraphQL and the CLI. */
export interface PublishingServices {
  writers: WriterService;
  articles: ArticleService;
  topics: TopicService;
}

/** Wires the publishing services over one store. */
export function createPublishingServices(knex: Knex, tokens: TokenService, accessTokenTtlSeconds: number, signIn: SignInThrottleOptions): PublishingServices {
  return { writers: new WriterService(knex, tokens, accessTokenTtlSeconds, signIn), articles: new ArticleService(knex), topics: new TopicService(knex) };
}
