import { Passport } from 'passport';
import { Strategy as LocalStrategy } from 'passport-local';

/** Checks a name and password and answers the signed-in result, or throws the service's error. */
export type CredentialCheck<Result> = (name: string, password: string, address: string) => Promise<Result>;

interface CredentialRequest {
  body: unknown;
  address: string;
}

/**
 * Sign-in through passport-local, without sessions: the strategy extracts `name` and `password`
 * from the JSON body and hands them to the service, which owns every rule (throttling, bootstrap).
 * Passport gets its own instance so no global state leaks between servers in one process.
 */
export function createLocalSignIn<Result>(check: CredentialCheck<Result>, options: { usernameField?: string } = {}) {
  const passport = new Passport();
  passport.use(
    'local',
    new LocalStrategy(
      { usernameField: options.usernameField ?? 'name', passwordField: 'password', passReqToCallback: true, session: false },
      (req, name, password, done) => {
        check(name, password, (req as unknown as CredentialRequest).address).then(
          (result) => done(null, result as Express.User),
          (error: unknown) => done(error),
        );
      },
    ),
  );
  return (body: unknown, address: string): Promise<Result | undefined> =>
    new Promise((resolve, reject) => {
      const req: CredentialRequest = { body, address };
      const authenticate = passport.authenticate('local', { session: false }, (error: unknown, result: Result | false) => {
        if (error) reject(error);
        else resolve(result === false ? undefined : result);
      });
      authenticate(req, {}, reject);
    });
}
