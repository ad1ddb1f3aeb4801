/**
 * The one folding of user names: `Admin `, `admin` and `ＡＤＭＩＮ` are one name for uniqueness and for
 * the sign-in throttle. NFKC, then JavaScript's trim (every Unicode White_Space), then lower case. The
 * database never folds by itself: it stores this function's result (`users.name_folded`) and compares it.
 */
export function foldUserName(name: string): string {
  return String(name).normalize('NFKC').trim().toLowerCase();
}
