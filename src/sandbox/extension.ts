import { hasOption } from '@bufbuild/protobuf';
import { api_service_name } from '../../generated/proto/cloud/annotations_pb.js';
import { sendReply } from '../http/reply.js';
import type { ModuleContext, ServerModule } from '../server/module.js';
import { ResponseChecker, sandboxHandler } from './rest.js';
import { preferInterceptor } from './rpc.js';
import type { SeedSnapshot } from './snapshot.js';

/** The sandbox's own endpoint: `POST /_sandbox/reset` puts the seeded state back. */
export const RESET_PATH = '/_sandbox/reset';

export interface SandboxExtension {
  /** BuildOverrides.extend: Prefer and response checks on every REST operation, `prefer` on every cloud RPC, the reset endpoint. */
  extend(modules: ServerModule[], context: ModuleContext): void;
}

/**
 * What sandbox mode changes in the built server, and nothing else: every REST operation's handler
 * is wrapped (Prefer, then the contract check of the real answer); every cloud RPC service gets
 * the `prefer` interceptor innermost (after authentication, inside its error interceptor, so the
 * forced error carries its ServiceError detail); a module serves `/_sandbox/reset`. The normal
 * server never loads this file.
 */
export function sandboxExtension(snapshot: () => SeedSnapshot | undefined): SandboxExtension {
  return {
    extend(modules, { logger }) {
      const checker = new ResponseChecker();
      const onViolation = (violation: { operationId: string; status: number; problems: string[] }, requestId: string) =>
        logger.error(
          { requestId, operationId: violation.operationId, status: violation.status, problems: violation.problems },
          'sandbox: a response outside its contract',
        );
      for (const module of modules) {
        for (const rest of Object.values(module.restApis ?? {})) {
          rest.wrapHandlers((operation, handler, renderError) => sandboxHandler(operation, handler, renderError, { checker, onViolation }));
        }
        const services = module.rpc;
        if (services) {
          const prefer = preferInterceptor();
          module.rpc = (served) =>
            services(served).map((entry) =>
              hasOption(entry.service, api_service_name) ? { ...entry, interceptors: [...(entry.interceptors ?? []), prefer] } : entry,
            );
        }
      }
      modules.unshift({
        name: 'sandbox',
        routes: [
          {
            path: RESET_PATH,
            methods: ['POST'],
            async handle(_req, res) {
              const seed = snapshot();
              if (!seed) {
                sendReply(
                  res,
                  { status: 503, body: { statusCode: 503, message: 'the sandbox is still seeding', error: 'Service Unavailable' } },
                  undefined,
                  false,
                );
                return RESET_PATH;
              }
              const started = performance.now();
              const rows = await seed.restore();
              const ms = Math.round(performance.now() - started);
              logger.info({ rows, ms }, 'sandbox: seeded state restored');
              sendReply(res, { status: 200, body: { reset: true, rows, ms } }, undefined, false);
              return RESET_PATH;
            },
          },
        ],
      });
    },
  };
}
