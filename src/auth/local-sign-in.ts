import { Passport } from 'passport';
import { Strategy as LocalStrategy } from 'passport-local';

/**
 * Checks a name and password and answers the signed-in result, or throws the service's error. `origin`
 * says where the request comes from (its client address, and what else the service's rules need).
 */
export type CredentialCheck<Result, Origin> = (name: string, password: string, origin: Origin) => Promise<Result>;

interface CredentialRequest<Origin> {
  body: unknown;
  origin: Origin;
}

/**
 * Sign-in through passport-local, without sessions: the strategy extracts `name` and `password`
 * from the JSON body and hands them to the service, which owns every rule (throttling, bootstrap).
 * Passport gets its own instance so no global state leaks between servers in one process.
 */
export function createLocalSignIn<Result, Origin = string>(check: CredentialCheck<Result, Origin>, options: { usernameField?: string } = {}) {
  const passport = new Passport();
  passport.use(
    'local',
    new LocalStrategy(
      { usernameField: options.usernameField ?? 'name', passwordField: 'password', passReqToCallback: true, session: false },
      (req, name, password, done) => {
        check(name, password, (req as unknown as CredentialRequest<Origin>).origin).then(
          (result) => done(null, result as Express.User),
          (error: unknown) => done(error),
        );
      },
    ),
  );
  return (body: unknown, origin: Origin): Promise<Result | undefined> =>
    new Promise((resolve, reject) => {
      const req: CredentialRequest<Origin> = { body, origin };
      const authenticate = passport.authenticate('local', { session: false }, (error: unknown, result: Result | false) => {
        if (error) reject(error);
        else resolve(result === false ? undefined : result);
      });
      authenticate(req, {}, reject);
    });
}
